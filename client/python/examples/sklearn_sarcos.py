"""StreamRegressor beside scikit-learn's regressors on the SARCOS arm, then
the robot loop with partial_fit. Notebook-sized: each block is a cell.

    python sklearn_sarcos.py 127.0.0.1:50051 data/sarcos/sarcos_test.csv [ROWS]

(ROWS: the first ROWS rows only, at least 2000; all by default.)

Needs scikit-learn (Debian: python3-sklearn) and pandas (python3-pandas).
"""
import sys
import time

import numpy as np
import pandas as pd
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import Ridge
from sklearn.model_selection import TimeSeriesSplit, cross_val_score
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import streamreg
from streamreg.sklearn import StreamRegressor

address, csv = sys.argv[1], sys.argv[2]
rows = int(sys.argv[3]) if len(sys.argv) > 3 else None

# The arm's 21 joint positions, velocities and accelerations (q1..qdd7) and
# its 7 torques (tau1..tau7), in the order they were recorded.
inputs, targets, X, Y = streamreg.read_csv(csv)
X = pd.DataFrame(X[:rows], columns=inputs)
Y = pd.DataFrame(Y[:rows], columns=targets)

# One table: R^2 over the 7 torques on 5 later segments, each model trained
# on everything recorded before its segment (a stream is judged in time).
candidates = {
    "streamreg (default: MLKR, linear base + k-NN)": StreamRegressor(address),
    "streamreg (EGOP metric)": StreamRegressor(address, metric="egop"),
    "ridge": make_pipeline(StandardScaler(), Ridge(alpha=1.0)),
    "k-NN (k=5, scaled)": make_pipeline(StandardScaler(),
                                        KNeighborsRegressor(5)),
    "random-feature ridge": make_pipeline(
        StandardScaler(), RBFSampler(gamma=0.02, n_components=1000,
                                     random_state=0), Ridge(alpha=1e-3)),
}
rows = []
for name, model in candidates.items():
    start = time.perf_counter()
    scores = cross_val_score(model, X, Y, cv=TimeSeriesSplit(5),
                             error_score="raise")
    rows.append({"model": name, "mean R^2": scores.mean(),
                 "worst segment": scores.min(),
                 "seconds": time.perf_counter() - start})
print(pd.DataFrame(rows).sort_values("mean R^2", ascending=False)
      .to_string(index=False, float_format="%.3f"))

# The robot loop: at every tick predict the torques for the state the arm
# is in, then learn what it measured (partial_fit: returns once the sample
# is durable, so the next predict sees it). Scored on the second half.
with StreamRegressor(address) as model:
    x, y = X.to_numpy(), Y.to_numpy()
    model.partial_fit(x[:1], y[:1])
    predicted, ticks = np.zeros_like(y), []
    for i in range(1, 2000):
        start = time.perf_counter()
        predicted[i] = model.predict(x[i:i + 1])
        model.partial_fit(x[i:i + 1], y[i:i + 1])
        ticks.append(time.perf_counter() - start)
    late = slice(1000, 2000)
    nmse = ((predicted[late] - y[late]) ** 2).mean(0) / y[late].var(0)
    print(f"robot loop: nMSE per torque on ticks 1000-1999 "
          f"{np.round(nmse, 3)}; a tick (predict + partial_fit) took "
          f"{np.median(ticks) * 1e3:.2f} ms (median)")
