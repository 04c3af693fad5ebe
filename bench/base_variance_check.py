#!/usr/bin/python3
"""Does the random-feature base's variance say where a prediction errs?

SARCOS split in time, as bench/RESULTS.md's SARCOS figures (rows 1-2,400
streamed into a model through the CLI, rows 2,450-4,449 predicted): for
each model configuration given (CLI flags; each must include
--random_feature_base), and each torque, this prints the Spearman rank
correlation of the predictions' squared error with their base variance
(Prediction.base_variance) and with their neighbour spread, and how many
times the mean squared error of the tenth of predictions with the largest
base variance is that of the tenth with the smallest.

usage: bench/base_variance_check.py BUILD_DIR "FLAGS" ["FLAGS" ...]
"""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SARCOS = os.path.join(REPOSITORY, "data", "sarcos", "sarcos_test.csv")


def ranks(values):
    out = np.empty(len(values))
    out[np.argsort(values, kind="stable")] = np.arange(len(values))
    return out


def spearman(a, b):
    return np.corrcoef(ranks(a), ranks(b))[0, 1]


def check(server, work, model, flags, header, test, targets):
    server.run("ingest", "--model", model, "--csv",
               os.path.join(work, "train.csv"), "--create", *flags.split())
    out = os.path.join(work, model + ".csv")
    server.run("predict", "--model", model, "--csv",
               os.path.join(work, "test.csv"), "--out", out)
    columns = peers.read_columns(out)
    print(flags)
    for j, t in enumerate(targets):
        name = header[t].removeprefix("target_")
        squared = (columns["predicted_" + name] - test[:, t]) ** 2
        variance = columns["base_variance_" + name]
        order = np.argsort(variance, kind="stable")
        tenth = len(order) // 10
        ratio = squared[order[-tenth:]].mean() / squared[order[:tenth]].mean()
        print(f"  {name}: spearman(e^2, base variance) "
              f"{spearman(squared, variance):.3f}, spearman(e^2, spread) "
              f"{spearman(squared, columns['spread_' + name]):.3f}, "
              f"MSE of the largest variance tenth / smallest {ratio:.2f}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    build = sys.argv[1]
    header, values, _, targets = peers.read_table(SARCOS)
    train, test = values[:2400], values[2449:4449]
    with tempfile.TemporaryDirectory() as work:
        peers.write_split(work, header, train, test)
        server = peers.Server(build, work)
        try:
            for i, flags in enumerate(sys.argv[2:]):
                check(server, work, f"m{i}", flags, header, test, targets)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
