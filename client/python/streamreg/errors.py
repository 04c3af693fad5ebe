"""The one exception the client raises for a call that failed."""

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
        return cls(error.code(), error.details() or "", retry_after)
