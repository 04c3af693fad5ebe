"""A read asked of a model's servers in turn, the first answer taken."""

import queue
import time
from typing import Callable, List, Optional, Tuple

import grpc

from streamreg.errors import Error
from streamreg.routing import Router, served_by

# Codes that say a server could not answer (another one may).
_SERVER_FAILED = frozenset({grpc.StatusCode.UNAVAILABLE,
                            grpc.StatusCode.ABORTED,
                            grpc.StatusCode.DEADLINE_EXCEEDED})
# Codes every server would answer the request with.
_DECIDED_BY_REQUEST = frozenset({grpc.StatusCode.INVALID_ARGUMENT,
                                 grpc.StatusCode.OUT_OF_RANGE,
                                 grpc.StatusCode.UNAUTHENTICATED,
                                 grpc.StatusCode.PERMISSION_DENIED,
                                 grpc.StatusCode.UNIMPLEMENTED})


class HedgedRead:
    """One attempt of a read about a model (info, list, metric, predict:
    a call any of its servers can answer), asked of its servers in turn
    without giving up on any: the server the router names first is asked;
    while no answer has come, the next one `next_after` seconds later, and
    so on, every call left running. The first answer (or an error every
    server would give: INVALID_ARGUMENT, PERMISSION_DENIED, ...) is taken
    and the other calls are cancelled. A server that fails (UNAVAILABLE,
    ABORTED) or answers an error of its own state (NOT_FOUND,
    FAILED_PRECONDITION: a replica not caught up) has the next one asked
    at once, unless it names the model's servers (the next attempt goes
    there); if no server answers, the first error of a server's state is
    raised, else the last failure. So a paused replica costs a read
    `next_after`, and a replica that is only slow (learning what the read
    waits for) still answers if it comes first.
    `failed(address, error)` hears of every server that failed, and of
    every one passed over (asked, and cancelled unanswered).

    start(models stub, regression stub, timeout) starts the call on a
    server and returns its future (a stub method's .future)."""

    def __init__(self, router: Router, stubs: Callable, model: str,
                 next_after: float,
                 failed: Callable[[str, Error], None]):
        self._router = router
        self._stubs = stubs
        self._model = model
        self._next_after = next_after
        self._failed = failed

    def run(self, start: Callable, timeout: float):
        """The answer; raises Error (the last server's failure when every
        server failed)."""
        finished: "queue.SimpleQueue[Tuple[str, grpc.Future]]" = (
            queue.SimpleQueue())
        calls: List[Tuple[str, grpc.Future]] = []
        deadline = time.monotonic() + timeout

        redirected = [False]  # a failure named the model's servers

        def ask_next() -> Optional[float]:
            """Asks the next server: when to ask one more (None: none
            left)."""
            address = None if redirected[0] else self._router.next_for(
                self._model, [a for a, _ in calls])
            if address is None:
                return None
            _, models, regression = self._stubs(address)
            call = start(models, regression,
                         max(0.001, deadline - time.monotonic()))
            calls.append((address, call))
            call.add_done_callback(lambda done: finished.put((address, done)))
            return time.monotonic() + self._next_after

        failure = Error(grpc.StatusCode.UNAVAILABLE,
                        f"no server to ask about {self._model!r}")
        answered = False
        refusal: Optional[Error] = None  # the first server's own error
        ask_at = ask_next()
        ended = 0  # calls taken from `finished`
        try:
            while ended < len(calls):
                try:
                    address, call = finished.get(
                        timeout=None if ask_at is None
                        else max(0.0, ask_at - time.monotonic()))
                except queue.Empty:  # nothing for next_after: one more
                    ask_at = ask_next()
                    continue
                ended += 1
                try:
                    result = call.result()
                    answered = True
                    return result
                except grpc.RpcError as rpc_error:
                    error = Error.from_rpc_error(rpc_error)
                if error.code in _DECIDED_BY_REQUEST:
                    answered = True
                    raise error
                if error.code not in _SERVER_FAILED:
                    # This server's state: another server may answer.
                    refusal = refusal or error
                    ask_at = ask_next() or ask_at
                    continue
                self._failed(address, error)
                failure = error
                redirected[0] = redirected[0] or bool(
                    served_by(error.code, error.details))
                ask_at = ask_next() or ask_at
            raise refusal or failure
        finally:
            for address, call in calls:
                if call.cancel() and answered:
                    self._failed(address, Error(
                        grpc.StatusCode.UNAVAILABLE,
                        f"server {address} did not answer in time"))
