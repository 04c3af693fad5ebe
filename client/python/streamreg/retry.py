"""How the client retries a call: which codes, how often, how long."""

import dataclasses
import random
import time
from typing import Callable, TypeVar

import grpc

from streamreg.errors import Error
from streamreg.routing import served_by

Answer = TypeVar("Answer")

# Codes a call that may be repeated is retried on: the server was
# unreachable or restarting (UNAVAILABLE), a write raced a conflicting one
# (ABORTED), or the server shed load and said when to come back
# (RESOURCE_EXHAUSTED with a retry hint).
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED,
                       grpc.StatusCode.RESOURCE_EXHAUSTED})


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retries of one call.

    A call is tried at most `attempts` times and never past `deadline`
    seconds after it started (each attempt's own timeout is the client's
    `timeout`, cut to what is left); overload refusals with the server's
    retry hint (a server alive, only slower than the writes) do not count
    as attempts, so only the deadline bounds them. Between attempts it waits a random
    time up to initial_backoff * 2**attempt (at most max_backoff), or, after
    an overload refusal, the server's hint (honoured up to
    longest_retry_after). RESOURCE_EXHAUSTED without a hint (a limit that
    waiting does not lift, such as a full model) is not retried.
    """
    attempts: int = 8
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    deadline: float = 60.0
    longest_retry_after: float = 30.0

    def should_retry(self, error) -> bool:
        if error.code not in RETRYABLE:
            return False
        if error.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            return error.retry_after is not None
        return True

    @staticmethod
    def counts(error) -> bool:
        """Whether `error` counts against `attempts` (an overload refusal
        with a retry hint does not)."""
        return not (error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and
                    error.retry_after is not None)

    def wait_before(self, attempt: int, error) -> float:
        """Seconds to wait before attempt `attempt` + 1 after `error`."""
        if error.retry_after is not None:
            return min(error.retry_after, self.longest_retry_after)
        ceiling = min(self.max_backoff, self.initial_backoff * 2 ** attempt)
        return ceiling * random.random()

    def run(self, attempt: Callable[[float], Answer],
            retried: bool = True) -> Answer:
        """attempt(seconds left before the deadline) until it returns,
        retried as the class says; raises the last Error. With `retried`
        false (a call that must not run twice), only a failure naming the
        servers of the call's model (a cluster's server sending the client
        on; the call did not run there) is retried.

        The first such send-on is followed at once: the client's router
        has learned where to go. Later ones wait the backoff, so that
        replicas all catching up, which send clients to each other, are
        given the time to catch up. Each counts as an attempt."""
        start = time.monotonic()
        failures = 0  # counted against `attempts`
        followed_a_send_on = False
        while True:
            try:
                return attempt(self.deadline - (time.monotonic() - start))
            except Error as raised:
                error = raised
            sent_on = bool(served_by(error.code, error.details))
            if not sent_on and not (retried and self.should_retry(error)):
                raise error
            if sent_on and not followed_a_send_on:
                followed_a_send_on = True
                wait = 0.0
            else:
                wait = self.wait_before(failures, error)
            if self.counts(error):
                failures += 1
                if failures >= self.attempts:
                    raise error
            if time.monotonic() - start + wait >= self.deadline:
                raise error
            if wait > 0:
                time.sleep(wait)

    def __post_init__(self):
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if self.deadline <= 0:
            raise ValueError("RetryPolicy.deadline must be positive")
