"""Bidirectional streams in lockstep: one message sent, its answer read."""

import collections
import queue
import threading
import time
from typing import Callable, Iterator, Optional

import grpc
import numpy as np

from streamreg.errors import Error, one_line
from streamreg.retry import RetryPolicy
from streamreg.results import AheadAnswer, Predictions, StreamPrediction
from streamreg.v1 import regression_pb2
from streamreg.v1 import regression_service_pb2

_END = object()


def _values(predictions, field: str) -> np.ndarray:
    """`field` (y, lower, upper) of each of `predictions`, as rows (n, m)
    ((0, 0) for none)."""
    if not predictions:
        return np.zeros((0, 0))
    return np.array([list(getattr(p, field)) for p in predictions],
                    dtype=np.float64)


class NoAnswer(Error):
    """A stream's message not answered within its attempt timeout: the
    stream was cancelled (its server stalled or paused)."""


class _Watchdog:
    """Runs `action` if a deadline armed passes before it is disarmed: one
    thread per stream, started on first use (not one per message: a
    1 kHz loop arms it every tick)."""

    def __init__(self, action: Callable[[], None]):
        self._action = action
        self._condition = threading.Condition()
        self._deadline: Optional[float] = None
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def arm(self, timeout: float) -> None:
        with self._condition:
            self._deadline = time.monotonic() + timeout
            if self._thread is None:
                self._thread = threading.Thread(target=self._run,
                                                daemon=True)
                self._thread.start()
            self._condition.notify()

    def disarm(self) -> None:
        with self._condition:
            self._deadline = None

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._deadline = None
            self._condition.notify()

    def _run(self) -> None:
        with self._condition:
            while not self._stopped:
                if self._deadline is None:
                    self._condition.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._condition.wait(left)
                    continue
                self._deadline = None
                self._action()


class _Lockstep:
    """A bidi call fed from a queue: exchange() sends a request and waits
    for its answer. Not retried (a stream of samples is the caller's to
    resume); a failed stream raises Error and stays failed."""

    def __init__(self, open_call: Callable[[Iterator], Iterator]):
        self._requests: "queue.Queue" = queue.Queue()
        self._responses = open_call(iter(self._requests.get, _END))
        self._closed = False
        self._stalled = threading.Event()
        self._watchdog = _Watchdog(self._cancel_stalled)

    def _cancel_stalled(self) -> None:
        self._stalled.set()
        self._responses.cancel()

    def exchange(self, request, timeout: Optional[float] = None):
        """Sends `request` and returns its answer; with `timeout`, cancels
        the stream if the answer has not come within that many seconds
        (NoAnswer)."""
        if self._closed:
            raise ValueError("the stream is closed")
        self._requests.put(request)
        if timeout is not None:
            self._watchdog.arm(timeout)
        try:
            return next(self._responses)
        except grpc.RpcError as error:
            self._closed = True
            self._watchdog.stop()
            if self._stalled.is_set():
                raise NoAnswer(grpc.StatusCode.UNAVAILABLE,
                               f"no answer within {timeout:g} s; the "
                               f"stream was cancelled") from None
            raise Error.from_rpc_error(error) from None
        except StopIteration:
            self._closed = True
            self._watchdog.stop()
            raise Error(grpc.StatusCode.UNAVAILABLE,
                        "the server ended the stream") from None
        finally:
            self._watchdog.disarm()

    def close_quietly(self) -> None:
        """Ends a broken stream without reading what is left."""
        self._watchdog.stop()
        self._closed = True
        self._requests.put(_END)
        self._responses.cancel()

    def finish(self) -> list:
        """Half-closes the stream and reads what the server still sends
        until it ends the call: those messages, or Error."""
        self._watchdog.stop()
        self._closed = True
        self._requests.put(_END)
        try:
            return list(self._responses)
        except grpc.RpcError as error:
            raise Error.from_rpc_error(error) from None

    def trailer(self, key: str):
        """A trailer of the ended call (None if absent)."""
        for name, value in self._responses.trailing_metadata() or ():
            if name == key:
                return value
        return None

    def close(self) -> None:
        """Ends the stream and waits for the server to end it too."""
        if self._closed:
            return
        try:
            self.finish()
        except Error as error:
            if error.code != grpc.StatusCode.CANCELLED:
                raise

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class _ReopenedCall:
    """A lockstep call that is opened on first use and opened again after
    it breaks (the base of LearnStream and PredictStream): `open_call`
    opens one (on the server the client routes the model to now), each
    attempt runs on the current call, and a failed attempt closes it, tells
    `failed(error)` (so the client's router sends the next call elsewhere
    if that server failed or named others) and is repeated as `retry`
    allows. `attempt_timeout()`: how long to wait for an answer before the
    call is given up as stalled (None: as long as it takes), which fails
    the attempt with NoAnswer."""

    def __init__(self, open_call, retry: RetryPolicy,
                 attempt_timeout: Callable[[], Optional[float]],
                 failed: Callable[[Error], None]):
        self._open_call = open_call
        self._retry = retry
        self._attempt_timeout = attempt_timeout
        self._failed = failed
        self._call: Optional[_Lockstep] = None

    def _retried(self, attempt):
        """attempt() on the current call, the call reopened after a failure
        and the attempt repeated as `retry` says."""
        def once(_seconds_left):
            try:
                return attempt()
            except Error as error:
                self._broken()
                self._failed(error)
                raise
        return self._retry.run(once)

    def _open(self) -> None:
        self._call = _Lockstep(self._open_call)

    def _exchange(self, request):
        """`request`'s answer on the current call (opened if there is
        none)."""
        if self._call is None:
            self._open()
        return self._call.exchange(request, timeout=self._attempt_timeout())

    def _broken(self) -> None:
        if self._call is not None:
            self._call.close_quietly()
            self._call = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()  # the stream's own


