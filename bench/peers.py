#!/usr/bin/python3
"""What a user would otherwise pick, beside streamreg, on one split in time.

SARCOS (data/sarcos/sarcos_test.csv, 4,449 rows in time order): rows
1-2,400 are learned, once and in order; rows 2,450-4,449 are predicted
without learning. For each method, nMSE per torque = the mean squared error
over the test rows / the variance of the test targets, and the mean of the
seven.

The peers (scikit-learn and NumPy, from Debian):
  - ridge regression, linear, lambda = 1e-3, on standardized inputs;
  - k-NN, k = 20, Euclidean on standardized inputs;
  - local linear regression: per query, the 200 nearest training rows
    (Euclidean, standardized), y ~ a + b (x - query) by least squares with
    a ridge of 1 on b; the prediction is a.
streamreg's rows: a server (started here, on loopback, with a fresh data
directory) learns the training rows through `streamreg ingest` into one
model per configuration and predicts the test rows with `streamreg predict`.

usage: bench/peers.py BUILD_DIR [--json OUT]
"""

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsRegressor, NearestNeighbors
from sklearn.preprocessing import StandardScaler

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SARCOS = os.path.join(SOURCE, "data", "sarcos", "sarcos_test.csv")
TRAIN_ROWS = 2400  # rows 1-2,400
TEST_FIRST, TEST_END = 2449, 4449  # rows 2,450-4,449

# streamreg configurations: (label, ingest flags).
STREAMREG_MODELS = [
    ("streamreg default (GW shared, k-NN)", []),
    ("streamreg, GW shared, kernel", ["--regressor", "kernel"]),
    ("streamreg, shared EGOP, k-NN", ["--metric", "egop", "--regressor", "knn"]),
    ("streamreg, EGOP per torque, k-NN",
     ["--metric", "egop", "--regressor", "knn", "--per_target"]),
    ("streamreg, Euclidean, local linear",
     ["--metric", "euclidean", "--regressor", "local_linear"]),
    ("streamreg, GW shared, local linear", ["--regressor", "local_linear"]),
    ("streamreg, EGOP per torque, local linear",
     ["--metric", "egop", "--regressor", "local_linear", "--per_target"]),
]


def read_table(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, values = rows[0], np.array(rows[1:], dtype=float)
    targets = [i for i, name in enumerate(header) if name.startswith("target_")]
    inputs = [i for i, name in enumerate(header)
              if not name.startswith(("target_", "id_"))]
    return header, values, inputs, targets


def nmse(predicted, actual):
    """Per column: mean squared error / variance of the actual values."""
    return ((predicted - actual) ** 2).mean(axis=0) / actual.var(axis=0)


def local_linear(x_train, y_train, x_test, k=200, ridge=1.0):
    neighbours = NearestNeighbors(n_neighbors=k).fit(x_train)
    _, nearest = neighbours.kneighbors(x_test)
    d = x_train.shape[1]
    penalty = ridge * np.eye(d + 1)
    penalty[0, 0] = 0.0  # the intercept is not shrunk
    out = np.empty((len(x_test), y_train.shape[1]))
    for q, rows in enumerate(nearest):
        design = np.hstack([np.ones((k, 1)), x_train[rows] - x_test[q]])
        coefficients = np.linalg.solve(design.T @ design + penalty,
                                       design.T @ y_train[rows])
        out[q] = coefficients[0]
    return out


def peers(x_train, y_train, x_test):
    scaler = StandardScaler().fit(x_train)
    train, test = scaler.transform(x_train), scaler.transform(x_test)
    return [
        ("ridge regression (linear, lambda = 1e-3)",
         Ridge(alpha=1e-3).fit(train, y_train).predict(test)),
        ("k-NN, Euclidean on standardized inputs (k = 20)",
         KNeighborsRegressor(n_neighbors=20).fit(train, y_train).predict(test)),
        ("local linear regression, 200 nearest (Euclidean), ridge 1",
         local_linear(train, y_train, test)),
    ]


class Server:
    """A streamreg server on loopback with a fresh data directory."""

    def __init__(self, build, work):
        self.cli = os.path.join(build, "client", "streamreg")
        out = open(os.path.join(work, "server.out"), "w")
        self.process = subprocess.Popen(
            [os.path.join(build, "server", "streamreg-server"),
             "--listen", "127.0.0.1:0", "--metrics_listen=",
             "--sync", "interval:5", "--data_dir", os.path.join(work, "data")],
            stdout=out, stderr=subprocess.DEVNULL)
        for _ in range(100):
            with open(out.name) as f:
                found = re.search(r"listening on (\S+)", f.read())
            if found:
                self.address = found.group(1)
                return
            time.sleep(0.1)
        self.process.kill()
        sys.exit("the server did not start")

    def run(self, *args):
        subprocess.run([self.cli, "--server", self.address, *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        self.process.terminate()
        self.process.wait()


def streamreg_rows(build, header, train, test, targets):
    work = tempfile.mkdtemp()
    try:
        train_csv = os.path.join(work, "train.csv")
        test_csv = os.path.join(work, "test.csv")
        for path, rows in ((train_csv, train), (test_csv, test)):
            with open(path, "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(header)
                writer.writerows(rows.tolist())
        server = Server(build, work)
        results = []
        try:
            for number, (label, flags) in enumerate(STREAMREG_MODELS):
                model = f"m{number}"
                server.run("ingest", "--model", model, "--csv", train_csv,
                           "--create", *flags)
                out = os.path.join(work, f"{model}.csv")
                server.run("predict", "--model", model, "--csv", test_csv,
                           "--out", out)
                results.append((label, read_predictions(out, header, targets)))
        finally:
            server.stop()
        return results
    finally:
        shutil.rmtree(work)


def read_predictions(path, header, targets):
    """The predicted targets of `streamreg predict --out` (columns named as
    the CSV's target_* columns), in the order of `targets`."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    names = rows[0]
    missing = [header[t] for t in targets if header[t] not in names]
    if missing:
        sys.exit(f"{path}: no column {missing[0]}")
    values = np.array(rows[1:], dtype=float)
    return values[:, [names.index(header[t]) for t in targets]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build", help="build directory (streamreg, server)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()

    header, values, inputs, targets = read_table(SARCOS)
    train, test = values[:TRAIN_ROWS], values[TEST_FIRST:TEST_END]
    methods = streamreg_rows(args.build, header, train, test, targets)
    methods += peers(train[:, inputs], train[:, targets], test[:, inputs])

    names = [header[t][len("target_"):] for t in targets]
    print(f"SARCOS, learned rows 1-{TRAIN_ROWS} in order, predicted rows "
          f"{TEST_FIRST + 1}-{TEST_END}; nMSE per torque")
    print(f"| method | mean nMSE | {' | '.join(names)} |")
    print("|---|---|" + "---|" * len(names))
    report = []
    for label, predicted in methods:
        per_target = nmse(predicted, test[:, targets])
        print(f"| {label} | {per_target.mean():.3f} | "
              + " | ".join(f"{v:.3f}" for v in per_target) + " |")
        report.append({"method": label, "mean_nmse": per_target.mean(),
                       "nmse": dict(zip(names, per_target.tolist()))})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
