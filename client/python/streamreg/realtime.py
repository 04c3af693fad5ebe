"""A control loop's link to a model that never waits for the server: the
C++ RealtimeChannel's shape, for simulations and notebooks (Python is not
real-time: the calls do not block on the network, but take a lock)."""

import collections
import dataclasses
import random
import threading
from typing import Dict, Optional

import grpc
import numpy as np

from streamreg.errors import Error
from streamreg.retry import RetryPolicy
from streamreg.streams import LearnStream

# The most samples, and points ahead, in one Learn message (docs/api.md,
# "Limits").
_MESSAGE_SAMPLES = 1024
_MESSAGE_POINTS = 1024


@dataclasses.dataclass(frozen=True)
class Reading:
    """What RealtimeChannel.read gave for a tick: `source` is "prediction"
    (y, lo, hi are the prediction made for the tick's desired state) or,
    with the caller's fallback in y and an infinite interval, "none" (no
    prediction of the tick arrived in time), "stale" (older than
    max_age_ticks) or "wide" (an interval wider than max_half_width).
    `learned`: the samples the model had learned when it made the
    prediction; `age_ticks`: how many ticks before this one it was asked
    for (both 0 without one)."""
    tick: int
    source: str
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    learned: int = 0
    age_ticks: int = 0

    @property
    def predicted(self) -> bool:
        return self.source == "prediction"


@dataclasses.dataclass
class ChannelStats:
    """Counts of a RealtimeChannel (as its C++ namesake's)."""
    samples_handed: int = 0
    samples_dropped: int = 0
    samples_sent: int = 0
    samples_durable: int = 0
    samples_refused: int = 0
    messages: int = 0
    failures: int = 0
    predictions: int = 0
    last_error: Optional[Error] = None


