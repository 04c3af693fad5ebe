"""Bearer tokens on every call."""

import grpc


class BearerToken(grpc.UnaryUnaryClientInterceptor,
                  grpc.UnaryStreamClientInterceptor,
                  grpc.StreamUnaryClientInterceptor,
                  grpc.StreamStreamClientInterceptor):
    """Sends "authorization: Bearer <token>" with every call (a channel
    interceptor: gRPC's call credentials refuse plaintext channels)."""

    def __init__(self, token: str):
        self._metadata = ("authorization", "Bearer " + token)

    def _with_token(self, details):
        metadata = list(details.metadata or []) + [self._metadata]
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)
