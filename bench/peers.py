#!/usr/bin/python3
"""What a user would otherwise pick, beside streamreg, on held-out data.

For each data set in data/, one split: SARCOS (data/sarcos/sarcos_test.csv,
4,449 rows in time order) is split in time — rows 1-2,400 are learned, once
and in order; rows 2,450-4,449 are predicted without learning. Every other
set is split as bench/reproduce_papers.sh sizes it (train / test rows), after
one shuffle with a fixed seed; the training rows are learned in the shuffled
order. For each method, nMSE per target = the mean squared error over the
test rows / the variance of the test targets, and the mean over targets.

The peers (scikit-learn and NumPy, from Debian):
  - ridge regression, linear, lambda = 1e-3, on standardized inputs;
  - k-NN, k = 20, Euclidean on standardized inputs;
  - local linear regression: per query, the 200 nearest training rows
    (Euclidean, standardized; all of them if fewer), y ~ a + b (x - query)
    by least squares with a ridge of 1 on b; the prediction is a;
  - random-feature ridge (the batch solution of I-SSGPR, Gijsberts & Metta
    2013, which its online updates reach exactly): 500 random Fourier
    features (cos and sin of 250 frequencies) of a Gaussian kernel on the
    standardized inputs, plus the inputs themselves and an intercept, by
    ridge regression; the lengthscale and the ridge chosen on the training
    rows alone (fitted on their first 80%, scored on the last 20%, then
    refitted on all of them).
streamreg's rows: a server (started here, on loopback, with a fresh data
directory) learns the training rows through `streamreg ingest` into one
model per configuration — every fixed metric x regressor pair,
`--regressor auto` in each metric and `--metric auto` with k-NN and with
`--regressor auto`, without a base, with a linear base, with the base
chosen per target and with a random-feature base, and each of these with
the linear or random-feature base's candidates combined, plus
the default and, on SARCOS, per-torque EGOP — and predicts the test rows with
`streamreg predict`. Each streamreg row also gives the model's own figures at
the end of the training stream (means over targets): prequential and
honest (leave-recent-out).

usage: bench/peers.py BUILD_DIR [--datasets all|NAME,NAME] [--json OUT]
                      [--default_only]
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
DATA = os.path.join(SOURCE, "data")
SHUFFLE_SEED = 1

# name, CSV under data/, training rows, test rows (None: SARCOS's time split).
DATA_SETS = [
    ("sarcos", "sarcos/sarcos_test.csv", None, None),
    ("boston", "boston/boston.csv", 306, 200),
    ("wine_red", "wine_red/wine_red.csv", 1000, 599),
    ("delta_ailerons", "delta_ailerons/delta_ailerons.csv", 3000, 2000),
    ("ailerons", "ailerons/ailerons.csv", 2000, 2000),
    ("kin8nm", "kin8nm/kin8nm.csv", 2000, 2000),
    ("cpu_act", "cpu_act/cpu_act.csv", 2000, 2000),
    ("puma8nh", "puma8nh/puma8nh.csv", 2000, 2000),
    ("pumadyn32nm", "pumadyn32nm/pumadyn32nm.csv", 2000, 2000),
    ("bank8fm", "bank8fm/bank8fm.csv", 2000, 2000),
    ("bank32nh", "bank32nh/bank32nh.csv", 2000, 2000),
    ("airfoil", "airfoil/airfoil.csv", 1000, 503),
    ("ccpp", "ccpp/ccpp.csv", 2000, 2000),
    ("energy", "energy/energy.csv", 500, 268),
    ("yacht", "yacht/yacht.csv", 200, 108),
    ("pendulum", "pendulum/pendulum.csv", 400, 230),
]
SARCOS_TRAIN_ROWS = 2400  # rows 1-2,400
SARCOS_TEST_FIRST, SARCOS_TEST_END = 2449, 4449  # rows 2,450-4,449

DEFAULT_LABEL = "streamreg default (MLKR, linear base + k-NN)"
METRICS = [("Euclidean", "euclidean"), ("GW", "gw"), ("EGOP", "egop"),
           ("MLKR", "mlkr")]
REGRESSORS = [("k-NN", "knn"), ("kernel", "kernel"),
              ("local linear", "local_linear"), ("auto", "auto")]
AUTO_METRIC_REGRESSORS = [("k-NN", "knn"), ("auto", "auto")]
BASES = [("", ["--nolinear_base"], "none"),
         ("linear base + ", ["--linear_base"], "base"),
         ("base per target + ", ["--linear_base", "--per_target_base"],
          "per_target"),
         ("random-feature base + ", ["--linear_base", "--random_feature_base"],
          "random_features"),
         ("combined, base per target + ",
          ["--linear_base", "--per_target_base", "--combine"], "combined"),
         ("combined, random-feature base per target + ",
          ["--linear_base", "--random_feature_base", "--per_target_base",
           "--combine"], "combined_random_features")]
# Whether the per-target metric choice (--metric auto) is among the models.
WITH_AUTO_METRIC = [True]
# More flags of every model but the default (--flags).
EXTRA_FLAGS = []


def streamreg_models(name, default_only=False):
    """(label, ingest flags) of every streamreg configuration for a set: the
    default, then every fixed metric x regressor pair (one metric shared by
    the targets) and the metric chosen per target (k-NN and auto), without
    and with a base, and with the base chosen per target, then on SARCOS
    the EGOP per torque."""
    models = [(DEFAULT_LABEL, [])]
    if default_only:
        return models
    for base_label, base_flags, _ in BASES:
        for metric_label, metric in METRICS:
            for regressor_label, regressor in REGRESSORS:
                models.append(
                    (f"streamreg, {metric_label}, {base_label}{regressor_label}",
                     ["--metric", metric, "--regressor", regressor,
                      *base_flags]))
        # The metric chosen per target too (--metric auto; combined, each
        # metric's candidates).
        for regressor_label, regressor in (AUTO_METRIC_REGRESSORS
                                           if WITH_AUTO_METRIC[0] else []):
            models.append(
                (f"streamreg, metric auto, {base_label}{regressor_label}",
                 ["--metric", "auto", "--regressor", regressor, *base_flags]))
    if name == "sarcos" and WITH_AUTO_METRIC[0]:
        for regressor_label, regressor in REGRESSORS:
            if regressor in ("knn", "local_linear"):
                models.append((f"streamreg, EGOP per torque, {regressor_label}",
                               ["--metric", "egop", "--regressor", regressor,
                                "--per_target", "--nolinear_base"]))
    return models[:1] + [(label, flags + EXTRA_FLAGS)
                         for label, flags in models[1:]]


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
    k = min(k, len(x_train))
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


RFF_FREQUENCIES = 250
RFF_LENGTHSCALES = (0.25, 0.5, 1.0, 2.0)  # times sqrt(d)
RFF_RIDGES = (1e-3, 1e-2, 1e-1, 1.0)


def rff_features(x, frequencies):
    """[1, x, cos(x W), sin(x W)] / sqrt(D) on the random part."""
    angles = x @ frequencies
    scale = 1.0 / np.sqrt(frequencies.shape[1])
    return np.hstack([np.ones((len(x), 1)), x, scale * np.cos(angles),
                      scale * np.sin(angles)])


def rff_fit(x, y, frequencies, ridge):
    phi = rff_features(x, frequencies)
    penalty = np.full(phi.shape[1], ridge)
    penalty[0] = 1e-6  # the intercept, hardly shrunk
    penalty[1:1 + x.shape[1]] = 1.0  # the linear part
    return np.linalg.solve(phi.T @ phi + np.diag(penalty), phi.T @ y)


def random_feature_ridge(x_train, y_train, x_test):
    """The peer: hyperparameters from the training rows only (their last
    20% held out, in the order given: for SARCOS, later in time)."""
    d = x_train.shape[1]
    normal = np.random.default_rng(SHUFFLE_SEED).standard_normal(
        (d, RFF_FREQUENCIES))
    cut = int(0.8 * len(x_train))
    best = None
    for lengthscale in RFF_LENGTHSCALES:
        frequencies = normal / (lengthscale * np.sqrt(d))
        for ridge in RFF_RIDGES:
            weights = rff_fit(x_train[:cut], y_train[:cut], frequencies, ridge)
            error = nmse(rff_features(x_train[cut:], frequencies) @ weights,
                         y_train[cut:]).mean()
            if best is None or error < best[0]:
                best = (error, frequencies, ridge)
    _, frequencies, ridge = best
    weights = rff_fit(x_train, y_train, frequencies, ridge)
    return rff_features(x_test, frequencies) @ weights


# Interval peers (bench/interval_check.py reports them beside streamreg's).
SPLIT_CONFORMAL_FIT = 0.8  # of the training rows fit the model; the rest
                           # calibrate
# A Gaussian process is O(n^3) per step of its hyperparameter fit: on
# SARCOS's 2,400 rows it took over 10 minutes for its 7 targets, so only
# sets this small.
GP_MAX_TRAIN_ROWS = 1000


def conformal_multiplier(residuals, level):
    """Split conformal's half width (Vovk et al. 2005; Lei et al. 2018):
    the ceil((n + 1) level)-th smallest of n calibration residuals |y -
    y_hat|, infinite when that rank exceeds n."""
    rank = int(np.ceil((len(residuals) + 1) * level))
    return np.inf if rank > len(residuals) else np.sort(residuals)[rank - 1]


def gaussian_process_intervals(x_train, y_train, x_test, levels):
    """scikit-learn's Gaussian process per target on standardized inputs:
    a constant times an RBF kernel (one lengthscale) plus white noise, the
    hyperparameters by maximum marginal likelihood, targets normalized; the
    central interval at each level from the predictive mean and standard
    deviation (which includes the fitted noise). Returns the means (n,
    targets) and {level: (lower, upper)}."""
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, \
        WhiteKernel
    scaler = StandardScaler().fit(x_train)
    train, test = scaler.transform(x_train), scaler.transform(x_test)
    means, deviations = [], []
    for t in range(y_train.shape[1]):
        kernel = (ConstantKernel(1.0) * RBF(np.sqrt(train.shape[1]))
                  + WhiteKernel(0.1))
        gp = GaussianProcessRegressor(kernel=kernel, normalize_y=True,
                                      random_state=SHUFFLE_SEED)
        gp.fit(train, y_train[:, t])
        mean, deviation = gp.predict(test, return_std=True)
        means.append(mean)
        deviations.append(deviation)
    mean, deviation = np.stack(means, 1), np.stack(deviations, 1)
    intervals = {}
    for level in levels:
        z = norm.ppf((1 + level) / 2)
        intervals[level] = (mean - z * deviation, mean + z * deviation)
    return mean, intervals


def peers(x_train, y_train, x_test):
    scaler = StandardScaler().fit(x_train)
    train, test = scaler.transform(x_train), scaler.transform(x_test)
    return [
        ("ridge regression (linear, lambda = 1e-3)",
         Ridge(alpha=1e-3).fit(train, y_train).predict(test), None),
        ("k-NN, Euclidean on standardized inputs (k = 20)",
         KNeighborsRegressor(n_neighbors=20).fit(train, y_train).predict(test),
         None),
        ("local linear regression, 200 nearest (Euclidean), ridge 1",
         local_linear(train, y_train, test), None),
        ("random-feature ridge (500 features + linear, chosen on the "
         "training rows)", random_feature_ridge(train, y_train, test), None),
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
        return subprocess.run([self.cli, "--server", self.address, *args],
                              check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout

    def stop(self):
        self.process.terminate()
        self.process.wait()


def streamreg_rows(build, name, header, train, test, targets, default_only):
    work = tempfile.mkdtemp()
    try:
        train_csv, test_csv = write_split(work, header, train, test)
        server = Server(build, work)
        results = []
        try:
            for number, (label, flags) in enumerate(
                    streamreg_models(name, default_only)):
                model = f"m{number}"
                server.run("ingest", "--model", model, "--csv", train_csv,
                           "--create", *flags)
                stats = json.loads(server.run("info", "--model", model,
                                              "--json"))["stats"]
                out = os.path.join(work, f"{model}.csv")
                server.run("predict", "--model", model, "--csv", test_csv,
                           "--out", out)
                results.append((label, read_predictions(out, header, targets),
                                self_reported(stats)))
        finally:
            server.stop()
        return results
    finally:
        shutil.rmtree(work)


def self_reported(stats):
    """The model's own mean nMSE over targets at the end of the training
    stream: prequential, and honest (leave-recent-out)."""
    return {kind: float(np.mean([float(v) for v in stats[f"{kind}_nmse"]]))
            for kind in ("prequential", "honest")}


def write_split(work, header, train, test):
    """The training and test rows as train.csv and test.csv in `work`, each
    with the set's header; their paths."""
    paths = (os.path.join(work, "train.csv"), os.path.join(work, "test.csv"))
    for path, rows in zip(paths, (train, test)):
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows.tolist())
    return paths