class RealtimeChannel:
    """hand(tick, x, y, desired) queues tick's measured sample (to be
    learned) and the desired states of the ticks after it (rows for ticks
    tick + 1, tick + 2, ..., up to `horizon`; those handed before are
    skipped); read(tick, fallback) gives the prediction made for the tick's
    desired state, or the fallback when none came in time or it is outside
    the bounds; latest() the newest prediction that arrived. Neither waits
    for the server: a courier thread sends `batch_ticks` samples a Learn
    message with the desired states as points ahead (each naming its
    tick's sample id, so the server scores its predictions ahead), or at
    once when a desired state is due within `lead_ticks`, resends
    what a broken stream did not confirm, and, when a message fails for
    good, sends it again after `retry_pause` seconds while the channel
    lives. At most `capacity` samples wait; more are dropped and counted.
    close() sends what waits and returns once the server reports every
    sample durable. Use as a context manager, or close() it."""

    def __init__(self, stream: LearnStream, inputs: int, targets: int,
                 horizon: int = 20, batch_ticks: int = 5,
                 capacity: int = 16384, retry_pause: float = 0.2,
                 lead_ticks: int = 3):
        if horizon < 1 or batch_ticks < 1:
            raise ValueError("horizon and batch_ticks: at least 1")
        self._stream = stream
        self._inputs, self._targets = inputs, targets
        self._horizon, self._batch = horizon, batch_ticks
        self._lead = lead_ticks
        self._capacity, self._retry_pause = capacity, retry_pause
        # Tick t's sample carries id _id_base + t, which its point ahead
        # names.
        self._id_base = (random.getrandbits(31) + 1) << 32
        self._lock = threading.Condition()
        self._samples: "collections.deque" = collections.deque()
        self._states: "collections.deque" = collections.deque()
        self._states_through = -1
        self._tick = -1  # the loop's newest tick
        self._kept: Dict[int, Reading] = {}
        self._latest: Optional[Reading] = None
        self._closing = False
        self._stopped = False
        self._stats = ChannelStats()
        # What close() raises: the stream's closing error, or what ended
        # the courier.
        self._closing_error: Optional[Exception] = None
        self._courier = threading.Thread(target=self._run, daemon=True)
        self._courier.start()

    def hand(self, tick: int, x=None, y=None, desired=None) -> bool:
        """Queues tick's sample (x: (d,), y: (m,); None for none) and the
        new rows of desired (k, d), k <= horizon; False when the sample
        was dropped (the queue full). Raises ValueError on a wrong shape
        or a non-finite value, or after close()."""
        sample = None
        if x is not None or y is not None:
            sample = (np.asarray(x, dtype=np.float64).ravel(),
                      np.asarray(y, dtype=np.float64).ravel())
            if (sample[0].size != self._inputs or
                    sample[1].size != self._targets):
                raise ValueError(
                    f"tick {tick}: x has {sample[0].size} values and y "
                    f"{sample[1].size}; expected {self._inputs} and "
                    f"{self._targets}")
            if not (np.isfinite(sample[0]).all() and
                    np.isfinite(sample[1]).all()):
                raise ValueError(f"tick {tick}: a value is not finite")
        rows = (np.asarray(desired, dtype=np.float64).reshape(
            -1, self._inputs) if desired is not None else
            np.zeros((0, self._inputs)))
        if rows.shape[0] > self._horizon:
            raise ValueError(f"tick {tick}: {rows.shape[0]} desired states; "
                             f"at most horizon={self._horizon}")
        with self._lock:
            if self._closing:
                raise ValueError("the channel is closed")
            self._tick = tick
            queued = True
            if sample is not None:
                if len(self._samples) < self._capacity:
                    self._samples.append((tick, *sample))
                    self._stats.samples_handed += 1
                else:
                    self._stats.samples_dropped += 1
                    queued = False
            for k, row in enumerate(rows, start=1):
                if tick + k > self._states_through:
                    self._states.append((tick + k, row.copy()))
                    self._states_through = tick + k
            self._lock.notify()
            return queued

    def read(self, tick: int, fallback=None, max_half_width=None,
             max_age_ticks: Optional[int] = None) -> Reading:
        """Tick's prediction, or `fallback` (m,) (NaN if None) when none
        arrived, or it was asked more than max_age_ticks ticks before, or
        a target's interval half width exceeds max_half_width (m,)."""
        with self._lock:
            kept = self._kept.get(tick)
        fallback_y = (np.asarray(fallback, dtype=np.float64) if fallback
                      is not None else np.full(self._targets, np.nan))
        source = "none"
        if kept is not None:
            source = "prediction"
            if max_age_ticks is not None and kept.age_ticks > max_age_ticks:
                source = "stale"
            elif max_half_width is not None and not np.all(
                    (kept.hi - kept.lo) / 2 <= np.asarray(max_half_width)):
                source = "wide"
        if source == "prediction":
            return dataclasses.replace(kept, tick=tick)
        infinite = np.full(self._targets, np.inf)
        return Reading(tick=tick, source=source, y=fallback_y, lo=-infinite,
                       hi=infinite,
                       learned=kept.learned if kept is not None else 0,
                       age_ticks=kept.age_ticks if kept is not None else 0)

    def latest(self) -> Optional[Reading]:
        """The newest prediction that arrived (for the farthest tick asked),
        or None before any."""
        with self._lock:
            return self._latest

    @property
    def stats(self) -> ChannelStats:
        with self._lock:
            return dataclasses.replace(self._stats)

    def close(self, timeout: float = 30.0) -> None:
        """Sends what waits and waits until the server reports every
        sample durable; raises Error (DEADLINE_EXCEEDED) after `timeout`
        seconds, the rest given up."""
        with self._lock:
            self._closing = True
            self._lock.notify()
        self._courier.join(timeout)
        if self._courier.is_alive():
            with self._lock:
                self._stopped = True
                self._lock.notify()
            raise Error(grpc.StatusCode.DEADLINE_EXCEEDED,
                        f"the server did not report every sample durable "
                        f"within {timeout} s; given up")
        if self._closing_error is not None:
            raise self._closing_error

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _run(self) -> None:
        try:
            self._courier_loop()
        except Exception as error:  # a bug: told by close(), not lost
            self._closing_error = error
            raise

    def _courier_loop(self) -> None:
        pending_samples: list = []
        pending_states: list = []
        while True:
            with self._lock:
                self._lock.wait_for(
                    lambda: self._stopped or self._closing or
                    self._ready(pending_samples, pending_states), timeout=0.05)
                if self._stopped:
                    return
                while self._samples and len(pending_samples) < \
                        self._capacity:
                    pending_samples.append(self._samples.popleft())
                while self._states:
                    pending_states.append(self._states.popleft())
                now, closing = self._tick, self._closing
            pending_states = [s for s in pending_states if s[0] > now]
            if closing and not pending_samples:
                self._finish()
                return
            if not (closing or self._due(pending_samples, pending_states,
                                         now)):
                continue
            if not self._send(pending_samples, pending_states, now, closing):
                with self._lock:
                    self._lock.wait_for(lambda: self._stopped,
                                        timeout=self._retry_pause)

    def _ready(self, samples, states) -> bool:
        return len(self._samples) + len(samples) >= self._batch or bool(
            self._states)

    def _due(self, samples, states, now: int) -> bool:
        """Whether to send now: a batch of samples waits, or a sample has
        waited a batch's ticks, or a desired state is due within
        lead_ticks."""
        return bool(samples) and (len(samples) >= self._batch or
                                  samples[0][0] + self._batch <= now) or \
            bool(states) and states[0][0] <= now + self._lead

    def _send(self, samples: list, states: list, asked_at: int,
              closing: bool) -> bool:
        """Sends one message of the first pending samples and states,
        removing them; False when it failed and should be sent again."""
        batch = samples[:_MESSAGE_SAMPLES]
        # The states due before the next message could bring their
        # predictions (asked as late as that allows); later ones wait.
        window = asked_at + self._batch + self._lead
        points = [] if closing else [
            s for s in states[:_MESSAGE_POINTS] if s[0] <= window]
        try:
            answer = self._stream.learn_ahead(
                np.array([s[1] for s in batch]).reshape(len(batch), -1),
                np.array([s[2] for s in batch]).reshape(len(batch), -1),
                ahead=(np.array([p[1] for p in points]) if points else None),
                ahead_ids=[self._id_base + p[0] for p in points],
                sample_ids=[self._id_base + s[0] for s in batch],
                answer_samples=False)
        except Error as error:
            with self._lock:
                self._stats.failures += 1
                self._stats.last_error = error
                if RetryPolicy().should_retry(error):
                    return False
                self._stats.samples_refused += len(batch)
        else:
            with self._lock:
                self._stats.messages += 1
                self._stats.samples_sent += len(batch)
                self._stats.samples_durable = self._stream.durable_samples
                self._stats.predictions += len(points)
                for i, (tick, _) in enumerate(points):
                    reading = Reading(
                        tick=tick, source="prediction",
                        y=answer.ahead_y[i], lo=answer.ahead_lo[i],
                        hi=answer.ahead_hi[i], learned=answer.learned,
                        age_ticks=tick - asked_at)
                    self._kept[tick] = reading
                    self._latest = reading
                for old in [t for t in self._kept if t < asked_at]:
                    del self._kept[old]
        del samples[:len(batch)]
        del states[:len(points)]
        return True

    def _finish(self) -> None:
        try:
            self._stream.close()
        except Error as error:
            self._closing_error = error
            with self._lock:
                self._stats.last_error = error
        with self._lock:
            self._stats.samples_durable = self._stream.durable_samples
