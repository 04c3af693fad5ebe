"""The client of a streamreg server (or of some servers of a cluster)."""

import random
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from streamreg import frames
from streamreg.auth import BearerToken
from streamreg.errors import (Error, NotFound, ServerUnreachable, one_line,
                              with_models_named)
from streamreg.hedged_read import HedgedRead
from streamreg.results import (METRICS, REGRESSORS, IngestSummary, MetricInfo,
                               ModelInfo, Predictions)
from streamreg.retry import RetryPolicy
from streamreg.routing import Router, served_by
from streamreg.realtime import RealtimeChannel
from streamreg.streams import LearnStream, PredictStream
from streamreg.v1 import model_pb2
from streamreg.v1 import model_service_pb2
from streamreg.v1 import model_service_pb2_grpc
from streamreg.v1 import regression_pb2
from streamreg.v1 import regression_service_pb2
from streamreg.v1 import regression_service_pb2_grpc

Names = Union[int, Sequence[str]]


def _names(value: Names, prefix: str) -> List[str]:
    """Names given, or `value` of them numbered: x0, x1, ..."""
    if isinstance(value, int):
        return [f"{prefix}{i}" for i in range(value)]
    return list(value)


def _rows(values, what: str) -> np.ndarray:
    """`values` as a float64 (n, k) array: a (k,) vector is one row."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2:
        raise ValueError(f"{what}: expected a (n, k) array, got shape "
                         f"{np.shape(values)}")
    return array


def _sample_ids(values, n: int) -> List[int]:
    """A caller's sample ids: n distinct integers in [1, 2^64)."""
    ids = np.asarray(values)
    if ids.shape != (n,) or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"sample_ids: expected {n} integers, got shape "
                         f"{ids.shape} of {ids.dtype}")
    listed = [int(i) for i in ids]
    if any(i <= 0 or i >= 1 << 64 for i in listed):
        raise ValueError("sample_ids: must be in [1, 2^64)")
    if len(set(listed)) != n:
        raise ValueError("sample_ids: must be distinct")
    return listed