@one_line
class LearnStream(_ReopenedCall):
    """The robot's loop over a Learn stream: learn(x, y) sends a sample and
    returns the model's prediction for it made before learning it. The
    server answers first and makes the sample durable after; each answer
    says how many of the stream's samples are durable (the watermark). The
    stream keeps every sample until the watermark covers it: if the call
    breaks with a retryable status, a new one is opened and the samples not
    yet covered are sent again first (their ids make that exactly once),
    then the current one. close() waits until every sample is durable.
    `answer_when_durable` asks the server to answer each sample only once it
    is durable (the cautious mode). `attempt_timeout()`: how long to wait
    for a sample's answer before the call is given up as stalled (None:
    as long as it takes). `failed(error)` is told of each failure (a
    stalled call's is NoAnswer), before the samples go on a new call (where
    the model has another server, the client passes the failed one over).
    Use as a context manager, or close() it."""

    def __init__(self, open_call, model: str, next_id: Callable[[], int],
                 retry: RetryPolicy = RetryPolicy(),
                 answer_when_durable: bool = False,
                 attempt_timeout: Callable[[], Optional[float]] = (
                     lambda: None),
                 failed: Callable[[Error], None] = lambda error: None):
        super().__init__(open_call, retry, attempt_timeout, failed)
        self._model = model
        self._next_id = next_id
        self._answer_when_durable = answer_when_durable
        # [request, its message number on the current call (0: not sent
        # there), when it was first sent, the samples it holds], in order.
        self._unconfirmed: "collections.deque" = collections.deque()
        self._messages = 0
        self._closed = False
        self.durable_samples = 0

    @property
    def unconfirmed_samples(self) -> int:
        """Samples sent and not yet reported durable."""
        return sum(entry[3] for entry in self._unconfirmed)

    def durability_lag(self) -> float:
        """Seconds the oldest sample not yet reported durable has waited
        since it was first sent (0 when none waits)."""
        if not self._unconfirmed:
            return 0.0
        return time.monotonic() - self._unconfirmed[0][2]

    def learn(self, x, y) -> StreamPrediction:
        if self._closed:
            raise ValueError("the stream is closed")
        sample = regression_pb2.Sample(
            x=np.asarray(x, dtype=np.float64).ravel().tolist(),
            y=np.asarray(y, dtype=np.float64).ravel().tolist(),
            sample_id=self._next_id())
        response = self._send_new(regression_service_pb2.LearnRequest(
            model=self._model, sample=sample,
            answer_when_durable=self._answer_when_durable), 1)
        p = response.prediction
        return StreamPrediction(
            y=np.array(p.y), spread=np.array(p.spread),
            lo=np.array(p.lower), hi=np.array(p.upper),
            neighbors=p.neighbors, sequence=response.sequence,
            learned=response.learned,
            learn_lag=response.learn_lag_us / 1e6,
            duplicate=response.duplicate, unlearned=response.unlearned,
            durable=self.durable_samples,
            base_variance=(np.array(p.base_variance)
                           if len(p.base_variance) else None))

    def learn_ahead(self, x, y, ahead=None, ahead_ids=None,
                    sample_ids=None,
                    answer_samples: bool = True) -> AheadAnswer:
        """One message of a loop that predicts ahead of its ticks: the
        samples x (n, d), y (n, m) of the ticks since the last call
        (LearnRequest.samples; n may be 0), and the points `ahead` (k, d)
        whose predictions the loop wants before their ticks come
        (LearnRequest.ahead), each naming by `ahead_ids` the sample id its
        tick's sample will carry (by which the server scores it) — those
        samples' `sample_ids` then (default: the client's own). Without
        `answer_samples` the samples are not answered (skip_answers; not
        in the cautious mode). Resent and confirmed as learn()'s sample
        is."""
        if self._closed:
            raise ValueError("the stream is closed")
        xs = np.asarray(x, dtype=np.float64)
        ys = np.asarray(y, dtype=np.float64)
        n = xs.shape[0] if xs.size else 0
        request = regression_service_pb2.LearnRequest(
            model=self._model, answer_when_durable=self._answer_when_durable,
            skip_answers=not answer_samples)
        for i in range(n):
            request.samples.add(
                x=xs[i].ravel().tolist(), y=ys[i].ravel().tolist(),
                sample_id=(int(sample_ids[i]) if sample_ids is not None
                           else self._next_id()))
        points = (np.asarray(ahead, dtype=np.float64) if ahead is not None
                  else np.zeros((0, 0)))
        for i in range(points.shape[0] if points.size else 0):
            request.ahead.add(
                x=points[i].ravel().tolist(),
                sample_id=int(ahead_ids[i]) if ahead_ids is not None else 0)
        if not request.samples and not request.ahead:
            raise ValueError("learn_ahead: no sample and no point ahead")
        response = self._send_new(request, n)
        return AheadAnswer(
            y=_values(response.predictions, "y"),
            lo=_values(response.predictions, "lower"),
            hi=_values(response.predictions, "upper"),
            ahead_y=_values(response.ahead, "y"),
            ahead_lo=_values(response.ahead, "lower"),
            ahead_hi=_values(response.ahead, "upper"),
            learned=response.learned, unlearned=response.unlearned,
            durable=self.durable_samples)

    def _send_new(self, request, samples: int):
        """Sends `request`, holding `samples` samples, until answered or
        failed for good; a failed one is given up (the caller has its
        error), the ones before it kept."""
        entry = [request, 0, time.monotonic(), samples]
        self._unconfirmed.append(entry)
        try:
            return self._retried(lambda: self._send_last(entry))
        except Error:
            if self._unconfirmed and self._unconfirmed[-1] is entry:
                self._unconfirmed.pop()
            raise

    def close(self) -> None:
        """Waits until the server reports every sample durable (resending
        on a new call if this one breaks), then ends the stream."""
        if self._closed:
            return
        self._closed = True
        if self._call is None and not self._unconfirmed:
            return
        self._retried(self._finish)

    def _send_last(self, entry):
        if self._call is None:
            self._reopen(keep=1)
        return self._send(entry)

    def _reopen(self, keep: int) -> None:
        self._open()
        self._messages = 0
        earlier = list(self._unconfirmed)[:len(self._unconfirmed) - keep]
        for entry in earlier:
            if any(entry is e for e in self._unconfirmed):
                self._send(entry)

    def _send(self, entry):
        self._messages += 1
        entry[1] = self._messages
        response = self._exchange(entry[0])
        self._confirm(response.durable_messages)
        return response

    def _confirm(self, watermark: int) -> None:
        while (self._unconfirmed and
               0 < self._unconfirmed[0][1] <= watermark):
            self.durable_samples += self._unconfirmed.popleft()[3]

    def _finish(self) -> None:
        if self._call is None:
            self._reopen(keep=0)
        call, self._call = self._call, None
        for response in call.finish():
            self._confirm(response.durable_messages)
        # Ended OK: every message of the call is durable, as its trailer
        # says.
        durable = call.trailer("streamreg-durable-messages")
        self._confirm(int(durable) if durable is not None else self._messages)
        if self._unconfirmed:
            for entry in self._unconfirmed:
                entry[1] = 0
            raise Error(grpc.StatusCode.UNAVAILABLE,
                        f"the server ended the stream with "
                        f"{self.unconfirmed_samples} samples not reported "
                        f"durable")

    def _broken(self) -> None:
        super()._broken()
        for entry in self._unconfirmed:
            entry[1] = 0


