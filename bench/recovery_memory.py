#!/usr/bin/env python3
"""The memory a server takes to recover a data directory, and holds after.

    bench/recovery_memory.py BUILD_DIR DATA_DIR [--settle SECONDS] [--json F]

Starts BUILD_DIR/server/streamreg-server on DATA_DIR (a copy is not made:
recovery reads it, and a snapshot is not written unless the model learns),
samples its /proc/PID/status every 10 ms from its start until SECONDS
after its `event=recovery_done` line, then stops it (SIGTERM) and prints:
- the recovery's seconds, as the server logs them;
- the peak resident size (VmHWM) and the peaks of its anonymous and
  file-backed parts (RssAnon, RssFile: the snapshot is read through a
  mapping, whose pages count as file-backed while they are resident);
- the resident size at recovery_done and SECONDS later (the model held,
  background work started by recovery included).
Sizes in MB (10^6 bytes), as the rows of bench/RESULTS.md give them.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile")


def status_kb(pid):
    """The FIELDS of /proc/PID/status, in kB (None once it is gone)."""
    try:
        with open("/proc/%d/status" % pid) as status:
            text = status.read()
    except OSError:
        return None
    values = {}
    for field in FIELDS:
        found = re.search(r"^%s:\s+(\d+) kB" % field, text, re.MULTILINE)
        values[field] = int(found.group(1)) if found else 0
    return values


def recovery_seconds(log_path):
    """The seconds of the server's recovery_done line (None before it)."""
    with open(log_path, errors="replace") as log:
        found = re.search(r"event=recovery_done .*seconds=([0-9.]+)",
                          log.read())
    return float(found.group(1)) if found else None


def measure(server, data_dir, settle, log_path):
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [server, "--listen", "127.0.0.1:0", "--metrics-listen=",
             "--data-dir", data_dir],
            stdout=subprocess.DEVNULL, stderr=log)
    peaks = dict.fromkeys(FIELDS, 0)
    at_recovery = after = None
    seconds = None
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline:
            values = status_kb(process.pid)
            if values is None or process.poll() is not None:
                sys.exit("the server exited; its log: %s" % log_path)
            for field in FIELDS:
                peaks[field] = max(peaks[field], values[field])
            if seconds is None:
                seconds = recovery_seconds(log_path)
                if seconds is not None:
                    at_recovery = values["VmRSS"]
                    settled_at = time.monotonic() + settle
            elif time.monotonic() >= settled_at:
                after = values["VmRSS"]
                break
            time.sleep(0.01)
        else:
            sys.exit("no recovery_done within 600 s; its log: %s" % log_path)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    megabytes = lambda kb: round(kb * 1024 / 1e6, 1)
    return {
        "recovery_s": seconds,
        "peak_mb": megabytes(peaks["VmHWM"]),
        "peak_anon_mb": megabytes(peaks["RssAnon"]),
        "peak_file_mb": megabytes(peaks["RssFile"]),
        "rss_at_recovery_mb": megabytes(at_recovery),
        "rss_after_settle_mb": megabytes(after),
        "settle_s": settle,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("data_dir")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    server = os.path.join(args.build, "server", "streamreg-server")
    log_path = os.path.join(args.data_dir, "..", "recovery_memory.log")
    figures = measure(server, args.data_dir, args.settle,
                      os.path.abspath(log_path))
    print("recovery %.2f s; peak %.1f MB (anonymous %.1f, file-backed %.1f); "
          "resident %.1f MB at recovery_done, %.1f MB %g s later" %
          (figures["recovery_s"], figures["peak_mb"],
           figures["peak_anon_mb"], figures["peak_file_mb"],
           figures["rss_at_recovery_mb"], figures["rss_after_settle_mb"],
           args.settle))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
