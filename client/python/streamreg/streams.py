"""Bidirectional streams in lockstep: one message sent, its answer read."""

import queue
from typing import Callable, Iterator

import grpc
import numpy as np

from streamreg.errors import Error
from streamreg.results import Predictions, StreamPrediction
from streamreg.v1 import regression_pb2
from streamreg.v1 import regression_service_pb2

_END = object()


class _Lockstep:
    """A bidi call fed from a queue: exchange() sends a request and waits
    for its answer. Not retried (a stream of samples is the caller's to
    resume); a failed stream raises Error and stays failed."""

    def __init__(self, open_call: Callable[[Iterator], Iterator]):
        self._requests: "queue.Queue" = queue.Queue()
        self._responses = open_call(iter(self._requests.get, _END))
        self._closed = False

    def exchange(self, request):
        if self._closed:
            raise ValueError("the stream is closed")
        self._requests.put(request)
        try:
            return next(self._responses)
        except grpc.RpcError as error:
            self._closed = True
            raise Error.from_rpc_error(error) from None
        except StopIteration:
            self._closed = True
            raise Error(grpc.StatusCode.UNAVAILABLE,
                        "the server ended the stream") from None

    def close(self) -> None:
        """Ends the stream and waits for the server to end it too."""
        if self._closed:
            return
        self._closed = True
        self._requests.put(_END)
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                raise Error.from_rpc_error(error) from None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class LearnStream(_Lockstep):
    """The robot's loop over one Learn stream: learn(x, y) sends a sample
    and returns the model's prediction for it made before learning it (the
    server logs the sample, answers, then learns it). Use as a context
    manager, or close() it."""

    def __init__(self, open_call, model: str, next_id: Callable[[], int]):
        super().__init__(open_call)
        self._model = model
        self._next_id = next_id

    def learn(self, x, y) -> StreamPrediction:
        sample = regression_pb2.Sample(
            x=np.asarray(x, dtype=np.float64).ravel().tolist(),
            y=np.asarray(y, dtype=np.float64).ravel().tolist(),
            sample_id=self._next_id())
        response = self.exchange(regression_service_pb2.LearnRequest(
            model=self._model, sample=sample))
        p = response.prediction
        return StreamPrediction(
            y=np.array(p.y), spread=np.array(p.spread),
            neighbors=p.neighbors, sequence=response.sequence,
            learned=response.learned,
            learn_lag=response.learn_lag_us / 1e6,
            duplicate=response.duplicate)


class PredictStream(_Lockstep):
    """Predictions over one PredictStream stream, with no call set-up per
    query: predict(x) returns the model's predictions for x (d,) or
    (n, d)."""

    def __init__(self, open_call, model: str):
        super().__init__(open_call)
        self._model = model

    def predict(self, x) -> Predictions:
        rows = np.atleast_2d(np.asarray(x, dtype=np.float64))
        request = regression_service_pb2.PredictRequest(
            model=self._model,
            queries=[regression_pb2.Query(x=row.tolist()) for row in rows])
        response = self.exchange(request)
        return Predictions.from_protos(list(response.predictions),
                                       response.num_samples)
