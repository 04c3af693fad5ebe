#!/usr/bin/python3
"""A robot controller with the options a deployment has: replays the SARCOS
test split through a Learn stream (predict, then learn, every tick), over
TLS and with a bearer token if asked, and prints the prequential nMSE as
the model learns (examples/robot_loop.py is the 20-line version).

  python client/python/examples/robot_replay.py --server 127.0.0.1:50051 \
      --csv data/sarcos/sarcos_test.csv

(with the package installed, or PYTHONPATH=build/dev/python). --csv
defaults to the repository's data/sarcos/sarcos_test.csv.
"""

import argparse
import os
import time

import grpc
import numpy as np

import streamreg

# data/sarcos/sarcos_test.csv of the repository this file is in.
DEFAULT_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           *[os.pardir] * 3, "data", "sarcos",
                           "sarcos_test.csv")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--csv", default=os.path.normpath(DEFAULT_CSV))
    parser.add_argument("--model", default="sarcos-robot")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0, help="ticks/s (0: as fast as possible)")
    parser.add_argument("--tls-ca", help="TLS: PEM file of the CA that signed the server's certificate")
    parser.add_argument("--tls-cert", help="mutual TLS: this client's PEM certificate")
    parser.add_argument("--tls-key", help="mutual TLS: the PEM private key of --tls-cert")
    parser.add_argument("--token-file", help="file whose first line is the bearer token "
                        "(default: the STREAMREG_TOKEN environment variable)")
    args = parser.parse_args()

    def read(path):
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()

    def bearer_token(path):
        if not path:
            return os.environ.get("STREAMREG_TOKEN")
        with open(path) as f:
            return f.readline().strip()

    input_names, target_names, inputs, targets = streamreg.read_csv(args.csv)
    if args.limit:
        inputs, targets = inputs[:args.limit], targets[:args.limit]
    # A read (info, predict) waits until the model has learned every
    # durable sample: after a stream at full speed into a young model, that
    # can take seconds on a slow machine, hence a minute per call.
    with streamreg.Client(
            args.server, timeout=60, root_certificates=read(args.tls_ca),
            certificate_chain=read(args.tls_cert),
            private_key=read(args.tls_key),
            token=bearer_token(args.token_file)) as client:
        # Create the model if it is not there yet (a robot's token may read
        # and write models without being allowed to create them).
        try:
            client.info(args.model)
        except streamreg.Error as error:
            if error.code != grpc.StatusCode.NOT_FOUND:
                raise
            try:
                client.create(args.model, inputs=input_names,
                              targets=target_names)
            except streamreg.Error as error:
                if error.code != grpc.StatusCode.ALREADY_EXISTS:
                    raise
        replay(client, args, target_names, inputs, targets)


def replay(client, args, target_names, inputs, targets):
    """One tick per row, at --rate; the nMSE every 500 ticks, and last once
    the server reports every sample durable."""
    squared_errors = np.zeros(targets.shape[1])
    start = time.monotonic()

    def report(n, durable):
        nmse = squared_errors / n / np.maximum(targets[:n].var(axis=0), 1e-300)
        print(f"samples={n} durable={durable} "
              f"prequential nMSE mean={nmse.mean():.4f} " +
              " ".join(f"{name}={v:.3f}" for name, v in zip(target_names, nmse)))

    with client.learn_stream(args.model) as stream:
        for n, (x, y) in enumerate(zip(inputs, targets), start=1):
            if args.rate:
                time.sleep(max(0.0, start + n / args.rate - time.monotonic()))
            answer = stream.learn(x, y)
            squared_errors += (answer.y - y) ** 2
            if n % 500 == 0:
                report(n, answer.durable)
    # Closed: every sample is durable.
    report(len(inputs), stream.durable_samples)
    print(f"model={client.info(args.model).samples}")


if __name__ == "__main__":
    main()
