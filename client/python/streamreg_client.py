"""A small Python client of a streamreg server.

The stubs (streamreg.v1.*_pb2, *_pb2_grpc) are generated at build time from
proto/streamreg/v1 with Debian's grpc_python_plugin into <build>/python; put
that directory and this one on PYTHONPATH. Needs python3-grpcio and
python3-protobuf (Debian), run with /usr/bin/python3.
"""

import random
import time

import grpc

from streamreg.v1 import model_pb2
from streamreg.v1 import model_service_pb2
from streamreg.v1 import model_service_pb2_grpc
from streamreg.v1 import regression_pb2
from streamreg.v1 import regression_service_pb2
from streamreg.v1 import regression_service_pb2_grpc

METRICS = {
    "euclidean": model_pb2.METRIC_EUCLIDEAN,
    "gw": model_pb2.METRIC_GRADIENT_WEIGHTS,
    "egop": model_pb2.METRIC_EGOP,
    "mlkr": model_pb2.METRIC_MLKR,
    "glml": model_pb2.METRIC_GLML,
    "auto": model_pb2.METRIC_AUTO,
}
REGRESSORS = {
    "knn": model_pb2.REGRESSOR_KNN,
    "kernel": model_pb2.REGRESSOR_KERNEL,
    "local_linear": model_pb2.REGRESSOR_LOCAL_LINEAR,
    "auto": model_pb2.REGRESSOR_AUTO,
}


class _BearerToken(grpc.UnaryUnaryClientInterceptor,
                   grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor,
                   grpc.StreamStreamClientInterceptor):
    """Sends "authorization: Bearer <token>" with every call (a channel
    interceptor: gRPC's call credentials refuse plaintext channels)."""

    def __init__(self, token):
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


# How a cluster's server that does not serve a model names those that do,
# at the end of its UNAVAILABLE status (docs/api.md, "Cluster mode").
_SERVED_BY = "(servers="


def _served_by(error):
    """The servers an UNAVAILABLE error names for its model, or []."""
    if error.code() != grpc.StatusCode.UNAVAILABLE:
        return []
    details = error.details() or ""
    at = details.rfind(_SERVED_BY)
    end = details.find(")", at)
    if at < 0 or end < 0:
        return []
    return [s for s in details[at + len(_SERVED_BY):end].split(",") if s]


