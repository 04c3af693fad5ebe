#!/usr/bin/python3
"""The Learn answers' intervals on a real arm's rows streamed in order.

SARCOS's rows (data/sarcos, the GPML test split: one arm's trajectory) go
one at a time through a Learn stream into a fresh model, as a controller
would send them; each answer is the model's prediction made before it
learned its row. Per target this prints the fraction of rows within the
answer's interval at the model's level, the answers' nMSE as this client
counts it, and what the server reports of the same answers (GetModel's
answer_interval_coverage and answer_nmse): a figure the model reports of
itself must match what the client measured.

usage: bench/stream_coverage.py BUILD_DIR [--rows 2400] [--flags "--metric
       gw ..."] [--server BINARY] [--server-flags "--take_over=..."]
       [--json FILE]
  --server: another build's streamreg-server, measured with this build's
  client (a before and after); --server-flags: the server's own flags
"""

import argparse
import json
import os
import shlex
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def create_flags(flags):
    """The few create flags this bench passes on, as Client.create's."""
    options = {}
    words = shlex.split(flags)
    for name, value in zip(words[::2], words[1::2]):
        options[name.lstrip("-").replace("-", "_")] = value
    return options


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--rows", type=int, default=2400)
    parser.add_argument("--flags", default="",
                        help='create options, e.g. "--metric gw"')
    parser.add_argument("--server")
    parser.add_argument("--server-flags", default="")
    parser.add_argument("--json")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    sys.path.insert(0, os.path.join(REPO, "tests/support"))
    import streamreg
    from running_server import RunningServer

    _, _, X, Y = streamreg.read_csv(
        os.path.join(REPO, "data/sarcos/sarcos_test.csv"))
    X, Y = X[:args.rows], Y[:args.rows]
    server = RunningServer(
        args.server or os.path.join(args.build, "server/streamreg-server"),
        metrics="", arguments=shlex.split(args.server_flags))
    try:
        with streamreg.Client(server.address) as client:
            client.create("sarcos", inputs=X.shape[1], targets=Y.shape[1],
                          **create_flags(args.flags))
            answers, lo, hi, lags = [], [], [], []
            with client.learn_stream("sarcos") as stream:
                for x, y in zip(X, Y):
                    answer = stream.learn(x, y)
                    answers.append(answer.y)
                    lo.append(answer.lo)
                    hi.append(answer.hi)
                    lags.append(answer.unlearned)
            info = client.info("sarcos")
    finally:
        server.stop()
    answers, lo, hi = np.array(answers), np.array(lo), np.array(hi)
    within = (lo <= Y) & (Y <= hi)
    coverage = within.mean(axis=0)
    nmse = np.mean((answers - Y) ** 2, axis=0) / np.var(Y, axis=0)
    stats = info.proto.stats
    level = info.proto.spec.interval_level
    targets = Y.shape[1]
    # A server from before answers were scored reports none.
    reported_coverage = (list(stats.answer_interval_coverage)
                         if stats.answers_sent else [np.nan] * targets)
    reported_nmse = (list(stats.answer_nmse) if stats.answers_sent
                     else [np.nan] * targets)
    print(f"SARCOS rows 1-{args.rows} streamed in order, "
          f"flags '{args.flags}', server flags '{args.server_flags}', "
          f"intervals at {level:.0%}")
    print("| target | coverage received | reported | answers' nMSE received "
          "| reported |")
    print("|---|---|---|---|---|")
    for t in range(targets):
        print(f"| tau{t + 1} | {coverage[t]:.3f} | "
              f"{reported_coverage[t]:.3f} | {nmse[t]:.4f} | "
              f"{reported_nmse[t]:.4f} |")
    print(f"| mean | {coverage.mean():.3f} | "
          f"{np.mean(reported_coverage):.3f} | "
          f"{nmse.mean():.4f} | {np.mean(reported_nmse):.4f} |")
    print(f"the model's own prequential nMSE (each row scored when learned, "
          f"forgotten): {np.nanmean(info.prequential_nmse):.4f}; "
          f"answers' learn lag: p99 {np.percentile(lags, 99):.0f}, max "
          f"{np.max(lags):.0f} rows")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rows": args.rows, "flags": args.flags,
                       "level": level,
                       "coverage": coverage.tolist(),
                       "reported_coverage": reported_coverage,
                       "nmse": nmse.tolist(),
                       "reported_nmse": reported_nmse}, out)


if __name__ == "__main__":
    main()
