"""The exceptions the client raises for a call that failed: Error, and
the kinds a newcomer meets first as its subclasses (a server not there, a
model not there, a request refused), each one line, as the CLI says it."""

import functools
import inspect
import os
from typing import Optional

import grpc

# The server's hint, in a refusal's trailing metadata, of when to retry.
RETRY_PUSHBACK_KEY = "grpc-retry-pushback-ms"


class Error(Exception):
    """A call the server refused or could not be reached for.

    code: the gRPC status code (grpc.StatusCode), e.g. INVALID_ARGUMENT for
    a bad sample, NOT_FOUND for a model that does not exist,
    RESOURCE_EXHAUSTED for an overloaded server. details: the server's
    message, which names the field and the sample ("samples[3].x[0]: NaN").
    retry_after: seconds the server asked the client to wait before trying
    again (overload), or None.
    """

    def __init__(self, code: grpc.StatusCode, details: str,
                 retry_after: Optional[float] = None):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.retry_after = retry_after

    @staticmethod
    def of(code: grpc.StatusCode, details: str,
           retry_after: Optional[float] = None) -> "Error":
        """The Error for a status: NotFound, InvalidArgument, or Error."""
        kind = {grpc.StatusCode.NOT_FOUND: NotFound,
                grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument}.get(
                    code, Error)
        return kind(code, details, retry_after)

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> "Error":
        retry_after = None
        trailers = error.trailing_metadata() if hasattr(
            error, "trailing_metadata") else None
        for key, value in trailers or ():
            if key == RETRY_PUSHBACK_KEY:
                try:
                    retry_after = max(0.0, int(value) / 1000.0)
                except ValueError:
                    pass
        return Error.of(error.code(), error.details() or "", retry_after)


class NotFound(Error):
    """NOT_FOUND: the model (or what else the call named) does not exist:
    "NOT_FOUND: model 'arn' not found (did you mean 'arm'?)", the server's
    model a typo most likely meant, as the CLI says it."""


class InvalidArgument(Error):
    """INVALID_ARGUMENT: the server refused the request and changed
    nothing; details names the field and the sample ("samples[3].x[0]:
    NaN")."""


class ServerUnreachable(Error):
    """UNAVAILABLE before any call: none of the client's servers accepted a
    connection within a second of its first call (no server there, or a
    TLS handshake that failed). Later outages are retried as the client's
    RetryPolicy says and raise Error."""

    def __init__(self, servers, within: float, tls: bool):
        hint = ("is a server running there? `make run` starts one; "
                "streamreg.Client(\"HOST:PORT\") names another")
        if tls:
            hint += ("; over TLS, do root_certificates sign its "
                     "certificate?")
        super().__init__(
            grpc.StatusCode.UNAVAILABLE,
            f"no streamreg server answers at {','.join(servers)} within "
            f"{within:g}s ({hint})")


def edit_distance(a: str, b: str) -> int:
    """The fewest insertions, deletions, substitutions and swaps of two
    neighbouring characters that turn a into b (as the CLI counts them)."""
    before_last, last = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(last[j] + 1, row[j - 1] + 1,
                         last[j - 1] + (a[i - 1] != b[j - 1]))
            if (i > 1 and j > 1 and a[i - 1] == b[j - 2]
                    and a[i - 2] == b[j - 1]):
                row[j] = min(row[j], before_last[j - 2] + 1)
        before_last, last = last, row
    return last[len(b)]


def did_you_mean(name: str, candidates) -> str:
    """' (did you mean 'x'?)' for the candidate nearest `name` when it is
    near enough to be a typo (at most a third of the longer name apart, at
    least 1; the first of equals), else '' — the CLI's rule."""
    nearest, best = None, 0
    for candidate in candidates:
        distance = edit_distance(name, candidate)
        if distance == 0:
            return ""
        if distance > max(1, max(len(name), len(candidate)) // 3):
            continue
        if nearest is None or distance < best:
            nearest, best = candidate, distance
    return "" if nearest is None else f" (did you mean '{nearest}'?)"


def with_models_named(error: Error, model: str, names) -> Error:
    """A NotFound of `model` with the CLI's hint: the server's model its
    name is likely a typo of, or how to see them."""
    hint = did_you_mean(model, names)
    if not hint:
        hint = (" (the server has no models yet; Client.create makes one)"
                if not names else
                f" (Client.list() shows the {len(names)} "
                f"model{'' if len(names) == 1 else 's'} it has)")
    return NotFound(error.code, error.details + hint, error.retry_after)


def one_line(cls):
    """Class decorator: an Error raised by one of `cls`'s public methods
    (plain functions; properties and static methods are left as they are)
    reaches the caller with a traceback that starts at that method, not
    inside the client or grpc (the message says it all in one line); with
    the environment's STREAMREG_TRACEBACK set, the whole traceback."""
    def trimmed(method):
        @functools.wraps(method)
        def call(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            except Error as error:
                if os.environ.get("STREAMREG_TRACEBACK"):
                    raise
                raise error.with_traceback(None) from None
        return call
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(value):
            setattr(cls, name, trimmed(value))
    return cls


# Named as the package exports them ("streamreg.NotFound: ...").
for _kind in (Error, NotFound, InvalidArgument, ServerUnreachable):
    _kind.__module__ = "streamreg"
