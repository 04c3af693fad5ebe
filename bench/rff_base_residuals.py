#!/usr/bin/python3
"""How a random-feature base's residuals should be kept: an experiment.

A regressor over a base's residuals averages y_j - base(x_j) over the
neighbours of a query. Recomputing base(x_j) for every neighbour costs a
random-feature evaluation each (2.5 us at D = 64); caching the residuals
costs nothing at read time, but they are then taken under an older base.
On each set of data/ (bench/peers.py's splits), with the random-feature
ridge of peers.py (D frequencies, its hyperparameters chosen the same way)
learned online by exact RLS over the training rows in order, and k-NN
(k = K, Euclidean on standardized inputs) over the residuals, this prints
the held-out mean nMSE of:
  rff          the base alone;
  final        base_n(x) + k-NN of y_j - base_n(x_j) (recomputed: exact);
  prequential  base_n(x) + k-NN of y_j - base_{j-1}(x_j) (each residual
               cached when its sample arrived);
  frozen F     base_g(x) + k-NN of y_j - base_g(x_j), g = F n (a base
               frozen between rebuilds);
  mixed F      base_n(x) + k-NN of y_j - base_g(x_j) (the online base, its
               residuals cached under the base of F n samples).

usage: bench/rff_base_residuals.py [--frequencies D] [--k K]
"""

import argparse
import os
import sys

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def rls_states(phi, y, penalty, keep):
    """W after each sample count in `keep` and at the end, and each
    sample's prediction before it was learned."""
    p = np.diag(1.0 / penalty)
    w = np.zeros((phi.shape[1], y.shape[1]))
    states, before = {}, np.empty_like(y)
    for i, f in enumerate(phi):
        if i in keep:
            states[i] = w.copy()
        before[i] = f @ w
        pf = p @ f
        gain = pf / (1.0 + f @ pf)
        w += np.outer(gain, y[i] - before[i])
        p -= np.outer(gain, pf)
    states[len(phi)] = w
    return states, before


def knn_mean(x, values, queries, k):
    k = min(k, len(x))
    _, nearest = NearestNeighbors(n_neighbors=k).fit(x).kneighbors(queries)
    return values[nearest].mean(axis=1)


def run(name, csv_path, train_rows, test_rows, frequencies, k):
    header, train, test, inputs, targets = peers.split(
        name, csv_path, train_rows, test_rows)
    scaler = StandardScaler().fit(train[:, inputs])
    x, queries = scaler.transform(train[:, inputs]), scaler.transform(
        test[:, inputs])
    y, actual = train[:, targets], test[:, targets]
    n, d = x.shape
    normal = np.random.default_rng(peers.SHUFFLE_SEED).standard_normal(
        (d, frequencies))
    cut = int(0.8 * n)
    best = None
    for lengthscale in peers.RFF_LENGTHSCALES:
        omega = normal / (lengthscale * np.sqrt(d))
        for ridge in peers.RFF_RIDGES:
            w = peers.rff_fit(x[:cut], y[:cut], omega, ridge)
            error = peers.nmse(peers.rff_features(x[cut:], omega) @ w,
                               y[cut:]).mean()
            if best is None or error < best[0]:
                best = (error, omega, ridge)
    _, omega, ridge = best
    phi, phi_test = peers.rff_features(x, omega), peers.rff_features(
        queries, omega)
    penalty = np.full(phi.shape[1], ridge)
    penalty[0], penalty[1:1 + d] = 1e-6, 1.0
    at = {fraction: int(fraction * n) for fraction in (0.5, 0.875)}
    states, before = rls_states(phi, y, penalty, set(at.values()))
    final = states[n]
    row = {"rff": phi_test @ final,
           "final": phi_test @ final + knn_mean(x, y - phi @ final, queries, k),
           "prequential": phi_test @ final + knn_mean(x, y - before, queries,
                                                      k)}
    for fraction, g in at.items():
        cached = knn_mean(x, y - phi @ states[g], queries, k)
        row[f"frozen {fraction}"] = phi_test @ states[g] + cached
        row[f"mixed {fraction}"] = phi_test @ final + cached
    print(f"| {name} | " + " | ".join(
        f"{peers.nmse(v, actual).mean():.3f}" for v in row.values()) + " |",
        flush=True)
    return list(row)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frequencies", type=int, default=64)
    parser.add_argument("--k", type=int, default=16)
    args = parser.parse_args()
    print("| set | rff | final | prequential | frozen 0.5 | mixed 0.5 | "
          "frozen 0.875 | mixed 0.875 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, csv_path, train_rows, test_rows in peers.DATA_SETS:
        run(name, csv_path, train_rows, test_rows, args.frequencies, args.k)


if __name__ == "__main__":
    main()
