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

Also SARCOS split in time (rows 1-2,400 learned in order, 2,450-4,449
predicted: a later part of the arm's motion, where neighbours in time are
near copies). Prints the held-out coverage at 80 / 90 / 95% per set, the
mean over targets (and shuffles), and the RMS of the band4 residuals over
the leave-one-out ones: near 1 where the rows are exchangeable, large
where the stream's neighbours in time stand in for its neighbours in
space (bench/notes/issue-75-intervals.md, "Small sets: the learning curve
in the residuals").

usage: jackknife_calibration.py [DATA_DIR] [--reps N]
"""

import argparse
import csv
import os

import numpy as np

LEVELS = (0.8, 0.9, 0.95)
KINDS = ("stream", "loo", "band8", "band4")
# Set, and the fraction learned (bench/interval_check.py's splits).
SETS = (("yacht", 200 / 308), ("boston", 306 / 506), ("energy", 500 / 768),
        ("airfoil", 1000 / 1503))


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    targets = [i for i, name in enumerate(rows[0]) if name.startswith("target_")]
    data = np.array([[float(v) for v in row] for row in rows[1:]])
    inputs = [i for i in range(data.shape[1]) if i not in targets]
    return data[:, inputs], data[:, targets]


def knn_predict(train_x, train_y, queries, k, excluded=None):
    """Each query's mean target over its k nearest, skipping for query q
    the training rows excluded[q]."""
    distances = ((queries[:, None, :] - train_x[None, :, :]) ** 2).sum(-1)
    if excluded is not None:
        for q, rows in enumerate(excluded):
            distances[q, rows] = np.inf
    nearest = np.argsort(distances, axis=1)[:, :k]
    return train_y[nearest].mean(1)


def conformal_half_width(residuals, level):
    n = len(residuals)
    rank = min(n, int(np.ceil((n + 1) * level)))
    return np.sort(residuals)[rank - 1]


def residuals(x, y, k):
    """The three sets of residuals of the learned part (x, y), by name."""
    n = len(y)
    stream = []
    for t in range(n):
        kept = t - t // 4
        if kept >= k:
            stream.append(abs(y[t] - knn_predict(x[:kept], y[:kept],
                                                 x[t:t + 1], k)[0]))
    loo = np.abs(y - knn_predict(x, y, x, k, [[i] for i in range(n)]))
    found = {"stream": np.array(stream), "loo": loo}
    for share in (8, 4):
        band = max(1, n // share)
        found[f"band{share}"] = np.abs(y - knn_predict(
            x, y, x, k, [range(max(0, i - band), min(n, i + band + 1))
                         for i in range(n)]))
    return found


def scored(x, y, learned, held_out, k, covered, ratios):
    """Adds each target's coverage by each set of residuals, and the
    band4 / leave-one-out RMS ratio."""
    for t in range(y.shape[1]):
        target = y[:, t]
        predicted = knn_predict(x[learned], target[learned], x[held_out], k)
        error = np.abs(target[held_out] - predicted)
        found = residuals(x[learned], target[learned], k)
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


def coverage(name, fraction, data_dir, reps, k=5):
    inputs, targets = load(os.path.join(data_dir, name, f"{name}.csv"))
    covered, ratios = {}, []
    for rep in range(reps):
        order = np.random.default_rng(rep).permutation(len(inputs))
        learned, held_out = np.split(order, [int(fraction * len(order))])
        scored(standardized(inputs, learned), targets, learned, held_out, k,
               covered, ratios)
    report(name, covered, ratios)


def sarcos_in_time(data_dir, k=5):
    inputs, targets = load(os.path.join(data_dir, "sarcos",
                                        "sarcos_test.csv"))
    learned, held_out = np.arange(2400), np.arange(2449, 4449)
    covered, ratios = {}, []
    scored(standardized(inputs, learned), targets, learned, held_out, k,
           covered, ratios)
    report("sarcos-time", covered, ratios)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", nargs="?", default="data")
    parser.add_argument("--reps", type=int, default=20)
    arguments = parser.parse_args()
    for name, fraction in SETS:
        coverage(name, fraction, arguments.data_dir, arguments.reps)
    sarcos_in_time(arguments.data_dir)


if __name__ == "__main__":
    main()
