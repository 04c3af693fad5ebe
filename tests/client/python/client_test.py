"""The installed Python package against a real streamreg-server: every call
with numpy arrays, the learn stream's predict-then-learn against Predict,
errors that name the sample and change nothing, retries within their
deadline (an unreachable server, a server that starts late), and the robot
loop example; and every client (this package, the CLI and the C++ real-time
channel it runs) on a server's local socket. Run with the interpreter of the
virtual environment the package is installed in
(tests/client/python/package_test.sh).

usage: client_test.py SERVER REPO [CLI]
"""

import datetime
from concurrent import futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest
from unittest import mock

import grpc
import numpy as np

import streamreg
from streamreg.streams import LearnStream, NoAnswer, PredictStream
from streamreg.v1 import model_pb2
from streamreg.v1 import model_service_pb2_grpc
from streamreg.v1 import regression_pb2
from streamreg.v1 import regression_service_pb2
from streamreg.v1 import regression_service_pb2_grpc

SERVER, REPO = sys.argv[1:3]
CLI = sys.argv[3] if len(sys.argv) > 3 else None
SARCOS = os.path.join(REPO, "data/sarcos/sarcos_test.csv")
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from running_server import RunningServer  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _RpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return ()


def _learn_answer(answered):
    return regression_service_pb2.LearnResponse(durable_messages=answered)


def _sent_on(elsewhere):
    """The error a cluster's server that does not serve 'arm' answers."""
    return _RpcError(grpc.StatusCode.UNAVAILABLE,
                     f"model 'arm' is not served here (servers={elsewhere})")


def _waits_and_attempts(run, attempt):
    """Runs run(attempt) with the retries' sleeps recorded instead of slept
    and their backoffs at the ceiling; returns what run returned and the
    attempts ("attempt") and waits (seconds) in the order they came."""
    events = []

    def recorded(*args):
        events.append("attempt")
        return attempt(*args)
    with mock.patch("time.sleep", events.append), \
            mock.patch("random.random", return_value=1.0):
        try:
            return run(recorded), events
        except streamreg.Error as error:
            return error, events


def _predict_answer(answered):
    return regression_service_pb2.PredictResponse(
        predictions=[regression_pb2.Prediction(
            y=[float(answered)], spread=[0.0], lower=[float(answered)],
            upper=[float(answered)])],
        num_samples=answered)


class _FakeCall:
    """A bidi call as a stream sees it: answers each message with
    answer(messages answered so far), or, `stalled`, answers nothing until
    cancelled (a paused server), or, `broken`, fails as a server that went
    away does."""

    def __init__(self, requests, answer, stalled=False, broken=False,
                 broken_at=None):
        self._requests = requests
        self._answer = answer
        self._stalled = stalled
        self._broken_at = 1 if broken else broken_at
        self._cancelled = threading.Event()
        self.received = []
        self.answered = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._stalled:
            self._cancelled.wait(30)
            raise _RpcError(grpc.StatusCode.CANCELLED,
                            "cancelled by the client")
        self.received.append(next(self._requests))
        if len(self.received) == self._broken_at:
            raise _RpcError(grpc.StatusCode.UNAVAILABLE, "Socket closed")
        self.answered += 1
        return self._answer(self.answered)

    def cancel(self):
        self._cancelled.set()

    def trailing_metadata(self):
        return ()


class LearnStreamStallTest(unittest.TestCase):
    """A stalled server's Learn stream is left after the attempt timeout:
    the sample goes on a new call (to the next server), and the stalled
    one is reported."""

    def test_a_sample_not_answered_in_time_goes_on_a_new_call(self):
        calls, failures = [], []

        def open_call(requests):
            calls.append(_FakeCall(requests, _learn_answer,
                                   stalled=not calls))
            return calls[-1]

        ids = iter(range(1, 100))
        stream = LearnStream(open_call, "arm", lambda: next(ids),
                             attempt_timeout=lambda: 0.2,
                             failed=failures.append)
        start = time.monotonic()
        answer = stream.learn(np.zeros(3), np.zeros(2))
        elapsed = time.monotonic() - start
        self.assertEqual(2, len(calls))
        self.assertEqual([NoAnswer], [type(f) for f in failures])
        self.assertEqual(1, calls[1].answered)
        self.assertEqual(1, answer.durable)
        self.assertGreaterEqual(elapsed, 0.2)
        self.assertLess(elapsed, 5.0)
        for _ in range(20):  # the next samples go on at once
            stream.learn(np.zeros(3), np.zeros(2))
        self.assertEqual(2, len(calls))
        stream.close()
        self.assertEqual(21, stream.durable_samples)
        self.assertEqual(0, stream.unconfirmed_samples)

    def test_a_broken_call_is_told_and_its_samples_resent(self):
        calls, failures = [], []

        def open_call(requests):
            if calls:
                calls.append(_FakeCall(requests, _learn_answer))
            else:  # answers two samples, none durable, then breaks
                calls.append(_FakeCall(requests, lambda n: _learn_answer(0),
                                       broken_at=3))
            return calls[-1]

        ids = iter(range(1, 100))
        stream = LearnStream(open_call, "arm", lambda: next(ids),
                             retry=streamreg.RetryPolicy(max_backoff=0.01),
                             failed=failures.append)
        for _ in range(3):
            stream.learn(np.zeros(3), np.zeros(2))
        self.assertEqual(2, len(calls))
        self.assertEqual([grpc.StatusCode.UNAVAILABLE],
                         [f.code for f in failures])
        # The two not durable first, then the one the break interrupted.
        self.assertEqual([r.sample.sample_id for r in calls[0].received],
                         [r.sample.sample_id for r in calls[1].received])
        self.assertEqual(3, stream.durable_samples)
        stream.close()
        self.assertEqual(0, stream.unconfirmed_samples)


