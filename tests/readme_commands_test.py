#!/usr/bin/python3
"""Every command block of README.md and client/python/README.md runs, twice
in a row, in a clean clone of the repository, as a newcomer would type it.

The clone is `git clone` of the source tree (with its uncommitted
changes; a tree that is not a git checkout is copied and committed in a
repository of its own); its build/dev holds the
programs of the build under test (links to BUILD's client, server, bench
and python folders), as `make run` would have built them, and the
programs the README names bare (`streamreg`, `streamreg-robot-sim`) are on
the PATH, as `cmake --install` puts them. Each pass starts the server
with `make run` (its build steps skipped: CMAKE=true), on the README's
127.0.0.1:50051 and metrics port 9464 with the clone's streamreg-data,
runs every block in the order the READMEs give them, each in bash -e
from the clone's root, and stops the server with SIGTERM; the second pass
runs on what the first left (the models, the venv, the files), so a block
that cannot be run again fails here. Each block's output must hold what
it is there to show.

A block is run, or compared with the example file it shows and that file
run, or says here why it is tested elsewhere; a block this file does not
know fails the test (say how a new block is tested).

usage: readme_commands_test.py SOURCE_DIR BUILD_DIR SCRATCH_DIR
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

SOURCE, BUILD, SCRATCH = (os.path.abspath(p) for p in sys.argv[1:4])
ADDRESS = "127.0.0.1:50051"  # the README's
BLOCK_SECONDS = 600


# How each block is tested, by its README and its first line: ("run",
# what its output must show), ("server", the same: the block that starts
# the server the others talk to), ("example", the file it shows, the
# file's arguments, what its output must show), or ("elsewhere", why).
BLOCKS = {
    ("README.md", "./deploy/install-deps.sh && make run"):
        ("server", r"install-deps: all \d+ packages present"),
    ("README.md", "./deploy/install-deps.sh && make test"):
        ("elsewhere", ".ci/run runs exactly this line (checked below): CI "
                      "is its test"),
    ("README.md", "cli=build/dev/client/streamreg"):
        ("run", r"predicted 1449 rows; nMSE tau1 [0-9.]+"),
    ("README.md", "build/dev/client/streamreg-robot-sim --server "
                  "127.0.0.1:50051 --model panda --create \\"):
        ("run", r"answers' nMSE"),
    ("README.md", "cmake --preset dev && cmake --build --preset dev   "
                  "# RelWithDebInfo in build/dev"):
        ("elsewhere", "make test configures, builds and tests the ci, tsan, "
                      "asan and fuzz presets (make tsan, make asan, make "
                      "fuzz); the dev preset differs from ci only in its "
                      "debug info and in warnings not being errors; make "
                      "soak runs for 35 minutes and make bench "
                      "for several; the install is cpp_package_test's"),
    ("README.md", "deploy/cluster/local-cluster.sh up cluster-demo   # 3 "
                  "NATS nodes, 3 servers; writes cluster-demo/servers"):
        ("run", r"ingest yacht .*308/308"),
    ("README.md", "streamreg-robot-sim --samples 100000 --out arm.csv      "
                  "       # CSV"):
        ("run", r"samples: \d+ acknowledged, .*: 0 lost, "
                r"0 beyond acknowledged"),
    ("README.md", "PYTHONPATH=build/dev/python /usr/bin/python3 \\"):
        ("run", r"nMSE"),
    ("README.md", "build/dev/bench/streamreg-eval --csv "
                  "data/boston/boston.csv \\"):
        ("run", r"Learned metric better than Euclidean: batch \d+ of \d+"),
    ("client/python/README.md",
     "/usr/bin/python3 -m venv --system-site-packages venv"):
        ("run", r"Successfully installed streamreg"),
    ("client/python/README.md",
     "/usr/bin/python3 -m build --wheel --no-isolation client/python"):
        ("run", r"Successfully built streamreg-.*\.whl"),
    ("client/python/README.md",
     '"""A 1 kHz loop: each tick learns (x, y) and gets the prediction for x '
     'made before it."""'):
        ("example", "client/python/examples/robot_loop.py",
         ["venv/bin/python", "client/python/examples/robot_loop.py", ADDRESS,
          "data/sarcos/sarcos_test.csv"],
         r"4449 ticks, nMSE of the second half: \[[0-9. ]+\]"),
    ("client/python/README.md",
     'with client.realtime_channel("arm", horizon=20, batch_ticks=5) as '
     'channel:'):
        ("elsewhere", "a fragment of the API (rigid_body, feedback and the "
                      "desired states are the reader's); tests/client/python/"
                      "realtime_test.py runs the channel"),
    ("client/python/README.md",
     "from sklearn.model_selection import TimeSeriesSplit, cross_val_score"):
        ("elsewhere", "a fragment of the API (X, Y, ticks are the reader's); "
                      "client/python/examples/sklearn_sarcos.py is the whole "
                      "program, run by python_package_test"),
}

