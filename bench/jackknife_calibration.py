#!/usr/bin/python3
"""Which residuals calibrate a small set's intervals: an offline experiment
with plain k-NN (standardized inputs, k = 5), outside the server.

Each set is shuffled (20 times), its first part learned as a stream and
the rest predicted by the k-NN of the whole first part, with a split
conformal interval (the residuals' ceil((n + 1) q)-th smallest) from one
of three sets of residuals of the learned part:

- stream: each sample predicted from the samples before it, without the
  quarter seen just before it (what the server scores: Tuning.interval_lag
  with interval_lag_divisor 4, here with the whole stream as the window);
- loo: each sample predicted by the final model without itself (the
  jackknife+ of Barber, Candès, Ramdas & Tibshirani 2021);
- band8, band4: likewise without the eighth (the quarter) of the stream
  on either side of it.

With --base, every prediction is a ridge fit (alpha 1 on the
standardized inputs, the intercept not shrunk) of the rows it may use
plus the mean of its k nearest's residuals from it, as the server's
linear base under k-NN. --sets all runs every shuffled set of
bench/peers.py at its sizes. Also SARCOS split in time (rows 1-2,400
learned in order, 2,450-4,449
predicted: a later part of the arm's motion, where neighbours in time are
near copies). Prints the held-out coverage at 80 / 90 / 95% per set, the
mean over targets (and shuffles), and the RMS of the band4 residuals over
the leave-one-out ones: near 1 where the rows are exchangeable, large
where the stream's neighbours in time stand in for its neighbours in
space (bench/notes/issue-75-intervals.md, "Small sets: the learning curve
in the residuals").

usage: jackknife_calibration.py [DATA_DIR] [--reps N] [--base]
                                [--sets a,b|all]
"""

import argparse
import csv
import os

import numpy as np

LEVELS = (0.8, 0.9, 0.95)
KINDS = ("stream", "loo", "band8", "band4")
# Set, rows learned and rows predicted (bench/peers.py's splits).
SETS = (("boston", 306, 200), ("wine_red", 1000, 599),
        ("delta_ailerons", 3000, 2000), ("ailerons", 2000, 2000),
        ("kin8nm", 2000, 2000), ("cpu_act", 2000, 2000),
        ("puma8nh", 2000, 2000), ("pumadyn32nm", 2000, 2000),
        ("bank8fm", 2000, 2000), ("bank32nh", 2000, 2000),
        ("airfoil", 1000, 503), ("ccpp", 2000, 2000), ("energy", 500, 268),
        ("yacht", 200, 108), ("pendulum", 400, 230))


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    targets = [i for i, name in enumerate(rows[0])
               if name.startswith("target_")]
    data = np.array([[float(v) for v in row] for row in rows[1:]])
    inputs = [i for i in range(data.shape[1]) if i not in targets]
    return data[:, inputs], data[:, targets]