class SendOnTest(unittest.TestCase):
    """A cluster's server that does not serve a model names those that do.
    The client follows the first such send-on of a call at once (its
    router has learned where to go) and later ones after the backoff
    (replicas all catching up send clients to each other), each counted as
    an attempt, as the C++ client's RetryCall does."""

    POLICY = streamreg.RetryPolicy(attempts=4, initial_backoff=0.2,
                                   max_backoff=0.3)

    def test_a_call_follows_the_first_send_on_at_once(self):
        client = streamreg.Client(f"127.0.0.1:{free_port()}",
                                  retry=self.POLICY, connect_within=None)
        elsewhere = f"127.0.0.1:{free_port()}"
        tried = []

        def three_send_ons(models, regression, timeout):
            tried.append(timeout)
            if len(tried) <= 3:
                raise _sent_on(elsewhere)
            return "learned"
        try:
            # Not retried otherwise (a create): a send-on still is.
            answer, events = _waits_and_attempts(
                lambda call: client._call("arm", call, retried=False),
                three_send_ons)
            self.assertEqual("learned", answer)
            self.assertEqual(["attempt", "attempt", 0.3, "attempt",
                              0.3, "attempt"], events)
            self.assertEqual([elsewhere], client._router._owners["arm"])

            # Send-ons count: the fourth attempt's is final.
            error, events = _waits_and_attempts(
                lambda call: client._call("arm", call),
                lambda *args: (_ for _ in ()).throw(_sent_on(elsewhere)))
            self.assertEqual(grpc.StatusCode.UNAVAILABLE, error.code)
            self.assertEqual(4, events.count("attempt"))
            self.assertEqual(["attempt", "attempt"], events[:2])
        finally:
            client.close()

    def test_a_learn_stream_follows_the_first_send_on_at_once(self):
        calls, failures = [], []

        def open_call(requests):
            calls.append(_FakeCall(requests, _learn_answer,
                                   broken=len(calls) < 2))
            return calls[-1]

        ids = iter(range(1, 100))
        stream = LearnStream(open_call, "arm", lambda: next(ids),
                             retry=self.POLICY, failed=failures.append)
        original = _FakeCall.__next__

        def sending_on(call):  # the broken calls send the client on
            try:
                return original(call)
            except _RpcError:
                raise _sent_on("127.0.0.1:1")
        with mock.patch.object(_FakeCall, "__next__", sending_on):
            answer, events = _waits_and_attempts(
                lambda learn: learn(np.zeros(3), np.zeros(2)), stream.learn)
        self.assertEqual(1, answer.durable)
        self.assertEqual(3, len(calls))
        self.assertEqual(2, len(failures))
        # One learn(), three calls: the first send-on was followed at
        # once, the second after the backoff.
        self.assertEqual(["attempt", 0.3], events)
        stream.close()


class PredictStreamTest(unittest.TestCase):
    """A query on a stalled or broken call is asked again on a new call,
    and the failure told (the client's router then passes the server
    over); one the server refuses is not asked again."""

    def stream(self, kinds, failures):
        calls = []

        def open_call(requests):
            kind = kinds[len(calls)] if len(calls) < len(kinds) else ""
            calls.append(_FakeCall(requests, _predict_answer,
                                   stalled=kind == "stalled",
                                   broken=kind == "broken"))
            return calls[-1]
        stream = PredictStream(open_call, "arm",
                               retry=streamreg.RetryPolicy(max_backoff=0.01),
                               attempt_timeout=lambda: 0.2,
                               failed=failures.append)
        return stream, calls

    def test_a_stalled_call_costs_a_query_one_attempt_timeout(self):
        failures = []
        stream, calls = self.stream(["stalled"], failures)
        start = time.monotonic()
        answer = stream.predict(np.zeros(3))
        elapsed = time.monotonic() - start
        self.assertEqual([1.0], list(answer.y[:, 0]))
        self.assertEqual([NoAnswer], [type(f) for f in failures])
        self.assertGreaterEqual(elapsed, 0.2)
        self.assertLess(elapsed, 5.0)
        for n in range(2, 12):  # the next queries stay on the new call
            self.assertEqual(n, stream.predict(np.zeros(3)).y[0, 0])
        self.assertEqual(2, len(calls))
        stream.close()

    def test_a_broken_call_is_reopened(self):
        failures = []
        stream, calls = self.stream(["broken", "broken"], failures)
        self.assertEqual(1.0, stream.predict(np.zeros(3)).y[0, 0])
        self.assertEqual(3, len(calls))
        self.assertEqual([grpc.StatusCode.UNAVAILABLE] * 2,
                         [f.code for f in failures])
        stream.close()

    def test_a_refused_query_is_not_asked_again(self):
        failures = []
        calls = []

        def open_call(requests):
            calls.append(requests)

            class Refusing(_FakeCall):
                def __next__(self):
                    next(self._requests)
                    raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                                    "query 0: x has 3 values; the model "
                                    "takes 21")
            return Refusing(requests, _predict_answer)
        stream = PredictStream(open_call, "arm", failed=failures.append)
        with self.assertRaisesRegex(streamreg.Error, "query 0"):
            stream.predict(np.zeros(3))
        self.assertEqual(1, len(calls))
        self.assertEqual([grpc.StatusCode.INVALID_ARGUMENT],
                         [f.code for f in failures])
        stream.close()


class _StalledRegression(
        regression_service_pb2_grpc.RegressionServiceServicer):
    """A paused server: reads an Ingest call's first message, then answers
    neither it nor any ping until released."""

    def __init__(self):
        self.released = threading.Event()
        self.ingests = 0

    def Ingest(self, request_iterator, context):
        next(request_iterator)
        self.ingests += 1
        while not self.released.is_set() and context.is_active():
            time.sleep(0.005)
        context.abort(grpc.StatusCode.CANCELLED, "released")

    def Ping(self, request, context):
        self.released.wait(30)
        return regression_service_pb2.PingResponse()


class _ScriptedModels(model_service_pb2_grpc.ModelServiceServicer):
    """A server's GetModel as scripted: answers (a model named NAME@tag)
    after `slow` seconds, or, `stalled`, answers nothing until the client
    cancels the call (a paused server)."""

    def __init__(self, tag, slow=0.0, stalled=False):
        self.tag, self.slow, self.stalled = tag, slow, stalled
        self.calls = 0
        self.cancelled = threading.Event()
        self.released = threading.Event()

    def GetModel(self, request, context):
        self.calls += 1
        if self.stalled:
            while context.is_active() and not self.released.is_set():
                time.sleep(0.005)
            if not context.is_active():
                self.cancelled.set()
            context.abort(grpc.StatusCode.CANCELLED, "released")
        time.sleep(self.slow)
        return model_pb2.Model(name=f"{request.name}@{self.tag}")


