#!/usr/bin/python3
"""A robot controller in a few lines: replays the SARCOS test split through
Learn (predict, then learn, every tick) and prints the prequential nMSE as
the model learns.

  PYTHONPATH=build/dev/python:client/python /usr/bin/python3 \
      client/python/robot_example.py --server 127.0.0.1:50051 \
      --csv data/sarcos/sarcos_test.csv

--csv defaults to the repository's data/sarcos/sarcos_test.csv.
"""

import argparse
import os
import time

import grpc

import streamreg_client

# data/sarcos/sarcos_test.csv of the repository this file is in.
DEFAULT_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                           os.pardir, "data", "sarcos", "sarcos_test.csv")


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

    input_names, target_names, rows = streamreg_client.read_csv(args.csv)
    if args.limit:
        rows = rows[:args.limit]
    client = streamreg_client.Client(
        args.server, root_certificates=read(args.tls_ca),
        certificate_chain=read(args.tls_cert), private_key=read(args.tls_key),
        token=bearer_token(args.token_file))
    # Create the model if it is not there yet (a robot's token may read and
    # write models without being allowed to create them).
    try:
        client.get_model(args.model)
    except grpc.RpcError as error:
        if error.code() != grpc.StatusCode.NOT_FOUND:
            raise
        try:
            client.create_model(args.model, len(input_names), target_names,
                                metric="gw", input_names=input_names)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise

    def ticks():
        start = time.monotonic()
        for i, row in enumerate(rows):
            if args.rate:
                time.sleep(max(0.0, start + i / args.rate - time.monotonic()))
            yield row

    m = len(target_names)
    sums = [0.0] * m
    squares = [0.0] * m
    errors = [0.0] * m
    n = 0
    for (x, y), response in zip(rows, client.learn(args.model, ticks())):
        n += 1
        for t in range(m):
            errors[t] += (response.prediction.y[t] - y[t]) ** 2
            sums[t] += y[t]
            squares[t] += y[t] ** 2
        if n % 500 == 0 or n == len(rows):
            nmse = [errors[t] / n / max(squares[t] / n - (sums[t] / n) ** 2, 1e-300)
                    for t in range(m)]
            print(f"samples={n} sequence={response.sequence} "
                  f"prequential nMSE mean={sum(nmse) / m:.4f} "
                  + " ".join(f"{name}={v:.3f}" for name, v in zip(target_names, nmse)))
    client.close()


if __name__ == "__main__":
    main()