def predict_leaving_out(x, y, queries, ranges, k, base):
    """Each query's prediction from the rows of (x, y) but those in its
    range [lo, hi) of `ranges`: the mean target of its k nearest, or with
    `base` a ridge fit of those rows (alpha 1 on the standardized inputs,
    as the server's linear base) plus the mean of its k nearest's
    residuals from that fit."""
    distances = ((queries[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    for q, (lo, hi) in enumerate(ranges):
        distances[q, lo:hi] = np.inf
    nearest = np.argsort(distances, axis=1)[:, :k]
    if not base:
        return y[nearest].mean(1)
    rows = np.hstack([np.ones((len(x), 1)), x])
    prefix = np.concatenate([np.zeros((1, rows.shape[1], rows.shape[1])),
                             np.cumsum(rows[:, :, None] * rows[:, None, :],
                                       axis=0)])
    prefix_b = np.concatenate([np.zeros((1, rows.shape[1])),
                               np.cumsum(rows * y[:, None], axis=0)])
    lo, hi = np.array(ranges).T
    gram = prefix[-1] - (prefix[hi] - prefix[lo])
    moment = prefix_b[-1] - (prefix_b[hi] - prefix_b[lo])
    ridge = np.eye(rows.shape[1])
    ridge[0, 0] = 0.0  # the intercept is not shrunk
    weights = np.linalg.solve(gram + ridge, moment[:, :, None])[:, :, 0]
    query_rows = np.hstack([np.ones((len(queries), 1)), queries])
    at_query = (query_rows * weights).sum(1)
    at_neighbours = (rows[nearest] * weights[:, None, :]).sum(-1)
    return at_query + (y[nearest] - at_neighbours).mean(1)


def conformal_half_width(residuals, level):
    n = len(residuals)
    rank = min(n, int(np.ceil((n + 1) * level)))
    return np.sort(residuals)[rank - 1]


def residuals(x, y, k, base):
    """The sets of residuals of the learned part (x, y), by name."""
    n = len(y)
    first = 4 * k  # the stream's first samples have too few before them
    streamed = [(t - t // 4, n) for t in range(first, n)]
    found = {"stream": np.abs(y[first:] - predict_leaving_out(
        x, y, x[first:], streamed, k, base))}
    found["loo"] = np.abs(y - predict_leaving_out(
        x, y, x, [(i, i + 1) for i in range(n)], k, base))
    for share in (8, 4):
        band = max(1, n // share)
        found[f"band{share}"] = np.abs(y - predict_leaving_out(
            x, y, x, [(max(0, i - band), min(n, i + band + 1))
                      for i in range(n)], k, base))
    return found


def scored(x, y, learned, held_out, k, base, covered, ratios):
    """Adds each target's coverage by each set of residuals, and the
    band4 / leave-one-out RMS ratio."""
    for t in range(y.shape[1]):
        target = y[:, t]
        predicted = predict_leaving_out(x[learned], target[learned],
                                        x[held_out], [(0, 0)] * len(held_out),
                                        k, base)
        error = np.abs(target[held_out] - predicted)
        found = residuals(x[learned], target[learned], k, base)
        ratios.append(np.sqrt(np.mean(found["band4"] ** 2) /
                              np.mean(found["loo"] ** 2)))
        for kind, r in found.items():
            for level in LEVELS:
                within = np.mean(error <= conformal_half_width(r, level))
                covered.setdefault((kind, level), []).append(within)


def report(name, covered, ratios):
    for kind in KINDS:
        print(f"{name:11s} {kind:7s} " + " / ".join(
            f"{np.mean(covered[(kind, level)]):.3f}" for level in LEVELS))
    print(f"{name:11s} band4 / loo RMS {np.mean(ratios):.2f}")


def standardized(inputs, learned):
    return (inputs - inputs[learned].mean(0)) / (inputs[learned].std(0) +
                                                 1e-12)


def coverage(name, train_rows, test_rows, data_dir, reps, base, k=5):
    inputs, targets = load(os.path.join(data_dir, name, f"{name}.csv"))
    covered, ratios = {}, []
    for rep in range(reps):
        order = np.random.default_rng(rep).permutation(len(inputs))
        learned = order[:train_rows]
        held_out = order[train_rows:train_rows + test_rows]
        scored(standardized(inputs, learned), targets, learned, held_out, k,
               base, covered, ratios)
    report(name, covered, ratios)


def sarcos_in_time(data_dir, base, k=5):
    inputs, targets = load(os.path.join(data_dir, "sarcos",
                                        "sarcos_test.csv"))
    learned, held_out = np.arange(2400), np.arange(2449, 4449)
    covered, ratios = {}, []
    scored(standardized(inputs, learned), targets, learned, held_out, k,
           base, covered, ratios)
    report("sarcos-time", covered, ratios)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", nargs="?", default="data")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--base", action="store_true",
                        help="k-NN over the residuals of a ridge fit")
    parser.add_argument("--sets", default="yacht,boston,energy,airfoil",
                        help="comma-separated (all: every one), of " +
                        ", ".join(name for name, _, _ in SETS))
    arguments = parser.parse_args()
    sizes = {name: (train, test) for name, train, test in SETS}
    wanted = (list(sizes) if arguments.sets == "all"
              else arguments.sets.split(","))
    for name in wanted:
        coverage(name, *sizes[name], arguments.data_dir, arguments.reps,
                 arguments.base)
    sarcos_in_time(arguments.data_dir, arguments.base)


if __name__ == "__main__":
    main()
