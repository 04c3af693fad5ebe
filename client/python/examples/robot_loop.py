"""A 1 kHz loop: each tick learns (x, y) and gets the prediction for x made before it."""
import sys
import time

import numpy as np
import streamreg

address, csv = sys.argv[1], sys.argv[2]  # e.g. 127.0.0.1:50051 data/sarcos/sarcos_test.csv
inputs, targets, X, Y = streamreg.read_csv(csv)
with streamreg.Client(address) as client:
    client.create("arm-loop", inputs=inputs, targets=targets, replace=True)  # afresh each run
    with client.learn_stream("arm-loop") as stream:
        tick, errors = time.monotonic(), np.zeros_like(Y)
        for i, (x, y) in enumerate(zip(X, Y)):
            errors[i] = stream.learn(x, y).y - y  # the prediction, then learning
            tick += 0.001
            time.sleep(max(0.0, tick - time.monotonic()))
    late = slice(len(Y) // 2, None)  # judged on the second half: unseen when predicted
    nmse = (errors[late] ** 2).mean(axis=0) / Y[late].var(axis=0)
    print(f"{len(Y)} ticks, nMSE of the second half: {np.round(nmse, 3)}")
