#!/usr/bin/python3
"""The floor under the robot loop: gRPC's own cost of one message answered.

Starts a streamreg-server (fresh data directory, loopback), opens one
PingStream and sends an empty PingRequest every millisecond for DURATION
seconds, each only once the previous one is answered (a 1 kHz robot's loop
with nothing to learn or predict), and prints the server's CPU per message
— utime + stime of all its threads over the loop, from /proc, and by
thread name. What the server adds on top of this for a Learn message is
the model's work; this part is gRPC's (its threads' hand-offs included).

usage: bench/ping_loop.py BUILD_DIR [--duration 20] [--server BINARY]
                          [-- SERVER_FLAGS...]
"""

import argparse
import os
import queue
import re
import subprocess
import sys
import tempfile
import time


def thread_ticks(pid):
    """Clock ticks of CPU per thread name of process `pid`."""
    ticks = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks


def process_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main():
    argv = sys.argv[1:]
    server_flags = []
    if "--" in argv:
        server_flags = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--duration", type=float, default=20)
    parser.add_argument("--server", help="another build's streamreg-server")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(args.build_dir, "python"))
    import grpc
    from streamreg.v1 import regression_service_pb2 as messages_pb2
    from streamreg.v1 import regression_service_pb2_grpc

    server = args.server or os.path.join(args.build_dir, "server",
                                         "streamreg-server")
    with tempfile.TemporaryDirectory() as work:
        process = subprocess.Popen(
            [server, "--listen", "127.0.0.1:0", "--data-dir",
             os.path.join(work, "data")] + server_flags,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            address = None
            for line in process.stdout:
                found = re.match(r"streamreg-server listening on (\S+)", line)
                if found:
                    address = found.group(1)
                    break
            if address is None:
                sys.exit("the server did not start")
            channel = grpc.insecure_channel(address)
            stub = regression_service_pb2_grpc.RegressionServiceStub(channel)
            outgoing = queue.Queue()

            def requests():
                while (request := outgoing.get()) is not None:
                    yield request

            answers = stub.PingStream(requests())
            outgoing.put(messages_pb2.PingRequest())
            next(answers)  # connected
            hz = os.sysconf("SC_CLK_TCK")
            before, total_before = (thread_ticks(process.pid),
                                    process_ticks(process.pid))
            start = time.perf_counter()
            tick = start
            messages = 0
            while time.perf_counter() - start < args.duration:
                outgoing.put(messages_pb2.PingRequest())
                next(answers)
                messages += 1
                tick += 0.001
                if (wait := tick - time.perf_counter()) > 0:
                    time.sleep(wait)
            elapsed = time.perf_counter() - start
            after, total_after = (thread_ticks(process.pid),
                                  process_ticks(process.pid))
            answers.cancel()
            channel.close()
        finally:
            process.terminate()
            process.wait()
    per_message = 1e6 / hz / messages
    print(f"{messages} pings in {elapsed:.1f} s ({messages / elapsed:.0f}/s); "
          f"server CPU per message (us), by thread name:")
    for name in sorted(after):
        spent = (after[name] - before.get(name, 0)) * per_message
        if spent > 0:
            print(f"  {name:<18} {spent:7.1f}")
    print(f"  {'all threads':<18} "
          f"{(total_after - total_before) * per_message:7.1f}")


if __name__ == "__main__":
    main()
