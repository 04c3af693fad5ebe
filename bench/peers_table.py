#!/usr/bin/python3
"""bench/RESULTS.md's accuracy table, made from bench/peers.py's JSON.

One row per data set: the held-out mean nMSE (over targets) of streamreg's
default and of each peer bench/peers.py runs beside it, and the default's
ratio to the best peer (below 1: the default is the better). Rows of
streamreg's other configurations in the JSON (a run without
--default_only) are left out: the page reports the default against what a
user would otherwise pick; bench/peers.py's own output has every row.

usage: bench/peers_table.py PEERS_JSON
  e.g. bench/peers.py build/ci --default_only --json peers.json &&
       bench/peers_table.py peers.json
"""

import argparse
import json
import math

DEFAULT_PREFIX = "streamreg default"
# The peers' rows, in bench/peers.py's order, by the start of their names.
PEERS = [
    ("ridge regression", "ridge"),
    ("k-NN, Euclidean", "k-NN"),
    ("local linear regression", "local linear"),
    ("random-feature ridge", "random-feature ridge"),
]


def row_of(methods, prefix):
    """The mean nMSE of the method whose name starts with `prefix`."""
    for method in methods:
        if method["method"].startswith(prefix):
            return method["mean_nmse"]
    raise KeyError(f"no method named {prefix!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="bench/peers.py --json output")
    args = parser.parse_args()
    with open(args.json) as f:
        report = json.load(f)
    header = ["set", "streamreg default"] + [name for _, name in PEERS]
    print("| " + " | ".join(header) + " | default / best peer |")
    print("|" + "---|" * (len(header) + 1))
    ratios = []
    for name, methods in report.items():
        default = row_of(methods, DEFAULT_PREFIX)
        peers = [row_of(methods, prefix) for prefix, _ in PEERS]
        ratio = default / min(peers)
        ratios.append(ratio)
        cells = [f"{value:.3f}" for value in [default] + peers]
        best = min(range(len(peers)), key=peers.__getitem__)
        cells[best + 1] = f"**{cells[best + 1]}**"
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    geometric = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    better = sum(1 for r in ratios if r < 1.0)
    print()
    print(f"The default against the best peer of each set: geometric mean "
          f"{geometric:.2f}; better on {better} of {len(ratios)} sets.")


if __name__ == "__main__":
    main()
