#!/usr/bin/env python3
"""The latency of StreamRegressor.partial_fit, one SARCOS sample per call,
beside the raw learn_stream call it wraps, on one server in one run.

    bench/partial_fit_latency.py BUILD_DIR [--samples N] [--rounds R]

Starts BUILD_DIR/server/streamreg-server (its defaults: --sync=always) on a
scratch directory and, R times in turn (each caller first in some round),
streams N samples of data/sarcos/sarcos_test.csv at full speed through
three callers, each with a client of its own and a fresh model of the
server's default spec:
- `learn_stream`: Client.learn_stream(...).learn(x, y), the robot loop's
  call, answered before the sample is durable;
- `learn_stream durable`: the same with answer_when_durable=True, answered
  once it is (what partial_fit waits for: a predict after partial_fit sees
  the sample, as after fit);
- `partial_fit`: StreamRegressor.partial_fit(x (1, d), y (1, m)).
Prints the median and 99th percentile of each caller's per-call latency
over all rounds, and partial_fit's median over each raw call's.
Uses the Python package built into BUILD_DIR/python.
"""

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def latencies(call, X, Y):
    measured = np.empty(len(X))
    for i in range(len(X)):
        start = time.perf_counter()
        call(X[i:i + 1], Y[i:i + 1])
        measured[i] = time.perf_counter() - start
    return measured


def raw_stream(address, X, Y, durable):
    """A client of its own, as the estimator has."""
    import streamreg  # the build's package, on sys.path
    name = f"raw-{'durable' if durable else 'fast'}-{time.monotonic_ns()}"
    with streamreg.Client(address) as client:
        client.create(name, inputs=X.shape[1], targets=Y.shape[1])
        with client.learn_stream(name, answer_when_durable=durable) as stream:
            measured = latencies(lambda x, y: stream.learn(x[0], y[0]), X, Y)
        client.delete(name)
    return measured


def partial_fit(address, X, Y):
    from streamreg.sklearn import StreamRegressor
    with StreamRegressor(address) as model:
        return latencies(model.partial_fit, X, Y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    sys.path.insert(0, os.path.join(REPO, "tests/support"))
    import streamreg
    from running_server import RunningServer

    _, _, X, Y = streamreg.read_csv(
        os.path.join(REPO, "data/sarcos/sarcos_test.csv"))
    X, Y = X[:args.samples], Y[:args.samples]
    server = RunningServer(os.path.join(args.build,
                                        "server/streamreg-server"),
                           metrics="")
    measured = {"learn_stream": [], "learn_stream durable": [],
                "partial_fit": []}
    try:
        address = server.address
        callers = {
            "learn_stream": lambda: raw_stream(address, X, Y, False),
            "learn_stream durable": lambda: raw_stream(address, X, Y, True),
            "partial_fit": lambda: partial_fit(address, X, Y)}
        order = list(callers)
        for round_number in range(args.rounds):
            # In turn, each first in some round: the same machine state.
            shift = round_number % len(order)
            for caller in order[shift:] + order[:shift]:
                measured[caller].append(callers[caller]())
    finally:
        server.stop()

    print(f"{args.rounds} rounds of {args.samples} SARCOS samples, one per "
          f"call, --sync=always")
    print("| caller | median µs | p99 µs |")
    print("|---|---|---|")
    medians = {}
    for caller, rounds in measured.items():
        values = np.concatenate(rounds) * 1e6
        medians[caller] = np.median(values)
        print(f"| {caller} | {medians[caller]:.0f} | "
              f"{np.percentile(values, 99):.0f} |")
    for raw in ("learn_stream", "learn_stream durable"):
        print(f"partial_fit / {raw}: "
              f"{medians['partial_fit'] / medians[raw]:.2f}x")


if __name__ == "__main__":
    main()