@one_line
class Client:
    """Typed calls to a streamreg server, with numpy arrays in and out.

    address: "host:port", or several servers of a cluster separated by
    commas (calls about a model go to the servers the cluster names for it).
    timeout: seconds each attempt of a call may take; a read (info, list,
    metric, predict) that another server of a cluster could answer waits
    replica_attempt_timeout for a server before it asks the next as well
    (a paused replica), and takes the first answer (HedgedRead).
    retry: how calls that may be repeated are retried (RetryPolicy: on
    UNAVAILABLE, ABORTED and overload refusals, with backoff, within its
    deadline); learn() is
    retried too, safely: its samples carry ids, and the server skips those
    it learned. Streams (learn_stream, predict_stream) open a new call
    when theirs breaks, and resend what it had not answered (a learn
    stream, every sample not yet reported durable).

    TLS: root_certificates (PEM bytes of the CA that signed the server's
    certificate), and for mutual TLS certificate_chain and private_key (the
    client's own); none of them: plaintext. token: the bearer token of a
    server with --auth-tokens.

    A context manager: `with Client(...) as client:` closes its channels.
    Failed calls raise streamreg.Error (its `code` is the gRPC status), in
    one line with a traceback from the method called (STREAMREG_TRACEBACK=1
    in the environment: the whole of it): ServerUnreachable when no server
    accepted a connection within `connect_within` seconds of the first call
    (the CLI's second; None: the first call is retried as any other, for a
    server that starts after the client), NotFound for a model that does
    not exist, InvalidArgument for a request refused.
    """

    def __init__(self, address: str = "127.0.0.1:50051", *,
                 timeout: float = 10.0, replica_attempt_timeout: float = 1.0,
                 retry: RetryPolicy = RetryPolicy(),
                 root_certificates: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None,
                 private_key: Optional[bytes] = None,
                 token: Optional[str] = None,
                 connect_within: Optional[float] = 1.0):
        self._router = Router([a for a in address.split(",") if a] or
                              [address])
        self._credentials = None
        if root_certificates or certificate_chain:
            self._credentials = grpc.ssl_channel_credentials(
                root_certificates=root_certificates, private_key=private_key,
                certificate_chain=certificate_chain)
        self._token = token
        self._channels: Dict[str, Tuple[grpc.Channel, object, object]] = {}
        self.timeout = timeout
        self.replica_attempt_timeout = replica_attempt_timeout
        self.retry = retry
        self._next_id = random.randrange(1, 1 << 62)
        self.connect_within = connect_within
        # Whether a server accepted a connection (_reach), or none is
        # waited for.
        self._reached = connect_within is None

    # ---- connection ----

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        for channel, _, _ in self._channels.values():
            channel.close()
        self._channels.clear()

    def _stubs(self, address: str):
        if address not in self._channels:
            if self._credentials is not None:
                channel = grpc.secure_channel(address, self._credentials)
            else:
                channel = grpc.insecure_channel(address)
            if self._token:
                channel = grpc.intercept_channel(channel,
                                                 BearerToken(self._token))
            self._channels[address] = (
                channel, model_service_pb2_grpc.ModelServiceStub(channel),
                regression_service_pb2_grpc.RegressionServiceStub(channel))
        return self._channels[address]

    def _sample_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _reach(self) -> None:
        """Before the client's first call: returns once one of its servers
        accepts a connection, sharing connect_within among them, or raises
        ServerUnreachable, so that nobody there is said at once and not
        after the retries meant for a server that went away."""
        if self._reached:
            return
        servers = self._router.servers
        share = self.connect_within / len(servers)
        for address in servers:
            channel, _, _ = self._stubs(address)
            try:
                grpc.channel_ready_future(channel).result(timeout=share)
                self._reached = True
                return
            except grpc.FutureTimeoutError:
                self._router.failed("", address)
        raise ServerUnreachable(servers, self.connect_within,
                                self._credentials is not None)

    def _named(self, model: str, error: Error) -> Error:
        """`error`, with the CLI's hint when it says `model` is not found."""
        if (not isinstance(error, NotFound) or not model
                or f"'{model}'" not in error.details):
            return error
        try:
            names = [info.name for info in self.list()]
        except Error:
            return error
        return with_models_named(error, model, names)

    def _call(self, model: str, call: Callable, retried: bool = True):
        """call(models stub, regression stub, timeout) on a server of
        `model`, retried as the class says (with `retried` false, only sent
        on to the servers a cluster names for the model); raises Error."""
        self._reach()
        def attempt(timeout: float):
            address = self._router.address_for(model)
            _, models, regression = self._stubs(address)
            try:
                return call(models, regression, timeout)
            except grpc.RpcError as rpc_error:
                error = Error.from_rpc_error(rpc_error)
            except Error as raised:  # the call's own (a stalled server)
                error = raised
            self._server_failed(model, address, error)
            raise error
        try:
            return self.retry.run(
                lambda left: attempt(max(0.001, min(self.timeout, left))),
                retried)
        except NotFound as error:
            raise self._named(model, error) from None

    def _read(self, model: str, start: Callable):
        """A read about `model` (HedgedRead: start(models stub, regression
        stub, timeout) returns the call's future), asked of the next
        server each replica_attempt_timeout while none has answered, and
        retried as the class says; raises Error."""
        self._reach()
        read = HedgedRead(self._router, self._stubs, model,
                          self.replica_attempt_timeout,
                          lambda address, error: self._server_failed(
                              model, address, error))
        try:
            return self.retry.run(lambda left: read.run(
                start, max(0.001, min(self.timeout, left))))
        except NotFound as error:
            raise self._named(model, error) from None

    def _server_failed(self, model: str, address: str, error: Error) -> None:
        """Tells the router of a call about `model` that failed on
        `address`: the servers its error names for the model, or, if it
        could not answer, to try another first."""
        named = served_by(error.code, error.details)
        if named and model:
            self._router.learn_owners(model, named)
        elif error.code in (grpc.StatusCode.UNAVAILABLE,
                            grpc.StatusCode.DEADLINE_EXCEEDED):
            self._router.failed(model, address)

    # ---- models ----

    def create(self, name: str, *, inputs: Names, targets: Names,
               metric: str = "mlkr", regressor: str = "knn",
               per_target_metric: bool = False,
               linear_base: Optional[bool] = None,
               per_target_base: bool = False,
               combine: bool = False,
               random_feature_base: bool = False,
               mlkr_rank: Optional[int] = None,
               interval_level: Optional[float] = None,
               spec: Optional[model_pb2.ModelSpec] = None,
               replace: bool = False) -> ModelInfo:
        """Creates a model of `inputs` inputs and `targets` targets (counts,
        or lists of names) learning `metric` (euclidean, gw, egop, mlkr,
        glml, auto) for `regressor` (knn, kernel, local_linear, auto).
        linear_base: predict the residuals of a linear fit (unset: the
        server's default); per_target_base: each target with the base or
        without it, by the honest error; combine: each target's prediction
        combines its candidates (the regressors scored, with and without
        the base, and the base alone) weighed by their honest errors
        (`ModelInfo.stats.candidate_weights`); random_feature_base: the
        base is a
        random-feature ridge (its options in `spec.random_feature_base`);
        mlkr_rank: the rank of MLKR's map (unset: full); interval_level:
        the coverage of each prediction's interval (lo, hi), in (0, 1)
        (unset: the server's default, 0.9).
        `spec`: a full streamreg.v1.ModelSpec for anything else (its
        unset fields filled from the arguments). A model of that name is
        refused (Error, code ALREADY_EXISTS), or with `replace` deleted
        first (its samples go with it), so that a rerun starts afresh."""
        if metric not in METRICS:
            raise ValueError(f"metric: {metric!r} is not one of "
                             f"{', '.join(METRICS)}")
        if regressor not in REGRESSORS:
            raise ValueError(f"regressor: {regressor!r} is not one of "
                             f"{', '.join(REGRESSORS)}")
        wire = model_pb2.ModelSpec()
        if spec is not None:
            wire.CopyFrom(spec)
        input_names = _names(inputs, "x")
        wire.input_dim = wire.input_dim or len(input_names)
        if not wire.input_names and not isinstance(inputs, int):
            wire.input_names.extend(input_names)
        if not wire.target_names:
            wire.target_names.extend(_names(targets, "y"))
        wire.metric = wire.metric or METRICS[metric]
        wire.regressor = wire.regressor or REGRESSORS[regressor]
        wire.per_target_metric = wire.per_target_metric or per_target_metric
        if linear_base is not None:
            wire.linear_base = linear_base
        if per_target_base:
            wire.per_target_base = True
        if combine:
            wire.combine = True
        if random_feature_base and not wire.HasField("random_feature_base"):
            wire.random_feature_base.SetInParent()
        if mlkr_rank is not None:
            wire.tuning.mlkr_rank = mlkr_rank
        if interval_level is not None:
            wire.interval_level = interval_level
        if replace:
            try:
                self.delete(name)
            except NotFound:
                pass
        request = model_service_pb2.CreateModelRequest(name=name, spec=wire)
        # Not retried: a retry after a lost answer would find it created.
        model = self._call(name, lambda models, _, timeout: models.CreateModel(
            request, timeout=timeout), retried=False)
        return ModelInfo.from_proto(model)

    def info(self, name: str) -> ModelInfo:
        """The model's spec in effect and live stats, once every sample
        acknowledged before the call is learned."""
        request = model_service_pb2.GetModelRequest(name=name)
        model = self._read(name, lambda models, _, timeout:
                           models.GetModel.future(request, timeout=timeout))
        return ModelInfo.from_proto(model)

    def list(self) -> List[ModelInfo]:
        """Every model, in name order (of a cluster: every model of the
        cluster, read from servers that serve it)."""
        found, elsewhere, token = [], [], ""
        while True:
            request = model_service_pb2.ListModelsRequest(page_token=token)
            page = self._read("", lambda models, _, timeout:
                              models.ListModels.future(request,
                                                       timeout=timeout))
            found.extend(ModelInfo.from_proto(m) for m in page.models)
            for model in page.elsewhere:
                self._router.learn_owners(model.name, list(model.servers))
                elsewhere.append(model.name)
            token = page.next_page_token
            if not token:
                break
        for name in elsewhere:
            try:
                found.append(self.info(name))
            except Error as error:
                if error.code != grpc.StatusCode.NOT_FOUND:
                    raise
        return sorted(found, key=lambda m: m.name)

    def delete(self, name: str) -> None:
        request = model_service_pb2.DeleteModelRequest(name=name)
        self._call(name, lambda models, _, timeout: models.DeleteModel(
            request, timeout=timeout))

    def metric(self, name: str) -> MetricInfo:
        """The model's learned metrics: weights, spectrum, directions."""
        request = model_service_pb2.GetMetricRequest(name=name)
        return MetricInfo.from_proto(self._read(
            name, lambda models, _, timeout: models.GetMetric.future(
                request, timeout=timeout)))

    def refit(self, name: str) -> ModelInfo:
        """Recomputes the model's metric in batch over its stored samples
        and rebuilds its indexes; waits for it (the client's timeout is not
        applied: a refit of a large model takes minutes)."""
        request = model_service_pb2.RefitRequest(name=name)

        def run(models, _, timeout):
            for _progress in models.Refit(request):
                pass
        self._call(name, run, retried=False)
        return self.info(name)

    # ---- samples and predictions ----

    def learn(self, model: str, x, y, *, batch_size: int = 1000,
              sample_ids=None) -> IngestSummary:
        """Learns samples x (n, d) with targets y (n, m) (a (d,) and (m,)
        pair is one sample; y (n,) is one target; DataFrames' columns are
        matched to the model's input and target names) in order, over one
        Ingest stream in batches of batch_size. Retried whole on a retryable
        error: the samples keep their ids, so none is learned twice. While
        the model has another server, a server that stops answering pings
        for replica_attempt_timeout (paused) is left for the next.
        INVALID_ARGUMENT names the first bad sample, and then nothing of
        its batch is learned. `sample_ids` (n,): your ids of the samples,
        distinct and non-zero, as predictions name the samples they used
        (predict(..., with_neighbors=True)); the server skips a sample
        whose id it learned recently (its --dedup-window). Unset: the
        client's own."""
        x, y = self._by_name(model, x, y)
        inputs = _rows(x, "x")
        targets = np.asarray(y, dtype=np.float64)
        if targets.ndim == 1 and inputs.shape[0] > 1:
            targets = targets.reshape(-1, 1)
        targets = _rows(targets, "y")
        if inputs.shape[0] != targets.shape[0]:
            raise ValueError(f"x has {inputs.shape[0]} rows and y "
                             f"{targets.shape[0]}")
        ids = (_sample_ids(sample_ids, inputs.shape[0])
               if sample_ids is not None
               else [self._sample_id() for _ in range(inputs.shape[0])])
        samples = [regression_pb2.Sample(x=row_x.tolist(), y=row_y.tolist(),
                                         sample_id=sample_id)
                   for row_x, row_y, sample_id in zip(inputs, targets, ids)]
        batches = [regression_service_pb2.IngestRequest(
            model=model, samples=samples[i:i + batch_size])
            for i in range(0, len(samples), batch_size)]
        response = self._call(model, lambda _, regression, timeout:
                              self._watched(model, regression,
                                            regression.Ingest.future(
                                                iter(batches),
                                                timeout=timeout)))
        return IngestSummary(accepted=response.accepted,
                             duplicates=response.duplicates,
                             samples=response.num_samples)

    def _watched(self, model: str, regression, call):
        """The result of `call` (a call's future) on a server of `model`.
        While the model has another server, that server is pinged every
        replica_attempt_timeout meanwhile: a long call may be a busy
        server's (which answers pings), but a ping unanswered in that time
        is a stalled one's (paused), and cancels the call (UNAVAILABLE:
        the caller retries elsewhere)."""
        if self._router.candidates(model) < 2:
            return call.result()
        interval = self.replica_attempt_timeout
        while True:
            try:
                return call.result(timeout=interval)
            except grpc.FutureTimeoutError:
                pass
            try:
                regression.Ping(regression_service_pb2.PingRequest(),
                                timeout=interval)
            except grpc.RpcError as error:
                if error.code() in (grpc.StatusCode.DEADLINE_EXCEEDED,
                                    grpc.StatusCode.UNAVAILABLE):
                    call.cancel()
                    raise Error(grpc.StatusCode.UNAVAILABLE,
                                f"the server did not answer a ping within "
                                f"{interval:g} s; sending the samples to "
                                f"another") from None

    def predict(self, model: str, x,
                interval_level: Optional[float] = None,
                with_neighbors: bool = False,
                min_learned: Optional[int] = None) -> Predictions:
        """The model's predictions for queries x (n, d) (or one (d,); a
        DataFrame's columns matched to the model's input names), with
        their intervals (lo, hi) at `interval_level` in (0, 1) (unset: the
        model's). With `with_neighbors`, also the samples each target's
        prediction used (Predictions.used): to see why a prediction is
        what it is.

        What the answer has learned: at least `min_learned` samples (an
        ingest's IngestSummary.samples or a learned sample's sequence
        reads that write on any server of the model; 0: the model as it
        stands, at once); unset, every sample the answering server
        acknowledged before the call."""
        x, _ = self._by_name(model, x, None)
        rows = _rows(x, "x")
        request = regression_service_pb2.PredictRequest(
            model=model,
            queries=[regression_pb2.Query(x=row.tolist()) for row in rows],
            interval_level=interval_level, with_neighbors=with_neighbors,
            min_learned=min_learned)
        response = self._read(model, lambda _, regression, timeout:
                              regression.Predict.future(request,
                                                        timeout=timeout))
        return Predictions.from_protos(list(response.predictions),
                                       response.num_samples, rows.shape[1])

    def _by_name(self, model: str, x, y):
        """x and y, DataFrames' columns put in the order of the model's
        input and target names (one GetModel call; a model without input
        names takes x's columns in order)."""
        if not (frames.is_frame(x) or frames.is_frame(y)):
            return x, y
        info = self.info(model)
        if frames.is_frame(x) and info.input_names:
            x = frames.by_name(x, info.input_names, "x")
        if frames.is_frame(y):
            y = frames.by_name(y, info.target_names, "y")
        return x, y

    def learn_stream(self, model: str,
                     answer_when_durable: bool = False) -> LearnStream:
        """A Learn stream for a control loop: stream.learn(x, y) per tick
        returns the prediction for x made before learning it, answered
        before the sample is durable (or, with answer_when_durable, once it
        is). The stream keeps each sample until the server reports it
        durable and resends those it had not after a broken call. While
        the model has another server, a sample not answered within
        replica_attempt_timeout gives its server up as stalled: the
        stream goes on at the next one."""
        self.info(model)  # finds the model's servers (and checks it)
        return LearnStream(model=model, next_id=self._sample_id,
                           retry=self.retry,
                           answer_when_durable=answer_when_durable,
                           **self._stream_calls(model, "Learn"))

    def realtime_channel(self, model: str, horizon: int = 20,
                         batch_ticks: int = 5,
                         capacity: int = 16384) -> RealtimeChannel:
        """A control loop's link to `model` that never waits for the
        server (RealtimeChannel): hand(tick, x, y, desired) per tick, with
        the desired states of the next `horizon` ticks, and read(tick,
        fallback) for the prediction made ahead for the tick's desired
        state; `batch_ticks` samples go in a message."""
        info = self.info(model)
        return RealtimeChannel(self.learn_stream(model),
                               info.proto.spec.input_dim,
                               len(info.target_names), horizon=horizon,
                               batch_ticks=batch_ticks, capacity=capacity)

    def predict_stream(self, model: str) -> PredictStream:
        """A PredictStream stream: stream.predict(x) per query, without a
        call's set-up each time. A query whose call breaks is asked again
        on a new call, retried as the class says; while the model has
        another server, one not answered within replica_attempt_timeout
        gives its server up as stalled, and the stream goes on at the
        next."""
        self.info(model)  # finds the model's servers (and checks it)
        return PredictStream(model=model, retry=self.retry,
                             **self._stream_calls(model, "PredictStream"))

    def _stream_calls(self, model: str, method: str) -> dict:
        """How a stream about `model` opens its calls (to
        RegressionService.`method` on the server the model is routed to
        then: a reopened call may go elsewhere), how long it waits for an
        answer, and whom it tells of a failed call (the router, as of any
        call): _ReopenedCall's arguments."""
        serving = [""]  # the server of the current call

        def open_call(requests):
            serving[0] = self._router.address_for(model)
            _, _, regression = self._stubs(serving[0])
            return getattr(regression, method)(requests)

        def attempt_timeout():
            # While another server of the model could take the stream, a
            # stalled (paused) one is left after replica_attempt_timeout.
            if self._router.candidates(model) > 1:
                return self.replica_attempt_timeout
            return None

        def failed(error: Error) -> None:
            self._server_failed(model, serving[0], error)
        return {"open_call": open_call, "attempt_timeout": attempt_timeout,
                "failed": failed}