def read_columns(path):
    """A CSV of numbers (`streamreg predict --out`) as {column name: values}."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        names = next(reader)
        rows = np.array([[float(v) for v in row] for row in reader])
    return {name: rows[:, c] for c, name in enumerate(names)}


def read_predictions(path, header, targets):
    """The predicted targets of `streamreg predict --out` (predicted_<name>
    for the CSV's target_<name> columns), (n, targets) in the order of
    `targets`."""
    columns = read_columns(path)
    names = ["predicted_" + header[t].removeprefix("target_") for t in targets]
    missing = [name for name in names if name not in columns]
    if missing:
        sys.exit(f"{path}: no column {missing[0]}")
    return np.stack([columns[name] for name in names], axis=1)


def split(name, csv_path, train_rows, test_rows, seed=SHUFFLE_SEED):
    """The set's header, training and test rows, inputs and targets (rows
    shuffled with `seed`, but SARCOS's split in time)."""
    header, values, inputs, targets = read_table(os.path.join(DATA, csv_path))
    if train_rows is None:  # SARCOS, in time
        return (header, values[:SARCOS_TRAIN_ROWS],
                values[SARCOS_TEST_FIRST:SARCOS_TEST_END], inputs, targets)
    order = np.random.default_rng(seed).permutation(len(values))
    rows = values[order]
    return (header, rows[:train_rows], rows[train_rows:train_rows + test_rows],
            inputs, targets)


def split_text(name, train, test):
    if name == "sarcos":
        return (f"learned rows 1-{SARCOS_TRAIN_ROWS} in order, predicted rows "
                f"{SARCOS_TEST_FIRST + 1}-{SARCOS_TEST_END}")
    return (f"{len(train)} rows learned, {len(test)} predicted (shuffled, "
            f"seed {SHUFFLE_SEED})")


def report_set(build, name, csv_path, train_rows, test_rows, default_only):
    header, train, test, inputs, targets = split(name, csv_path, train_rows,
                                                 test_rows)
    methods = streamreg_rows(build, name, header, train, test, targets,
                             default_only)
    methods += peers(train[:, inputs], train[:, targets], test[:, inputs])
    names = [header[t][len("target_"):] for t in targets]
    print(f"\n## {name}: {split_text(name, train, test)}; nMSE per target")
    print(f"| method | mean nMSE | {' | '.join(names)} | own: prequential / "
          "honest |")
    print("|---|---|" + "---|" * len(names) + "---|")
    rows = []
    for label, predicted, own in methods:
        per_target = nmse(predicted, test[:, targets])
        own_text = (f"{own['prequential']:.3f} / {own['honest']:.3f}"
                    if own else "")
        print(f"| {label} | {per_target.mean():.3f} | "
              + " | ".join(f"{v:.3f}" for v in per_target) + f" | {own_text} |")
        row = {"method": label, "mean_nmse": float(per_target.mean()),
               "nmse": dict(zip(names, per_target.tolist()))}
        if own:
            row["own"] = own
        rows.append(row)
    return rows


def summary(report):
    """Per set: the default against the best fixed metric x regressor pair
    and against the best peer."""
    print("\n## The default against the best fixed pair and the peers")
    print("| data set | default | best fixed pair | default / best | best peer "
          "| default / best peer |")
    print("|---|---|---|---|---|---|")
    for name, rows in report.items():
        default = next(r for r in rows if r["method"] == DEFAULT_LABEL)
        pairs = [r for r in rows if r["method"].startswith("streamreg, ")
                 and "per torque" not in r["method"]
                 and "metric auto" not in r["method"]
                 and not r["method"].endswith("auto")]
        best = min(pairs or [default], key=lambda r: r["mean_nmse"])
        peer = min((r for r in rows if not r["method"].startswith("streamreg")),
                   key=lambda r: r["mean_nmse"])
        print(f"| {name} | {default['mean_nmse']:.3f} | "
              f"{best['method'][len('streamreg, '):]} {best['mean_nmse']:.3f} | "
              f"{default['mean_nmse'] / best['mean_nmse']:.2f} | "
              f"{peer['method'].split(',')[0].split(' (')[0]} "
              f"{peer['mean_nmse']:.3f} | "
              f"{default['mean_nmse'] / peer['mean_nmse']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build", help="build directory (streamreg, server)")
    parser.add_argument("--datasets", default="all",
                        help="all, or a comma-separated list of names")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--metrics",
                        default=",".join([m for _, m in METRICS] + ["auto"]),
                        help="the metrics of streamreg's models, "
                        "comma-separated; auto: the metric chosen per target "
                        "and SARCOS's EGOP per torque (default: all)")
    parser.add_argument("--bases", default=",".join(b[2] for b in BASES),
                        help="the bases of the fixed metrics' models: none, "
                        "base (linear), per_target (the linear base or "
                        "none, chosen per target), random_features (the "
                        "random-feature base) and combined (each target's "
                        "candidates, with the base and without, and the base "
                        "alone, combined) (default: all)")
    parser.add_argument("--random_feature_flags", default="",
                        help="more flags of the random-feature base's models, "
                        "space-separated (e.g. "
                        "--random_feature_frequencies=250)")
    parser.add_argument("--flags", default="",
                        help="more flags of every streamreg model but the "
                        "default, space-separated (e.g. --tuning "
                        "local_linear_leading=0)")
    parser.add_argument("--base_flags", default="",
                        help="more flags of the linear base's models "
                        "(base, per_target and combined), space-separated "
                        "(e.g. --base_ridge=100)")
    parser.add_argument("--regressors",
                        default=",".join(r for _, r in REGRESSORS),
                        help="the regressors of the fixed metrics' models "
                        "(default: all)")
    parser.add_argument("--default_only", action="store_true",
                        help="of streamreg's models only the default (the "
                        "per-set accuracy tests)")
    args = parser.parse_args()
    chosen = args.metrics.split(",")
    known = {m for _, m in METRICS} | {"auto"}
    if set(chosen) - known:
        sys.exit(f"--metrics: unknown {sorted(set(chosen) - known)}")
    METRICS[:] = [m for m in METRICS if m[1] in chosen]
    WITH_AUTO_METRIC[0] = "auto" in chosen
    regressors = args.regressors.split(",")
    if set(regressors) - {r for _, r in REGRESSORS}:
        sys.exit(f"--regressors: unknown "
                 f"{sorted(set(regressors) - {r for _, r in REGRESSORS})}")
    REGRESSORS[:] = [r for r in REGRESSORS if r[1] in regressors]
    bases = args.bases.split(",")
    if set(bases) - {b[2] for b in BASES}:
        sys.exit(f"--bases: unknown {sorted(set(bases) - {b[2] for b in BASES})}")
    BASES[:] = [b for b in BASES if b[2] in bases]
    more_flags = {"random_features": args.random_feature_flags.split(),
                  "combined_random_features":
                      args.random_feature_flags.split(),
                  "base": args.base_flags.split(),
                  "per_target": args.base_flags.split(),
                  "combined": args.base_flags.split()}
    BASES[:] = [(label, flags + more_flags.get(key, []), key)
                for label, flags, key in BASES]
    EXTRA_FLAGS[:] = args.flags.split()
    wanted = ([d[0] for d in DATA_SETS] if args.datasets == "all"
              else args.datasets.split(","))
    unknown = set(wanted) - {d[0] for d in DATA_SETS}
    if unknown:
        sys.exit(f"--datasets: unknown {sorted(unknown)}")
    report = {}
    for name, csv_path, train_rows, test_rows in DATA_SETS:
        if name in wanted:
            report[name] = report_set(args.build, name, csv_path, train_rows,
                                      test_rows, args.default_only)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if not args.default_only:
        summary(report)


if __name__ == "__main__":
    main()