class HedgedReadTest(unittest.TestCase):
    """A read asks the model's next server after replica_attempt_timeout
    while the one before has not answered, keeps both calls, takes the
    first answer and cancels the other."""

    def serve(self, *scripts):
        servers = []
        for script in scripts:
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            model_service_pb2_grpc.add_ModelServiceServicer_to_server(
                script, server)
            port = server.add_insecure_port("127.0.0.1:0")
            servers.append(f"127.0.0.1:{port}")
            server.start()
            self.addCleanup(server.stop, None)
            self.addCleanup(script.released.set)
        return streamreg.Client(",".join(servers), timeout=60,
                                replica_attempt_timeout=0.2)

    def test_a_stalled_server_costs_a_read_one_attempt_timeout(self):
        stalled, answering = _ScriptedModels("first", stalled=True), \
            _ScriptedModels("second")
        with self.serve(stalled, answering) as client:
            start = time.monotonic()
            model = client.info("m")
            took = time.monotonic() - start
            self.assertEqual("m@second", model.name)
            self.assertGreaterEqual(took, 0.2)  # the first had its turn
            self.assertLess(took, 30)  # not the call's 60 s
            self.assertTrue(stalled.cancelled.wait(10))
            # The next read goes to the server that answered, first.
            self.assertEqual("m@second", client.info("m").name)
            self.assertEqual(1, stalled.calls)
            self.assertEqual(2, answering.calls)

    def test_a_slow_server_answers_while_the_next_one_is_stalled(self):
        slow, stalled = _ScriptedModels("first", slow=0.8), \
            _ScriptedModels("second", stalled=True)
        with self.serve(slow, stalled) as client:
            start = time.monotonic()
            self.assertEqual("m@first", client.info("m").name)
            self.assertLess(time.monotonic() - start, 30)
            self.assertEqual(1, stalled.calls)  # asked while slow was
            self.assertTrue(stalled.cancelled.wait(10))


class LocalSocketTest(unittest.TestCase):
    """A server serving a local socket beside its port (--local_socket),
    reached on unix:PATH by the CLI, by the C++ library's RealtimeChannel
    (`streamreg bench learn --batch_ticks`: its loop reads predictions made
    ahead of its ticks, its courier learns every sample) and by this
    package."""

    def test_every_client_reaches_a_server_on_its_local_socket(self):
        if CLI is None:
            self.skipTest("no CLI given")
        scratch = tempfile.mkdtemp(prefix="streamreg_socket_")
        self.addCleanup(shutil.rmtree, scratch, ignore_errors=True)
        path = os.path.join(scratch, "streamreg.sock")
        server = RunningServer(SERVER, metrics="",
                               arguments=["--local_socket", path])
        self.addCleanup(server.stop)
        local = "unix:" + path
        report = os.path.join(scratch, "learn.json")
        learn = subprocess.run(
            [CLI, "--server", local, "bench", "learn", "--model", "arm",
             "--create", "--duration", "2", "--batch_ticks", "10",
             "--ahead_ticks", "20", "--json", report],
            capture_output=True, text=True, timeout=120, check=False)
        self.assertEqual(learn.returncode, 0, learn.stdout + learn.stderr)
        with open(report, encoding="utf-8") as f:
            ahead = json.load(f)["per_robot"][0]["ahead"]
        self.assertGreater(ahead["in_time"], 0)
        self.assertEqual(ahead["channel"]["samples_durable"], 2000)
        info = subprocess.run([CLI, "--server", local, "info", "--model",
                               "arm"], capture_output=True, text=True,
                              timeout=60, check=False)
        self.assertEqual(info.returncode, 0, info.stderr)
        self.assertRegex(info.stdout.replace(",", ""),
                         r"samples\s+2000 learned")
        with streamreg.Client(local, timeout=30.0) as client:
            self.assertEqual(client.info("arm").samples, 2000)
            predictions = client.predict("arm", np.zeros((3, 21)))
            self.assertEqual(predictions.y.shape, (3, 7))
            self.assertEqual(predictions.samples, 2000)


class PausedServerTest(unittest.TestCase):
    """A RealtimeChannel whose server is stopped (SIGSTOP) and resumed:
    the loop's calls go on meanwhile (a call that waited for the server
    would hold the loop until the watchdog resumes it), the ticks past the
    predictions in hand read the fallback, and every sample is learned
    once the server runs again."""

    def test_the_loop_goes_on_while_the_server_is_stopped(self):
        server = RunningServer(SERVER, metrics="")
        self.addCleanup(server.stop)
        client = streamreg.Client(server.address, timeout=60.0)
        self.addCleanup(client.close)
        client.create("paused", inputs=2, targets=1, metric="euclidean")

        def state(tick):
            return np.array([np.sin(tick / 50.0), np.cos(tick / 50.0)])

        def hand(channel, tick):
            desired = np.array([state(tick + k) for k in range(1, 9)])
            x = state(tick)
            channel.hand(tick, x, [x[0] + 2 * x[1]], desired)

        channel = client.realtime_channel("paused", horizon=8, batch_ticks=4)
        for tick in range(100):
            hand(channel, tick)
            time.sleep(0.001)
        deadline = time.monotonic() + 10
        while (not channel.read(100).predicted and
               time.monotonic() < deadline):
            time.sleep(0.001)
        self.assertTrue(channel.read(100).predicted)

        server.process.send_signal(signal.SIGSTOP)
        resumed, fired = threading.Event(), threading.Event()

        def watchdog():  # resumes the server if the loop is held
            if not resumed.wait(30):
                fired.set()
                server.process.send_signal(signal.SIGCONT)
        threading.Thread(target=watchdog, daemon=True).start()
        sources = []
        for tick in range(100, 600):
            hand(channel, tick)
            sources.append(channel.read(tick, fallback=[-7.0]).source)
            time.sleep(0.001)
        resumed.set()
        server.process.send_signal(signal.SIGCONT)
        self.assertFalse(fired.is_set(), "the loop waited for the server")
        # Past what was asked before the stop, no prediction: the fallback.
        self.assertTrue(all(s == "none" for s in sources[50:]), sources[50:])
        channel.close()
        self.assertEqual(600, channel.stats.samples_durable)
        self.assertEqual(0, channel.stats.samples_dropped)
        self.assertEqual(600, client.info("paused").samples)


class ClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = RunningServer(SERVER, metrics="",
                                   arguments=["--sync", "interval:20"])
        cls.addClassCleanup(cls.server.stop)  # also if setting up fails
        # A read waits until what was learned before it is; on a
        # sanitizer build of a busy machine that took over the default 10 s.
        cls.client = streamreg.Client(cls.server.address, timeout=60.0)
        cls.inputs, cls.targets, X, Y = streamreg.read_csv(SARCOS)
        cls.X, cls.Y = X[:1500], Y[:1500]

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_the_package_is_the_installed_one(self):
        self.assertIn(os.sep + "site-packages" + os.sep, streamreg.__file__)
        self.assertEqual("0.1.0", streamreg.__version__)

    def test_data_frames_are_matched_to_the_models_names(self):
        import pandas as pd
        c = self.client
        c.create("py-frames", inputs=self.inputs, targets=self.targets)
        self.addCleanup(c.delete, "py-frames")
        X = pd.DataFrame(self.X[:300], columns=self.inputs)
        Y = pd.DataFrame(self.Y[:300], columns=self.targets)
        # Columns in another order are put in the model's.
        c.learn("py-frames", X[self.inputs[::-1]], Y[self.targets[::-1]])
        c.create("py-arrays", inputs=self.inputs, targets=self.targets)
        self.addCleanup(c.delete, "py-arrays")
        c.learn("py-arrays", self.X[:300], self.Y[:300])
        queries = X.iloc[:20, ::-1]
        np.testing.assert_array_equal(c.predict("py-arrays", self.X[:20]).y,
                                      c.predict("py-frames", queries).y)
        # A renamed column is refused, naming it, and nothing is learned.
        renamed = X.rename(columns={"q1": "joint1"})
        with self.assertRaisesRegex(ValueError, "x: the frame's columns are "
                                    "not the model's: missing q1; "
                                    "unexpected joint1"):
            c.learn("py-frames", renamed, Y)
        with self.assertRaisesRegex(ValueError, "missing q1"):
            c.predict("py-frames", renamed)
        self.assertEqual(300, c.info("py-frames").samples)

    def test_no_server_is_said_in_one_line_with_the_clis_hint(self):
        address = f"127.0.0.1:{free_port()}"
        error = None
        with streamreg.Client(address, timeout=30) as nobody:
            start = time.monotonic()
            try:
                nobody.list()
            except streamreg.ServerUnreachable as raised:
                error = raised
            took = time.monotonic() - start
        self.assertIsNotNone(error)
        self.assertIsInstance(error, streamreg.Error)
        self.assertEqual(grpc.StatusCode.UNAVAILABLE, error.code)
        self.assertEqual(
            f"UNAVAILABLE: no streamreg server answers at {address} within "
            "1s (is a server running there? `make run` starts one; "
            "streamreg.Client(\"HOST:PORT\") names another)", str(error))
        # Said after the first second's wait, not after the retries meant
        # for a server that went away (their deadline is 30 s here).
        self.assertLess(took, 10.0)
        # Its traceback starts at the method called: nothing of the
        # client's insides nor grpc's, and no exception chained to it.
        frames = traceback.extract_tb(error.__traceback__)
        self.assertEqual(["test_no_server_is_said_in_one_line_with_the_"
                          "clis_hint", "call"], [f.name for f in frames])
        self.assertIsNone(error.__cause__)
        self.assertTrue(error.__suppress_context__)
        self.assertEqual("streamreg.ServerUnreachable: " + str(error),
                         traceback.format_exception_only(error)[0].strip())

    def test_a_missing_model_and_a_refused_sample_read_as_the_cli_says(self):
        c = self.client
        c.create("py-refusals", inputs=self.inputs, targets=self.targets)
        self.addCleanup(c.delete, "py-refusals")
        with self.assertRaises(streamreg.NotFound) as missing:
            c.info("py-refusal")
        self.assertEqual("NOT_FOUND: model 'py-refusal' not found (did you "
                         "mean 'py-refusals'?)", str(missing.exception))
        with self.assertRaises(streamreg.NotFound) as far:
            c.info("no-such-model-here")
        self.assertRegex(str(far.exception), r"^NOT_FOUND: model "
                         r"'no-such-model-here' not found \(Client.list\(\) "
                         r"shows the \d+ models? it has\)$")
        bad = self.X[:2].copy()
        bad[1, 5] = np.nan
        with self.assertRaises(streamreg.InvalidArgument) as refused:
            c.learn("py-refusals", bad, self.Y[:2])
        self.assertEqual(0, c.info("py-refusals").samples)
        self.assertIn("samples[1].x[5]: NaN", str(refused.exception))
        if CLI is not None:
            said = subprocess.run(
                [CLI, "--server", self.server.address, "info", "--model",
                 "py-refusal"], capture_output=True, text=True, timeout=60)
            self.assertEqual(f"streamreg info: {missing.exception}",
                             said.stderr.strip())
        # Asked for, the whole traceback: the client's insides too.
        os.environ["STREAMREG_TRACEBACK"] = "1"
        self.addCleanup(os.environ.pop, "STREAMREG_TRACEBACK")
        try:
            c.info("py-refusal")
            self.fail("no NotFound")
        except streamreg.NotFound as whole:
            self.assertGreater(len(traceback.extract_tb(whole.__traceback__)),
                               2)

    def test_a_predictions_frame_has_the_clis_columns(self):
        import pandas as pd
        if CLI is None:
            self.skipTest("no CLI given")
        c = self.client
        c.create("py-frame-out", inputs=self.inputs, targets=self.targets)
        self.addCleanup(c.delete, "py-frame-out")
        c.learn("py-frame-out", self.X[:400], self.Y[:400])
        queries = pd.DataFrame(self.X[400:410], columns=self.inputs,
                               index=range(400, 410))
        predicted = c.predict("py-frame-out", queries)
        frame = predicted.frame(c.info("py-frame-out").target_names,
                                truth=self.Y[400:410], index=queries.index)
        n, m = 10, len(self.targets)
        np.testing.assert_array_equal(frame.to_numpy()[:, :m], self.Y[400:410])
        for block, values in enumerate((predicted.y, predicted.lo,
                                        predicted.hi, predicted.spread)):
            np.testing.assert_array_equal(
                frame.to_numpy()[:, (block + 1) * m:(block + 2) * m], values)
        np.testing.assert_array_equal(frame["neighbors"], predicted.neighbors)
        self.assertEqual(list(range(400, 410)), list(frame.index))
        # The CLI's CSV for the same rows has the same columns.
        folder = tempfile.mkdtemp(prefix="frame_cli_")
        self.addCleanup(shutil.rmtree, folder)
        rows = os.path.join(folder, "rows.csv")
        pd.concat([queries, pd.DataFrame(
            self.Y[400:410], columns=["target_" + t for t in self.targets],
            index=queries.index)], axis=1).to_csv(rows, index=False,
                                                 float_format="%.17g")
        out = os.path.join(folder, "predictions.csv")
        subprocess.run([CLI, "--server", self.server.address, "predict",
                        "--model", "py-frame-out", "--csv", rows, "--out",
                        out], check=True, capture_output=True, timeout=60)
        written = pd.read_csv(out, float_precision="round_trip")
        self.assertEqual(n, len(written))
        self.assertEqual(list(written.columns), list(frame.columns))
        self.assertEqual(["tau1", "tau2"], list(frame.columns[:2]))
        self.assertEqual("predicted_tau1", frame.columns[m])
        np.testing.assert_array_equal(written.to_numpy()[:, :m],
                                      self.Y[400:410])
        with self.assertRaisesRegex(ValueError, "1 target names for "
                                    "predictions of 7 targets"):
            predicted.frame(["tau1"])

    def test_create_replaces_an_earlier_model_only_when_asked(self):
        c = self.client
        c.create("py-again", inputs=2, targets=1, replace=True)  # none yet
        self.addCleanup(c.delete, "py-again")
        c.learn("py-again", self.X[:10, :2], self.Y[:10, :1])
        with self.assertRaises(streamreg.Error) as refused:
            c.create("py-again", inputs=2, targets=1)
        self.assertEqual(grpc.StatusCode.ALREADY_EXISTS,
                         refused.exception.code)
        self.assertEqual(10, c.info("py-again").samples)
        info = c.create("py-again", inputs=3, targets=1, replace=True)
        self.assertEqual((3, 0), (info.input_dim, info.samples))

    def test_create_learn_predict_metric_and_delete_with_arrays(self):
        c = self.client
        info = c.create("py-arm", inputs=self.inputs, targets=self.targets,
                        metric="egop", linear_base=True)
        self.assertEqual(21, info.input_dim)
        self.assertEqual(self.targets, info.target_names)
        self.assertEqual("egop", info.metric)
        self.assertTrue(info.proto.spec.linear_base)
        summary = c.learn("py-arm", self.X[:1000], self.Y[:1000],
                          batch_size=250)
        self.assertEqual((1000, 0, 1000), (summary.accepted,
                                           summary.duplicates,
                                           summary.samples))
        self.assertIn("py-arm", [m.name for m in c.list()])
        info = c.info("py-arm")
        self.assertEqual(1000, info.samples)
        # Created and snapshotted (or, before a first snapshot, created)
        # a moment ago, by the server's clock.
        for moment in (info.created, info.snapshot):
            self.assertLess(abs((datetime.datetime.now(datetime.timezone.utc)
                                 - moment).total_seconds()), 300)
        self.assertEqual((7,), info.prequential_nmse.shape)

        held_out_x, held_out_y = self.X[1000:1100], self.Y[1000:1100]
        predictions = c.predict("py-arm", held_out_x)
        self.assertEqual((100, 7), predictions.y.shape)
        self.assertEqual((100, 7), predictions.spread.shape)
        self.assertEqual((100,), predictions.neighbors.shape)
        self.assertEqual(1000, predictions.samples)
        # Better than predicting the mean, on every torque.
        nmse = ((predictions.y - held_out_y) ** 2).mean(axis=0) / \
            held_out_y.var(axis=0)
        self.assertTrue(np.all(nmse < 0.5), nmse)
        # One query as a vector.
        self.assertEqual((1, 7), c.predict("py-arm", held_out_x[0]).y.shape)
        # Read after the ingest's position: the same answer; beyond what
        # the model holds: OUT_OF_RANGE, naming the field.
        after = c.predict("py-arm", held_out_x, min_learned=summary.samples)
        np.testing.assert_array_equal(predictions.y, after.y)
        self.assertEqual(1000, after.samples)
        with self.assertRaises(streamreg.Error) as caught:
            c.predict("py-arm", held_out_x, min_learned=1001)
        self.assertEqual(grpc.StatusCode.OUT_OF_RANGE, caught.exception.code)
        self.assertIn("min_learned", str(caught.exception))
        # A controller's stream, a query at a time as the model stands: the
        # same answers (the server answers them on the thread that read
        # them).
        with c.predict_stream("py-arm") as queries:
            for i in range(10):
                streamed = queries.predict(held_out_x[i], min_learned=0)
                np.testing.assert_array_equal(predictions.y[i], streamed.y[0])

        metric = c.metric("py-arm")
        self.assertEqual("egop", metric.kind)
        self.assertEqual(self.inputs, metric.input_names)
        learned = metric.metrics[0]
        self.assertEqual((21,), learned.weights.shape)
        self.assertEqual((21, 21), learned.eigenvectors.shape)
        self.assertTrue(np.all(np.diff(learned.eigenvalues) <= 0))
        # Orthonormal directions.
        np.testing.assert_allclose(learned.eigenvectors.T @
                                   learned.eigenvectors, np.eye(21),
                                   atol=1e-9)
        c.delete("py-arm")
        with self.assertRaises(streamreg.Error) as caught:
            c.info("py-arm")
        self.assertEqual(grpc.StatusCode.NOT_FOUND, caught.exception.code)

    def test_an_ingest_leaves_a_server_that_stops_answering_pings(self):
        stalled = _StalledRegression()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        regression_service_pb2_grpc.add_RegressionServiceServicer_to_server(
            stalled, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            self.client.create("py-stalled", inputs=self.inputs,
                               targets=self.targets)
            with streamreg.Client(f"127.0.0.1:{port},{self.server.address}",
                                  timeout=60,
                                  replica_attempt_timeout=0.2) as c:
                start = time.monotonic()
                summary = c.learn("py-stalled", self.X[:300], self.Y[:300],
                                  batch_size=100)
                took = time.monotonic() - start
            self.assertEqual(300, summary.accepted)
            self.assertEqual(1, stalled.ingests)
            # Left after a missed ping, not the call's 60 s.
            self.assertLess(took, 15)
        finally:
            stalled.released.set()
            server.stop(None)
            self.client.delete("py-stalled")

    def test_streams_go_on_at_the_next_server_when_theirs_stops(self):
        # Two servers given the same model and samples (the client is
        # given both, as a cluster's would be), the first killed under
        # open streams: each stream's next message goes to the second.
        first = RunningServer(SERVER, metrics="")
        self.addCleanup(first.stop)
        second = RunningServer(SERVER, metrics="")
        self.addCleanup(second.stop)
        for server in (first, second):
            with streamreg.Client(server.address, timeout=60) as c:
                c.create("py-moving", inputs=self.inputs,
                         targets=self.targets)
                c.learn("py-moving", self.X[:300], self.Y[:300])
                # Learned, not only logged: the streams' first read (info,
                # asked of the second server too if the first has not
                # answered within replica_attempt_timeout) must find the
                # first server caught up, or they may start on the second
                # (a slow build's learner behind an MLKR fit).
                self.assertEqual(300, c.info("py-moving").samples)
        with streamreg.Client(
                f"{first.address},{second.address}", timeout=60,
                retry=streamreg.RetryPolicy(max_backoff=0.2)) as c, \
                c.predict_stream("py-moving") as queries, \
                c.learn_stream("py-moving",
                               answer_when_durable=True) as samples:
            before = queries.predict(self.X[300:310]).y
            samples.learn(self.X[300], self.Y[300])  # on the first
            first.process.kill()
            first.process.wait()
            np.testing.assert_array_equal(
                before, queries.predict(self.X[300:310]).y)
            for i in range(301, 320):
                samples.learn(self.X[i], self.Y[i])
            self.assertEqual(20, samples.durable_samples)
        with streamreg.Client(second.address, timeout=60) as c:
            self.assertEqual(319, c.info("py-moving").samples)

    def test_the_realtime_channel_reads_predictions_made_ahead(self):
        self.client.create("py-channel", inputs=2, targets=1,
                           metric="euclidean")
        self.addCleanup(self.client.delete, "py-channel")

        def state(tick):
            return np.array([np.sin(tick / 50.0), np.cos(tick / 50.0)])

        def torque(x):
            return np.array([x[0] + 2 * x[1]])

        errors, truths, stale = [], [], []
        with self.client.realtime_channel("py-channel", horizon=8,
                                          batch_ticks=4) as channel:
            fallback = np.array([-7.0])
            none = channel.read(5, fallback)
            self.assertEqual("none", none.source)
            np.testing.assert_array_equal(fallback, none.y)
            self.assertTrue(np.isinf(none.lo).all())
            self.assertIsNone(channel.latest())
            for tick in range(300):
                desired = np.array([state(tick + k) for k in range(1, 9)])
                self.assertTrue(channel.hand(tick, state(tick),
                                             torque(state(tick)), desired))
                if tick < 100:
                    continue
                # The next tick's prediction, made ahead (a test's
                # patience, not a loop's: it never waits).
                deadline = time.monotonic() + 10
                reading = channel.read(tick + 1, fallback)
                while not reading.predicted and time.monotonic() < deadline:
                    time.sleep(0.001)
                    reading = channel.read(tick + 1, fallback)
                self.assertTrue(reading.predicted, f"tick {tick + 1}")
                self.assertGreaterEqual(reading.age_ticks, 1)
                self.assertLessEqual(reading.learned, tick + 1)
                self.assertEqual("wide", channel.read(
                    tick + 1, fallback, max_half_width=[-1.0]).source)
                errors.append(reading.y[0] - torque(state(tick + 1))[0])
                truths.append(torque(state(tick + 1))[0])
                stale.append(tick + 1 - reading.learned)
            latest = channel.latest()
            self.assertIsNotNone(latest)
            self.assertGreater(latest.tick, 290)
        with self.assertRaises(ValueError):
            channel.hand(300, state(300), torque(state(300)))
        # Predictions of the desired states, not of anything else: judged
        # on those made by a model that had learned the path up to 50 ticks
        # before. (This loop hands its ticks faster than a busy server
        # learns its first samples: the first readings can come from a
        # model of a few samples, 100 ticks behind, whose errors say
        # nothing of the channel; most readings are fresh.)
        fresh = np.array(stale) <= 50
        self.assertGreaterEqual(fresh.sum(), 100, f"stale: {stale}")
        nmse = (np.mean(np.square(np.array(errors)[fresh])) /
                np.var(truths))
        self.assertLess(nmse, 0.2)
        stats = channel.stats
        self.assertEqual(300, stats.samples_durable)
        self.assertEqual(0, stats.failures)
        self.assertEqual(300, self.client.info("py-channel").samples)

    def test_the_learn_stream_predicts_each_sample_before_learning_it(self):
        c = self.client
        c.create("py-loop", inputs=21, targets=7)
        c.learn("py-loop", self.X[:300], self.Y[:300])
        caught_up = 0
        answered = []  # the answers received, to check what the model says
        # The cautious mode: each answer once its sample is durable.
        with c.learn_stream("py-loop", answer_when_durable=True) as stream, \
                c.predict_stream("py-loop") as queries:
            for i in range(300, 340):
                before = c.predict("py-loop", self.X[i]).y[0]
                answer = stream.learn(self.X[i], self.Y[i])
                answered.append(answer.y)
                self.assertEqual(i + 1, answer.sequence)
                self.assertFalse(answer.duplicate)
                self.assertEqual(i - 300 + 1, answer.durable)
                # The answer is the model's prediction made once every
                # sample before this one was learned, and before this one.
                if answer.learned == answer.sequence - 1:
                    self.assertEqual(0, answer.unlearned)
                    np.testing.assert_array_equal(before, answer.y)
                    caught_up += 1
                streamed = queries.predict(self.X[i])
                # PredictStream answers as Predict does (after learning).
                np.testing.assert_array_equal(
                    c.predict("py-loop", self.X[i]).y, streamed.y)
        # Predict waited for every sample before it: each answer had.
        self.assertEqual(40, caught_up)
        self.assertEqual(340, c.info("py-loop").samples)
        # Answer first (the default): the prediction from the model as it
        # stands, durability reported after; close() waits for all of it.
        with c.learn_stream("py-loop") as stream:
            for i in range(340, 400):
                answer = stream.learn(self.X[i], self.Y[i])
                answered.append(answer.y)
                self.assertEqual(0, answer.sequence)
                self.assertLessEqual(answer.learned, i)
                self.assertLessEqual(answer.durable, i - 340 + 1)
                self.assertLessEqual(answer.learned + answer.unlearned,
                                     i + 1)
        self.assertEqual(60, stream.durable_samples)
        self.assertEqual(0, stream.unconfirmed_samples)
        info = c.info("py-loop")
        self.assertEqual(400, info.samples)
        # The model counts the errors of the answers it sent as this
        # client does on those it received.
        self.assertEqual(100, info.answers_sent)
        truth = self.Y[300:400]
        received = (np.mean((np.array(answered) - truth) ** 2, axis=0)
                    / np.var(truth, axis=0))
        np.testing.assert_allclose(info.answer_nmse, received, rtol=1e-9)
        c.delete("py-loop")

    def test_an_mlkr_model_reports_its_map_and_glml_its_gradients(self):
        c = self.client
        info = c.create("py-mlkr", inputs=self.inputs, targets=self.targets,
                        metric="mlkr", mlkr_rank=3)
        self.assertEqual(3, info.proto.spec.tuning.mlkr_rank)
        c.learn("py-mlkr", self.X[:600], self.Y[:600], batch_size=300)
        c.refit("py-mlkr")
        learned = c.metric("py-mlkr").metrics[0]
        self.assertEqual((3, 21), learned.map.shape)
        # Each input's weight is the diagonal of A^T A.
        np.testing.assert_allclose(np.diag(learned.map.T @ learned.map),
                                   learned.weights, rtol=1e-9, atol=1e-12)
        # A^T A of rank 3: nothing beyond the third eigenvalue.
        self.assertGreater(learned.eigenvalues[2], 0.0)
        self.assertLess(learned.eigenvalues[3], 1e-9 * learned.eigenvalues[0])
        c.delete("py-mlkr")

        c.create("py-glml", inputs=self.inputs, targets=self.targets,
                 metric="glml")
        c.learn("py-glml", self.X[:600], self.Y[:600])
        learned = c.metric("py-glml").metrics[0]
        self.assertEqual((7, 21), learned.gradient.shape)
        self.assertTrue(np.any(learned.gradient != 0.0))
        with self.assertRaises(streamreg.Error) as refused:
            c.create("py-glml-base", inputs=21, targets=7, metric="glml",
                     linear_base=True)
        self.assertEqual(grpc.StatusCode.INVALID_ARGUMENT,
                         refused.exception.code)
        self.assertIn("spec.linear_base", refused.exception.details)
        c.delete("py-glml")

    def test_the_base_options_reach_the_spec(self):
        c = self.client
        info = c.create("py-waves", inputs=self.inputs, targets=self.targets,
                        random_feature_base=True, per_target_base=True)
        self.assertTrue(info.proto.spec.HasField("random_feature_base"))
        self.assertEqual(64, info.proto.spec.random_feature_base.frequencies)
        self.assertTrue(info.proto.spec.per_target_base)
        c.learn("py-waves", self.X[:600], self.Y[:600])
        predictions = c.predict("py-waves", self.X[600:650])
        self.assertEqual((50, 7), predictions.y.shape)
        self.assertTrue(np.all(np.isfinite(predictions.y)))
        # The base's posterior variance, per query and target: positive,
        # and larger far from the data than within it.
        self.assertEqual((50, 7), predictions.base_variance.shape)
        self.assertTrue(np.all(predictions.base_variance > 0))
        far = c.predict("py-waves", 10 * self.X[600:601])
        self.assertTrue(np.all(far.base_variance[0] >
                               predictions.base_variance.max(axis=0)))
        with c.learn_stream("py-waves") as stream:
            answer = stream.learn(self.X[650], self.Y[650])
        self.assertEqual((7,), answer.base_variance.shape)
        c.delete("py-waves")
        info = c.create("py-plane", inputs=21, targets=7)
        self.assertFalse(info.proto.spec.HasField("random_feature_base"))
        c.learn("py-plane", self.X[:100], self.Y[:100])
        self.assertIsNone(c.predict("py-plane", self.X[100:101]).base_variance)
        c.delete("py-plane")

    def test_combined_candidates_report_their_weights(self):
        c = self.client
        info = c.create("py-combined", inputs=self.inputs,
                        targets=self.targets, regressor="auto",
                        per_target_base=True, combine=True)
        self.assertTrue(info.proto.spec.combine)
        c.learn("py-combined", self.X[:600], self.Y[:600])
        stats = c.info("py-combined").proto.stats
        self.assertEqual(["knn+base", "local_linear+base", "knn",
                          "local_linear", "base"], list(stats.candidates))
        weights = np.array(stats.candidate_weights).reshape(7, 5)
        np.testing.assert_allclose(weights.sum(axis=1), np.ones(7))
        self.assertTrue(np.all(weights >= 0))
        c.delete("py-combined")

    def test_every_prediction_carries_its_interval(self):
        c = self.client
        c.create("py-bands", inputs=self.inputs, targets=self.targets,
                 interval_level=0.8)
        self.assertAlmostEqual(0.8, c.info("py-bands").proto.spec
                               .interval_level)
        c.learn("py-bands", self.X[:1000], self.Y[:1000])
        p = c.predict("py-bands", self.X[1000:1100])
        self.assertEqual((100, 7), p.lo.shape)
        self.assertEqual((100, 7), p.hi.shape)
        self.assertTrue(np.all(p.lo < p.y) and np.all(p.y < p.hi))
        # Another level on request: the 95% intervals hold the 80% ones.
        wide = c.predict("py-bands", self.X[1000:1100], interval_level=0.95)
        np.testing.assert_array_equal(p.y, wide.y)
        self.assertTrue(np.all(wide.lo < p.lo) and np.all(p.hi < wide.hi))
        with self.assertRaises(streamreg.Error) as caught:
            c.predict("py-bands", self.X[1000:1001], interval_level=1.0)
        self.assertEqual(grpc.StatusCode.INVALID_ARGUMENT,
                         caught.exception.code)
        self.assertIn("interval_level", caught.exception.details)
        with c.learn_stream("py-bands") as stream:
            answer = stream.learn(self.X[1000], self.Y[1000])
        self.assertEqual((7,), answer.lo.shape)
        self.assertTrue(np.all(answer.lo < answer.y))
        with c.predict_stream("py-bands") as queries:
            streamed = queries.predict(self.X[1100:1102], interval_level=0.95)
        self.assertEqual((2, 7), streamed.hi.shape)
        c.delete("py-bands")

    def test_a_prediction_lists_the_samples_it_used_on_request(self):
        c = self.client
        c.create("py-near", inputs=self.inputs, targets=self.targets,
                 metric="euclidean", regressor="knn", linear_base=False)
        ids = np.arange(1, 501, dtype=np.uint64) * 7
        for bad in (ids[:10], np.zeros(500, dtype=np.uint64),
                    np.full(500, 3), ids.astype(np.float64)):
            with self.assertRaises(ValueError) as caught:
                c.learn("py-near", self.X[:500], self.Y[:500], sample_ids=bad)
            self.assertIn("sample_ids", str(caught.exception))
        self.assertEqual(0, c.info("py-near").samples)
        c.learn("py-near", self.X[:500], self.Y[:500], sample_ids=ids)
        p = c.predict("py-near", self.X[600:603], with_neighbors=True)
        self.assertIsNone(c.predict("py-near", self.X[600:603]).used)
        self.assertEqual(3, len(p.used))
        for i in range(3):
            self.assertEqual(7, len(p.used[i]))
            for t in range(7):
                used = p.used[i][t]
                k = len(used.y)
                self.assertGreaterEqual(k, max(p.neighbors[i], 1))
                self.assertEqual((k, 21), used.x.shape)
                self.assertTrue(np.all(np.diff(used.distance) >= 0))
                # Each neighbour is a learned row, named by its id: its
                # inputs and its target are that row's.
                rows = (used.sample_id // 7 - 1).astype(np.int64)
                np.testing.assert_array_equal(ids[rows], used.sample_id)
                np.testing.assert_array_equal(self.X[rows], used.x)
                np.testing.assert_array_equal(self.Y[rows, t], used.y)
                # k-NN averages them: the prediction is their mean.
                self.assertAlmostEqual(used.y.mean(), p.y[i, t], places=9)
        with c.predict_stream("py-near") as queries:
            streamed = queries.predict(self.X[600], with_neighbors=True)
        np.testing.assert_array_equal(p.used[0][0].sample_id,
                                      streamed.used[0][0].sample_id)
        c.delete("py-near")

    def test_a_bad_sample_is_named_and_nothing_of_its_batch_learned(self):
        c = self.client
        c.create("py-bad", inputs=2, targets=1)
        x = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0]])
        with self.assertRaises(streamreg.Error) as caught:
            c.learn("py-bad", x, np.array([1.0, 2.0, 3.0]))
        self.assertEqual(grpc.StatusCode.INVALID_ARGUMENT,
                         caught.exception.code)
        self.assertIn("samples[1].x[0]: NaN", caught.exception.details)
        self.assertEqual(0, c.info("py-bad").samples)
        # Shapes that do not match are refused before anything is sent.
        with self.assertRaises(ValueError):
            c.learn("py-bad", np.zeros((3, 2)), np.zeros((2, 1)))
        with self.assertRaises(ValueError):
            c.create("py-other", inputs=2, targets=1, metric="nope")
        c.delete("py-bad")

    def test_the_context_manager_closes_its_channels(self):
        with streamreg.Client(self.server.address) as client:
            client.list()
            channel = next(iter(client._channels.values()))[0]
        self.assertEqual({}, client._channels)
        with self.assertRaises(ValueError):  # grpc: a closed channel
            channel.unary_unary("/x")(b"")

    def test_an_unreachable_server_is_retried_until_the_deadline(self):
        policy = streamreg.RetryPolicy(deadline=1.5, max_backoff=0.2,
                                       attempts=1000)
        client = streamreg.Client(f"127.0.0.1:{free_port()}", timeout=0.5,
                                  retry=policy, connect_within=None)
        start = time.monotonic()
        with self.assertRaises(streamreg.Error) as caught:
            client.list()
        elapsed = time.monotonic() - start
        self.assertIn(caught.exception.code,
                      {grpc.StatusCode.UNAVAILABLE,
                       grpc.StatusCode.DEADLINE_EXCEEDED})
        self.assertGreater(elapsed, 0.5)  # it did retry
        self.assertLess(elapsed, 10.0)    # and gave up near its deadline
        client.close()

    def test_a_server_that_starts_late_is_reached_by_retries(self):
        port = free_port()
        client = streamreg.Client(
            f"127.0.0.1:{port}", timeout=1.0, connect_within=None,
            retry=streamreg.RetryPolicy(deadline=60.0, attempts=1000,
                                        max_backoff=0.3))
        started = []
        timer = threading.Timer(
            1.0, lambda: started.append(
                RunningServer(SERVER, f"127.0.0.1:{port}", metrics="")))
        timer.start()
        try:
            self.assertEqual([], client.list())
        finally:
            timer.join()
            client.close()
            for server in started:
                server.stop()

    def test_overload_refusals_do_not_spend_the_attempts(self):
        # A server alive but slower than the writes says "retry in 1 ms"
        # ten times; three attempts would have given up after the third.
        client = streamreg.Client(
            f"127.0.0.1:{free_port()}", connect_within=None,
            retry=streamreg.RetryPolicy(attempts=3, deadline=30.0))
        refusals = []

        def call(models, regression, timeout):
            if len(refusals) < 10:
                refusals.append(timeout)
                raise streamreg.Error(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                      "overloaded", retry_after=0.001)
            return "learned"

        try:
            self.assertEqual("learned", client._call("arm", call))
            self.assertEqual(10, len(refusals))
            # Other failures still count: the third UNAVAILABLE is final.
            failures = []

            def down(models, regression, timeout):
                failures.append(timeout)
                raise streamreg.Error(grpc.StatusCode.UNAVAILABLE, "down")

            with self.assertRaises(streamreg.Error):
                client._call("arm", down)
            self.assertEqual(3, len(failures))
        finally:
            client.close()

    def test_overload_refusals_wait_for_the_servers_hint(self):
        policy = streamreg.RetryPolicy(longest_retry_after=30.0)
        hinted = streamreg.Error(grpc.StatusCode.RESOURCE_EXHAUSTED, "full",
                                 retry_after=0.25)
        unhinted = streamreg.Error(grpc.StatusCode.RESOURCE_EXHAUSTED, "max")
        self.assertTrue(policy.should_retry(hinted))
        self.assertEqual(0.25, policy.wait_before(0, hinted))
        self.assertFalse(policy.should_retry(unhinted))
        far = streamreg.Error(grpc.StatusCode.RESOURCE_EXHAUSTED, "x",
                              retry_after=3600.0)
        self.assertEqual(30.0, policy.wait_before(0, far))
        self.assertFalse(policy.should_retry(streamreg.Error(
            grpc.StatusCode.INVALID_ARGUMENT, "bad")))
        for attempt in range(10):
            wait = policy.wait_before(attempt, streamreg.Error(
                grpc.StatusCode.UNAVAILABLE, "down"))
            self.assertGreaterEqual(wait, 0.0)
            self.assertLessEqual(wait, min(policy.max_backoff,
                                           policy.initial_backoff * 2 **
                                           attempt))

    def test_the_robot_loop_example_runs(self):
        rows = os.path.join(self.server.scratch, "sarcos_600.csv")
        with open(SARCOS) as source, open(rows, "w") as out:
            for i, line in enumerate(source):
                if i > 600:
                    break
                out.write(line)
        example = os.path.join(REPO, "client/python/examples/robot_loop.py")
        # Twice in a row: the second run starts a fresh model, not one with
        # the first run's samples (nor fails on the name).
        for run in range(2):
            result = subprocess.run([sys.executable, example,
                                     self.server.address, rows],
                                    capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(0, result.returncode,
                             f"run {run}: {result.stdout}{result.stderr}")
            found = re.search(
                r"600 ticks, nMSE of the second half: \[([^\]]*)\]",
                result.stdout)
            self.assertIsNotNone(found, result.stdout + result.stderr)
            nmse = [float(v) for v in found.group(1).split()]
            self.assertEqual(7, len(nmse))
            self.assertTrue(all(0 <= v < 1 for v in nmse), nmse)
            # Replaced, not added to: the run's samples only.
            self.assertEqual(600, self.client.info("arm-loop").samples)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
