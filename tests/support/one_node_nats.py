"""A one-node NATS JetStream for the Python tests of a server in cluster
mode (Debian's nats-server, STREAMREG_NATS_SERVER to override)."""

import os
import re
import shutil
import subprocess
import tempfile
import time

NATS_SERVER = (os.environ.get("STREAMREG_NATS_SERVER") or
               shutil.which("nats-server") or "/usr/sbin/nats-server")


class OneNodeNats:
    """nats-server with JetStream on a free loopback port, in a scratch
    directory; stopped by stop()."""

    def __init__(self):
        self.scratch = tempfile.mkdtemp(prefix="streamreg_nats_")
        log = os.path.join(self.scratch, "nats.log")
        self.process = subprocess.Popen(
            [NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", "-1",
             "-sd", os.path.join(self.scratch, "js"), "-l", log])
        self.url = None
        deadline = time.monotonic() + 30
        while self.url is None and time.monotonic() < deadline:
            time.sleep(0.1)
            if os.path.exists(log):
                with open(log) as f:
                    found = re.search(r"Listening for client connections on "
                                      r"(127\.0\.0\.1:\d+)", f.read())
                if found:
                    self.url = "nats://" + found.group(1)
        if self.url is None:
            self.stop()
            raise RuntimeError(f"nats-server did not start; see {log}")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)
