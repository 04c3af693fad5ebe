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
    "NOT_FOUND: model 'arn' not found"."""


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