class Client:
    """Typed calls to a streamreg server, or to some servers of a cluster.
    Samples get ids (a random start counted up), so a batch sent again is
    not learned twice.

    address: "host:port", or several servers of a cluster separated by
    commas. Calls about a model go to the servers a cluster named for it (a
    server that does not serve a model answers UNAVAILABLE naming those
    that do), others to the first server that answers; calls that may be
    repeated (all but learn's stream and refit) are retried on UNAVAILABLE
    up to `attempts` times, on the next server when one is unreachable.

    TLS: give root_certificates (PEM bytes of the CA that signed the
    server's certificate), and for mutual TLS certificate_chain and
    private_key (the client's own, PEM bytes); none of them: plaintext.
    token: the bearer token for a server with --auth-tokens (use TLS: over
    plaintext it can be read on the way)."""

    def __init__(self, address="127.0.0.1:50051", timeout=60.0,
                 root_certificates=None, certificate_chain=None,
                 private_key=None, token=None, attempts=8):
        self._servers = [a for a in address.split(",") if a] or [address]
        self._credentials = None
        if root_certificates or certificate_chain:
            self._credentials = grpc.ssl_channel_credentials(
                root_certificates=root_certificates,
                private_key=private_key,
                certificate_chain=certificate_chain)
        self._token = token
        self._stubs = {}    # address: (channel, models stub, regression stub)
        self._owners = {}   # model: the servers a cluster named for it
        self._preferred = 0
        self.timeout = timeout
        self.attempts = attempts
        self._next_id = random.randrange(1, 1 << 62)
        self.channel, self.models, self.regression = self._stubs_of(
            self._servers[0])

    def _stubs_of(self, address):
        if address not in self._stubs:
            if self._credentials is not None:
                channel = grpc.secure_channel(address, self._credentials)
            else:
                channel = grpc.insecure_channel(address)
            if self._token:
                channel = grpc.intercept_channel(channel,
                                                 _BearerToken(self._token))
            self._stubs[address] = (
                channel, model_service_pb2_grpc.ModelServiceStub(channel),
                regression_service_pb2_grpc.RegressionServiceStub(channel))
        return self._stubs[address]

    def _address_for(self, model):
        owners = self._owners.get(model) if model else None
        return owners[0] if owners else self._servers[self._preferred]

    def _call(self, model, call):
        """call(models stub, regression stub), where the model is served;
        retried as the class says."""
        for attempt in range(1, self.attempts + 1):
            address = self._address_for(model)
            _, models, regression = self._stubs_of(address)
            try:
                return call(models, regression)
            except grpc.RpcError as error:
                if attempt == self.attempts:
                    raise
                named = _served_by(error)
                if named and model:
                    self._owners[model] = named
                    continue
                if error.code() not in (grpc.StatusCode.UNAVAILABLE,
                                        grpc.StatusCode.ABORTED):
                    raise
                owners = self._owners.get(model)
                if owners and owners[0] == address:
                    owners.append(owners.pop(0))
                elif self._servers[self._preferred] == address:
                    self._preferred = (self._preferred + 1) % len(self._servers)
                time.sleep(min(2.0, 0.05 * 2 ** attempt) * random.random())
        raise AssertionError("unreachable")

    def close(self):
        for channel, _, _ in self._stubs.values():
            channel.close()

    def _sample_id(self):
        self._next_id += 1
        return self._next_id

    def create_model(self, name, input_dim, target_names, metric="gw",
                     regressor="knn", input_names=(), per_target_metric=False,
                     linear_base=None, mlkr_rank=None):
        spec = model_pb2.ModelSpec(
            input_dim=input_dim, target_names=list(target_names),
            input_names=list(input_names), metric=METRICS[metric],
            regressor=REGRESSORS[regressor],
            per_target_metric=per_target_metric)
        if linear_base is not None:  # unset: the server's default (on,
            # off for glml)
            spec.linear_base = linear_base
        if mlkr_rank is not None:  # unset: full rank
            spec.tuning.mlkr_rank = mlkr_rank
        request = model_service_pb2.CreateModelRequest(name=name, spec=spec)
        return self._call(name, lambda models, _: models.CreateModel(
            request, timeout=self.timeout))

    def get_model(self, name):
        request = model_service_pb2.GetModelRequest(name=name)
        return self._call(name, lambda models, _: models.GetModel(
            request, timeout=self.timeout))

    def list_models(self):
        """Every model, in name order; of a cluster, every model of the
        cluster, those the server asked does not serve read from servers
        that do (a model deleted meanwhile is left out)."""
        models, elsewhere, token = [], [], ""
        while True:
            request = model_service_pb2.ListModelsRequest(page_token=token)
            page = self._call("", lambda models, _: models.ListModels(
                request, timeout=self.timeout))
            models.extend(page.models)
            for model in page.elsewhere:
                if model.servers:
                    self._owners[model.name] = list(model.servers)
                elsewhere.append(model.name)
            token = page.next_page_token
            if not token:
                break
        for name in elsewhere:
            try:
                models.append(self.get_model(name))
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
        return sorted(models, key=lambda model: model.name)

    def delete_model(self, name):
        request = model_service_pb2.DeleteModelRequest(name=name)
        self._call(name, lambda models, _: models.DeleteModel(
            request, timeout=self.timeout))

    def get_metric(self, name):
        request = model_service_pb2.GetMetricRequest(name=name)
        return self._call(name, lambda models, _: models.GetMetric(
            request, timeout=self.timeout))

    def refit(self, name):
        """Refits the model's metric in batch over its stored samples and
        rebuilds its indexes; returns the last progress message (its
        stats)."""
        _, models, _ = self._stubs_of(self._address_for(name))
        last = None
        for progress in models.Refit(
                model_service_pb2.RefitRequest(name=name), timeout=self.timeout):
            last = progress
        return last

    def ingest(self, model, rows, batch_size=1000):
        """Learns (x, y) pairs in batches over one Ingest stream (sent again
        whole on a retry: the server skips what it learned by the ids)."""
        batches, batch = [], []
        for x, y in rows:
            batch.append(regression_pb2.Sample(
                x=x, y=y, sample_id=self._sample_id()))
            if len(batch) == batch_size:
                batches.append(regression_service_pb2.IngestRequest(
                    model=model, samples=batch))
                batch = []
        if batch:
            batches.append(regression_service_pb2.IngestRequest(
                model=model, samples=batch))
        return self._call(model, lambda _, regression: regression.Ingest(
            iter(batches), timeout=self.timeout))

    def predict(self, model, points):
        """Predictions (y, spread, neighbors) for a list of input vectors."""
        request = regression_service_pb2.PredictRequest(
            model=model, queries=[regression_pb2.Query(x=x) for x in points])
        return list(self._call(model, lambda _, regression: regression.Predict(
            request, timeout=self.timeout)).predictions)

    def learn(self, model, rows):
        """The robot's loop: yields, for each (x, y), the LearnResponse with
        the model's prediction for it, made before learning it (`learned`:
        how many samples that prediction had learned). Opened on a server
        of the model (asked first); not retried."""
        self.get_model(model)  # finds the model's servers
        _, _, regression = self._stubs_of(self._address_for(model))
        requests = (regression_service_pb2.LearnRequest(
            model=model,
            sample=regression_pb2.Sample(x=x, y=y, sample_id=self._sample_id()))
            for x, y in rows)
        return regression.Learn(requests)


def read_csv(path):
    """Rows of a CSV in the data/README.md convention: (input names, target
    names, [(x, y), ...]); target_* columns are targets, id_* skipped."""
    with open(path) as f:
        header = [c.strip() for c in f.readline().split(",")]
        inputs = [i for i, c in enumerate(header)
                  if not c.startswith(("target_", "id_"))]
        targets = [i for i, c in enumerate(header) if c.startswith("target_")]
        rows = []
        for line in f:
            if not line.strip():
                continue
            values = [float(v) for v in line.split(",")]
            rows.append(([values[i] for i in inputs],
                         [values[i] for i in targets]))
    return ([header[i] for i in inputs],
            [header[i][len("target_"):] for i in targets], rows)