@one_line
class PredictStream(_ReopenedCall):
    """Predictions over a PredictStream stream, with no call set-up per
    query: predict(x) returns the model's predictions for x (d,) or
    (n, d). A query whose call breaks, or is not answered within
    `attempt_timeout()` (a stalled server), is asked again on a new call as
    `retry` allows, after `failed(error)` is told (so the client sends the
    new call to another server of the model). Use as a context manager, or
    close() it."""

    def __init__(self, open_call, model: str,
                 retry: RetryPolicy = RetryPolicy(),
                 attempt_timeout: Callable[[], Optional[float]] = (
                     lambda: None),
                 failed: Callable[[Error], None] = lambda error: None):
        super().__init__(open_call, retry, attempt_timeout, failed)
        self._model = model
        self._closed = False

    def predict(self, x, interval_level=None, with_neighbors=False,
                min_learned=None) -> Predictions:
        """As Client.predict (min_learned: what the answer has learned at
        least)."""
        if self._closed:
            raise ValueError("the stream is closed")
        rows = np.atleast_2d(np.asarray(x, dtype=np.float64))
        request = regression_service_pb2.PredictRequest(
            model=self._model,
            queries=[regression_pb2.Query(x=row.tolist()) for row in rows],
            interval_level=interval_level, with_neighbors=with_neighbors,
            min_learned=min_learned)
        response = self._retried(lambda: self._exchange(request))
        return Predictions.from_protos(list(response.predictions),
                                       response.num_samples, rows.shape[1])

    def close(self) -> None:
        """Ends the stream and waits for the server to end it too."""
        self._closed = True
        call, self._call = self._call, None
        if call is not None:
            call.close()
