#!/usr/bin/python3
"""Held-out coverage and width of streamreg's prediction intervals.

On each set of data/ (bench/peers.py's splits: shuffled rows learned then
others predicted; SARCOS split in time), a model with the given flags
(none: the default) learns the training rows through the CLI and predicts
the test rows at each level (`streamreg predict --interval_level`). Per
level this prints, averaged over the set's targets, the fraction of test
rows within their interval and the mean width against the hindsight
width: twice the level's quantile of the test rows' absolute errors, the
narrowest interval of constant width around the same predictions that
covers the level (split conformal fitted with hindsight).

usage: bench/interval_check.py BUILD_DIR [--datasets a,b] [--levels
       0.8,0.9,0.95] [--flags "--metric gw ..."] [--json FILE]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def check_set(build, name, csv_path, train_rows, test_rows, levels, flags):
    header, train, test, _, targets = peers.split(name, csv_path, train_rows,
                                                  test_rows)
    work = tempfile.mkdtemp()
    try:
        train_csv, test_csv = peers.write_split(work, header, train, test)
        server = peers.Server(build, work)
        try:
            server.run("ingest", "--model", "m", "--csv", train_csv,
                       "--create", *flags)
            out = {}
            for level in levels:
                predicted = os.path.join(work, f"p{level}.csv")
                server.run("predict", "--model", "m", "--csv", test_csv,
                           "--out", predicted, f"--interval_level={level}")
                columns = peers.read_columns(predicted)
                coverage, width, hindsight = [], [], []
                for t in targets:
                    target = header[t].removeprefix("target_")
                    y = test[:, t]
                    lower = columns["lower_" + target]
                    upper = columns["upper_" + target]
                    errors = np.abs(columns["target_" + target] - y)
                    coverage.append(np.mean((lower <= y) & (y <= upper)))
                    width.append(np.mean(upper - lower))
                    hindsight.append(2 * np.quantile(errors, level))
                out[level] = {
                    "coverage": float(np.mean(coverage)),
                    "width_over_hindsight": float(
                        np.mean(np.array(width) / np.array(hindsight)))}
            return out
        finally:
            server.stop()
    finally:
        shutil.rmtree(work)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--datasets", default="all")
    parser.add_argument("--levels", default="0.8,0.9,0.95")
    parser.add_argument("--flags", default="",
                        help="the model's CLI flags, space-separated")
    parser.add_argument("--json")
    args = parser.parse_args()
    levels = [float(v) for v in args.levels.split(",")]
    wanted = ([d[0] for d in peers.DATA_SETS] if args.datasets == "all"
              else args.datasets.split(","))
    print("| data set | " + " | ".join(
        f"{level:.0%} coverage | width / hindsight" for level in levels) + " |")
    print("|---|" + "---|---|" * len(levels))
    report = {}
    for name, csv_path, train_rows, test_rows in peers.DATA_SETS:
        if name not in wanted:
            continue
        result = check_set(args.build, name, csv_path, train_rows, test_rows,
                           levels, args.flags.split())
        report[name] = result
        print(f"| {name} | " + " | ".join(
            f"{result[level]['coverage']:.3f} | "
            f"{result[level]['width_over_hindsight']:.2f}"
            for level in levels) + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
