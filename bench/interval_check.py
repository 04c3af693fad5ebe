#!/usr/bin/python3
"""Held-out coverage and width of streamreg's prediction intervals, beside
split conformal around the same point predictor and a Gaussian process.

On each set of data/ (bench/peers.py's splits: shuffled rows learned then
others predicted, with --splits N the mean over N shuffles, seeds 1..N, as
one split of a few hundred test rows is a few points from its coverage by
chance alone; SARCOS split in time, once), a model with the given flags
(none: the default) learns the training rows through the CLI and predicts
the test rows at each level (`streamreg predict --interval_level`). Per
level this prints, averaged over the set's targets, the fraction of test
rows within their interval and the mean width against the hindsight
width: twice the level's quantile of the test rows' absolute errors, the
narrowest interval of constant width around the same predictions that
covers the level (split conformal fitted with hindsight).

The peers (bench/peers.py):
  - split conformal: a model with the same flags learns the first 80% of
    the training rows and predicts the other 20% (the calibration rows)
    and the test rows; the interval is its prediction +- the calibration
    residuals' ceil((n + 1) level)-th smallest (guaranteed for exchangeable
    rows; a split in time is not);
  - scikit-learn's Gaussian process (sets of at most 1,000 training rows):
    constant x RBF + white noise, hyperparameters by maximum likelihood,
    the Gaussian central interval.
  - with --cross_conformal K, cross-conformal around the same predictor
    (Vovk 2015; CV+, Barber et al. 2021): K models with the same flags
    each learn the training rows but one of K folds (shuffled sets: every
    K-th row; SARCOS: K blocks in time, so that a fold's rows are
    predicted without their neighbours in time) and predict that fold; the
    test rows' interval at a level is the full model's prediction +- the
    folds' absolute errors' ceil((n + 1) level)-th smallest. The default
    model's intervals have one width per target too (without
    `interval_difficulty`); this is the calibration it would have if it
    recalibrated the queries' intervals on models of nearly its own size,
    leaving each sample out (bench/notes/issue-75-intervals.md, "Small
    sets").
Their widths are over the same hindsight width as streamreg's.

usage: bench/interval_check.py BUILD_DIR [--datasets a,b] [--levels
       0.8,0.9,0.95] [--flags "--metric gw ..."] [--no_gp] [--splits N]
       [--cross_conformal K] [--json FILE]
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


def coverage_and_width(test, targets, lower, upper, hindsight):
    """Means over targets: the fraction of test rows within [lower, upper]
    (arrays (n, targets)) and the mean width over the hindsight width."""
    y = test[:, targets]
    coverage = np.mean((lower <= y) & (y <= upper), axis=0)
    width = np.mean(upper - lower, axis=0)
    return {"coverage": float(np.mean(coverage)),
            "width_over_hindsight": float(np.mean(width / hindsight))}


def predict_at(server, model, csv_path, names, level, out_path):
    """The model's predictions of the CSV's rows at `level`: value, lower
    and upper, arrays (n, targets)."""
    server.run("predict", "--model", model, "--csv", csv_path, "--out",
               out_path, f"--interval_level={level}")
    columns = peers.read_columns(out_path)
    return [np.stack([columns[prefix + n] for n in names], 1)
            for prefix in ("predicted_", "lower_", "upper_")]


def cross_conformal(server, work, header, train, test, predicted, targets,
                    names, folds, in_time, flags, levels, hindsight):
    """Cross-conformal around the full model's predictions of the test rows
    (the module's docstring): per level, their coverage and width."""
    rows = np.arange(len(train))
    fold_of = (rows * folds // len(train)) if in_time else rows % folds
    errors = []
    for f in range(folds):
        fold_dir = os.path.join(work, f"fold{f}")
        os.makedirs(fold_dir)
        fit_csv, fold_csv = peers.write_split(fold_dir, header,
                                              train[fold_of != f],
                                              train[fold_of == f])
        model = f"fold{f}"
        server.run("ingest", "--model", model, "--csv", fit_csv, "--create",
                   *flags)
        value, _, _ = predict_at(server, model, fold_csv, names, 0.9,
                                 os.path.join(fold_dir, "p.csv"))
        errors.append(np.abs(train[fold_of == f][:, targets] - value))
    errors = np.concatenate(errors)
    out = {}
    for level in levels:
        half = np.array([peers.conformal_multiplier(errors[:, t], level)
                         for t in range(len(targets))])
        out[level] = coverage_and_width(test, targets, predicted - half,
                                        predicted + half, hindsight[level])
    return out


def check_set(build, name, csv_path, train_rows, test_rows, levels, flags,
              with_gp, seed=peers.SHUFFLE_SEED, folds=0):
    header, train, test, inputs, targets = peers.split(
        name, csv_path, train_rows, test_rows, seed)
    names = [header[t].removeprefix("target_") for t in targets]
    work = tempfile.mkdtemp()
    try:
        train_csv, test_csv = peers.write_split(work, header, train, test)
        cut = int(peers.SPLIT_CONFORMAL_FIT * len(train))
        fit_dir = os.path.join(work, "split")
        os.makedirs(fit_dir)
        fit_csv, calibration_csv = peers.write_split(fit_dir, header,
                                                     train[:cut], train[cut:])
        server = peers.Server(build, work)
        try:
            server.run("ingest", "--model", "m", "--csv", train_csv,
                       "--create", *flags)
            server.run("ingest", "--model", "split", "--csv", fit_csv,
                       "--create", *flags)
            out = {level: {} for level in levels}
            for level in levels:
                value, lower, upper = predict_at(
                    server, "m", test_csv, names, level,
                    os.path.join(work, f"p{level}.csv"))
                errors = np.abs(value - test[:, targets])
                hindsight = 2 * np.quantile(errors, level, axis=0)
                out[level]["streamreg"] = coverage_and_width(
                    test, targets, lower, upper, hindsight)
                out[level]["hindsight"] = hindsight
            # Split conformal around a model of the same flags.
            split_predictions = {}
            for rows, path in (("calibration", calibration_csv),
                               ("test", test_csv)):
                predicted = os.path.join(work, f"split_{rows}.csv")
                server.run("predict", "--model", "split", "--csv", path,
                           "--out", predicted)
                split_predictions[rows] = peers.read_predictions(
                    predicted, header, targets)
            residuals = np.abs(split_predictions["calibration"]
                               - train[cut:, targets])
            for level in levels:
                half = np.array([peers.conformal_multiplier(residuals[:, t],
                                                            level)
                                 for t in range(len(targets))])
                out[level]["split_conformal"] = coverage_and_width(
                    test, targets, split_predictions["test"] - half,
                    split_predictions["test"] + half,
                    out[level]["hindsight"])
            if folds > 1:
                crossed = cross_conformal(
                    server, work, header, train, test, value, targets,
                    names, folds, train_rows is None, flags, levels,
                    {level: out[level]["hindsight"] for level in levels})
                for level in levels:
                    out[level]["cross_conformal"] = crossed[level]
        finally:
            server.stop()
        if with_gp and len(train) <= peers.GP_MAX_TRAIN_ROWS:
            _, intervals = peers.gaussian_process_intervals(
                train[:, inputs], train[:, targets], test[:, inputs], levels)
            for level in levels:
                lower, upper = intervals[level]
                out[level]["gaussian_process"] = coverage_and_width(
                    test, targets, lower, upper, out[level]["hindsight"])
        for level in levels:
            out[level]["hindsight"] = out[level]["hindsight"].tolist()
        return out
    finally:
        shutil.rmtree(work)


METHODS = [("streamreg", "streamreg"), ("split_conformal", "split conformal"),
           ("gaussian_process", "Gaussian process"),
           ("cross_conformal", "cross-conformal")]


def mean_over_splits(results, levels):
    """Per level and method, the mean coverage and width over the splits'
    results (check_set's); the hindsight widths per split."""
    out = {level: {"hindsight": [r[level]["hindsight"] for r in results]}
           for level in levels}
    for level in levels:
        for key, _ in METHODS:
            figures = [r[level][key] for r in results if key in r[level]]
            if figures:
                out[level][key] = {
                    f: float(np.mean([x[f] for x in figures]))
                    for f in ("coverage", "width_over_hindsight")}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--datasets", default="all")
    parser.add_argument("--levels", default="0.8,0.9,0.95")
    parser.add_argument("--flags", default="",
                        help="the model's CLI flags, space-separated")
    parser.add_argument("--no_gp", action="store_true",
                        help="without the Gaussian process")
    parser.add_argument("--splits", type=int, default=1,
                        help="the mean over this many shuffles (seeds 1..N)")
    parser.add_argument("--cross_conformal", type=int, default=0,
                        metavar="K", help="also cross-conformal with K folds")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.splits < 1:
        parser.error("--splits: at least 1")
    if args.cross_conformal == 1 or args.cross_conformal < 0:
        parser.error("--cross_conformal: at least 2 folds (0: none)")
    levels = [float(v) for v in args.levels.split(",")]
    wanted = ([d[0] for d in peers.DATA_SETS] if args.datasets == "all"
              else args.datasets.split(","))
    print("| data set | level | " + " | ".join(
        f"{label} coverage | width / hindsight" for _, label in METHODS)
        + " |")
    print("|---|---|" + "---|---|" * len(METHODS))
    report = {}
    for name, csv_path, train_rows, test_rows in peers.DATA_SETS:
        if name not in wanted:
            continue
        seeds = range(1, 2 if train_rows is None else args.splits + 1)
        result = mean_over_splits(
            [check_set(args.build, name, csv_path, train_rows, test_rows,
                       levels, args.flags.split(), not args.no_gp, seed,
                       args.cross_conformal)
             for seed in seeds], levels)
        report[name] = result
        for level in levels:
            cells = []
            for key, _ in METHODS:
                figures = result[level].get(key)
                cells.append("— | —" if figures is None else
                             f"{figures['coverage']:.3f} | "
                             f"{figures['width_over_hindsight']:.2f}")
            print(f"| {name} | {level:.0%} | " + " | ".join(cells) + " |",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