# Variables a block sets for the blocks after it, as in one terminal.
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S+$")

SHELL_PRELUDE = "set -euo pipefail\n"

# The quick start's second line, CI's command.
TEST_COMMAND = "./deploy/install-deps.sh && make test"


def command_blocks(path):
    """The fenced blocks of a Markdown file: (language, text), in order."""
    blocks, language, lines = [], None, []
    with open(path) as f:
        for line in f:
            fence = re.match(r"^```(\w*)\s*$", line)
            if fence and language is None:
                language, lines = fence.group(1) or "text", []
            elif fence:
                blocks.append((language, "".join(lines)))
                language = None
            elif language is not None:
                lines.append(line)
    return blocks


def tested_blocks():
    """(readme, first line, text) of each sh and python block."""
    found = []
    for readme in ("README.md", "client/python/README.md"):
        for language, text in command_blocks(os.path.join(SOURCE, readme)):
            if language in ("sh", "python"):
                found.append((readme, text.splitlines()[0].rstrip(), text))
    return found


class ReadmeCommandsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.clone = os.path.join(SCRATCH, "clone")
        shutil.rmtree(SCRATCH, ignore_errors=True)
        os.makedirs(SCRATCH)
        if os.path.isdir(os.path.join(SOURCE, ".git")):
            subprocess.run(["git", "clone", "--quiet", SOURCE, cls.clone],
                           check=True, timeout=300)
            cls.take_uncommitted_changes()
        else:
            cls.copy_as_a_clone()
        dev = os.path.join(cls.clone, "build", "dev")
        os.makedirs(dev)
        for folder in ("client", "server", "bench", "python"):
            os.symlink(os.path.join(BUILD, folder), os.path.join(dev, folder))
        cls.env = dict(os.environ)
        cls.env["PATH"] = os.pathsep.join(
            [os.path.join(dev, "client"), os.path.join(dev, "server"),
             cls.env.get("PATH", "/usr/bin:/bin")])
        # reproduce_papers.sh's 15 sets, once each and in batch only (its
        # own REPS and MODES; the README's run is 10 of each, both modes).
        cls.env.update(REPS="1", MODES="batch")
        # A newcomer's shell: not the make (and jobserver) CI runs us from.
        for name in ("STREAMREG_SERVER", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
            cls.env.pop(name, None)
        cls.passes = []
        for _ in range(2):
            cls.passes.append(cls.run_pass())

    @classmethod
    def copy_as_a_clone(cls):
        """A source tree that is not a git checkout: copied without its
        builds, and committed in a repository of its own, so that what the
        blocks leave can still be checked against .gitignore."""
        shutil.copytree(SOURCE, cls.clone, symlinks=True,
                        ignore=shutil.ignore_patterns(
                            "build", "build-*", "streamreg-data", "venv"))
        identity = ["-c", "user.name=readme test",
                    "-c", "user.email=readme-test@localhost"]
        for arguments in (["init", "--quiet"], ["add", "--all"],
                          [*identity, "commit", "--quiet", "-m", "tree"]):
            subprocess.run(["git", "-C", cls.clone, *arguments], check=True,
                           capture_output=True, timeout=300)
        cls.uncommitted = set()

    @classmethod
    def take_uncommitted_changes(cls):
        """The clone as the source tree would be committed: its changed and
        new files (not ignored) copied over, its deleted ones deleted (in
        CI the source is a clean clone, and this does nothing)."""
        def git(*arguments):
            return subprocess.run(["git", "-C", SOURCE, *arguments],
                                  check=True, capture_output=True, text=True,
                                  timeout=120).stdout.split("\0")
        changed = git("diff", "--name-only", "-z", "HEAD") + git(
            "ls-files", "--others", "--exclude-standard", "-z")
        cls.uncommitted = set(filter(None, changed))
        for path in cls.uncommitted:
            source = os.path.join(SOURCE, path)
            target = os.path.join(cls.clone, path)
            if os.path.lexists(source):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(source, target)
            elif os.path.lexists(target):
                os.remove(target)

    @classmethod
    def run_pass(cls):
        """Every block in order, the server started by the first; each
        block's (returncode, output, seconds)."""
        results = {}
        server = None
        carried = []
        try:
            for readme, first, text in tested_blocks():
                how = BLOCKS.get((readme, first))
                if how is None or how[0] == "elsewhere":
                    continue
                started = time.monotonic()
                if how[0] == "example":
                    command = how[2]
                    process = subprocess.run(
                        command, cwd=cls.clone, env=cls.env,
                        capture_output=True, text=True,
                        timeout=BLOCK_SECONDS)
                elif how[0] == "server":
                    server, process = cls.start_server()
                else:
                    script = SHELL_PRELUDE + "".join(
                        f"{line}\n" for line in carried) + text
                    process = subprocess.run(
                        ["bash", "-c", script], cwd=cls.clone, env=cls.env,
                        capture_output=True, text=True,
                        timeout=BLOCK_SECONDS)
                    carried += [line for line in text.splitlines()
                                if ASSIGNMENT.match(line)]
                results[(readme, first)] = (
                    process.returncode, process.stdout + process.stderr,
                    time.monotonic() - started)
                print(f"{time.monotonic() - started:6.1f} s  {readme}: "
                      f"{first}", flush=True)
        finally:
            if server is not None:
                cls.stop_server(server)
        return results

    @classmethod
    def start_server(cls):
        """The quick start's line: install-deps (every package present, so
        it installs nothing), then `make run` without its build steps,
        until the server says it listens."""
        install = subprocess.run(["./deploy/install-deps.sh"], cwd=cls.clone,
                                 env=cls.env, capture_output=True, text=True,
                                 timeout=120)
        if install.returncode != 0:
            return None, install
        server = subprocess.Popen(
            ["make", "--no-print-directory", "run", "CMAKE=true"],
            cwd=cls.clone, env=cls.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        output = install.stdout + install.stderr
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            output += line
            if f"listening on {ADDRESS}" in line:
                break
        # Its log from here on is not read: drain it so the pipe never fills.
        drain = subprocess.Popen(["cat"], stdin=server.stdout,
                                 stdout=subprocess.DEVNULL)
        server.drain = drain
        return server, subprocess.CompletedProcess(
            "make run", 0 if f"listening on {ADDRESS}" in output else 1,
            output, "")

    @staticmethod
    def stop_server(server):
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        server.drain.wait(timeout=10)
        server.stdout.close()

    def test_every_block_is_known(self):
        for readme, first, _ in tested_blocks():
            self.assertIn((readme, first), BLOCKS,
                          f"{readme}: a block this test does not know; say "
                          "in BLOCKS how it is tested")
        known = {(readme, first) for readme, first, _ in tested_blocks()}
        for key in BLOCKS:
            self.assertIn(key, known, f"no longer in the README: {key}")

    def test_each_block_runs_twice_and_shows_what_it_is_for(self):
        for readme, first, _ in tested_blocks():
            how = BLOCKS[(readme, first)]
            if how[0] == "elsewhere":
                continue
            expected = how[-1]
            for number, results in enumerate(self.passes, start=1):
                with self.subTest(readme=readme, block=first, run=number):
                    code, output, _ = results[(readme, first)]
                    self.assertEqual(0, code, output[-3000:])
                    self.assertRegex(output, expected)

    def test_what_they_leave_is_ignored(self):
        # Their files (the CSVs, reports, plots, venv, wheel, data
        # folders) are in .gitignore: the tree stays clean.
        status = subprocess.run(
            ["git", "-C", self.clone, "status", "--porcelain", "-z"],
            check=True, capture_output=True, text=True).stdout
        left = [entry[3:] for entry in status.split("\0")
                if entry and entry[3:] not in self.uncommitted]
        self.assertEqual([], left)

    def test_examples_shown_are_the_files(self):
        for readme, first, text in tested_blocks():
            how = BLOCKS[(readme, first)]
            if how[0] != "example":
                continue
            with open(os.path.join(SOURCE, how[1])) as f:
                self.assertEqual(f.read(), text, f"{readme} shows {how[1]}")

    def test_the_test_command_is_what_ci_runs(self):
        with open(os.path.join(SOURCE, ".ci/run")) as f:
            commands = [line.strip() for line in f
                        if line.strip() and not line.startswith("#")]
        self.assertEqual(TEST_COMMAND, commands[-1])
        readme = [text.strip() for language, text in
                  command_blocks(os.path.join(SOURCE, "README.md"))
                  if language == "sh"]
        self.assertIn(TEST_COMMAND, readme)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
