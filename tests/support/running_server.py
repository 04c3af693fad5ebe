"""streamreg-server as a process, for the Python tests: started on free
loopback ports in a scratch data directory, its addresses read from what it
prints, its log drained (so its pipe never fills), stopped with SIGTERM."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time


class RunningServer:
    """`listen`: the gRPC address (port 0: any free one); `metrics`: the
    metrics port's (empty: none); `arguments`: more flags."""

    def __init__(self, binary, listen="127.0.0.1:0", metrics="127.0.0.1:0",
                 arguments=()):
        self.scratch = tempfile.mkdtemp(prefix="streamreg_server_")
        self.process = subprocess.Popen(
            [binary, "--listen", listen, f"--metrics_listen={metrics}",
             "--data_dir", os.path.join(self.scratch, "data"), *arguments],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.address = None
        self.metrics_address = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                self.address is None or
                (metrics and self.metrics_address is None)):
            line = self.process.stdout.readline()
            if not line:
                break
            found = re.search(r"metrics on http://([^/]+)/metrics", line)
            if found:
                self.metrics_address = found.group(1)
            found = re.search(r"listening on (\S+)$", line.strip())
            if found:
                self.address = found.group(1)
        if self.address is None or (metrics and self.metrics_address is None):
            self.stop()
            raise RuntimeError("the server did not say where it listens")
        self._drain = threading.Thread(target=self.process.stdout.read,
                                       daemon=True)
        self._drain.start()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        drain = getattr(self, "_drain", None)
        if drain is not None:
            drain.join(timeout=10)  # the log's end, now the server is gone
        self.process.stdout.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
