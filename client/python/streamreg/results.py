"""What the client's calls return: plain data with numpy arrays."""

import dataclasses
import datetime
from typing import List, Optional

import numpy as np

from streamreg.v1 import model_pb2
from streamreg.v1 import regression_pb2

# The wire enums by the short names the CLI and the server's logs use.
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
_METRIC_NAMES = {value: name for name, value in METRICS.items()}
_REGRESSOR_NAMES = {value: name for name, value in REGRESSORS.items()}


def metric_name(value: int) -> str:
    return _METRIC_NAMES.get(value, "unspecified")


def regressor_name(value: int) -> str:
    return _REGRESSOR_NAMES.get(value, "unspecified")


def _array(values) -> np.ndarray:
    return np.array(list(values), dtype=np.float64)


def _matrix(values, columns: int) -> np.ndarray:
    """Row-major values as a (rows, columns) array ((0, columns) if none)."""
    return _array(values).reshape(-1, max(columns, 1))


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """A model: its spec in effect and live stats (GetModel). NaN errors are
    not known yet. `proto` is the whole streamreg.v1.Model."""
    name: str
    input_names: List[str]
    target_names: List[str]
    metric: str
    regressor: str
    samples: int
    stored: int
    prequential_nmse: np.ndarray
    honest_nmse: np.ndarray
    # The Learn answers this server sent for the model, and their nMSE per
    # target as sent (each against its own sample, lag included: what a
    # client counts on the answers it receives).
    answers_sent: int
    answer_nmse: np.ndarray
    memory_bytes: int
    created: datetime.datetime
    # When the server last stored a snapshot of it (None: it keeps no log).
    snapshot: Optional[datetime.datetime]
    proto: model_pb2.Model = dataclasses.field(repr=False)

    @classmethod
    def from_proto(cls, model: model_pb2.Model) -> "ModelInfo":
        spec, stats = model.spec, model.stats
        return cls(
            name=model.name,
            input_names=list(spec.input_names),
            target_names=list(spec.target_names),
            metric=metric_name(spec.metric),
            regressor=regressor_name(spec.regressor),
            samples=stats.num_samples,
            stored=stats.num_stored,
            prequential_nmse=_array(stats.prequential_nmse),
            honest_nmse=_array(stats.honest_nmse),
            answers_sent=stats.answers_sent,
            answer_nmse=_array(stats.answer_nmse),
            memory_bytes=stats.memory_bytes,
            created=model.create_time.ToDatetime(tzinfo=datetime.timezone.utc),
            snapshot=(model.snapshot_time.ToDatetime(
                tzinfo=datetime.timezone.utc)
                if model.HasField("snapshot_time") else None),
            proto=model)

    @property
    def input_dim(self) -> int:
        return self.proto.spec.input_dim


@dataclasses.dataclass(frozen=True)
class UsedNeighbors:
    """The k samples one target's prediction used, nearest first
    (predict(..., with_neighbors=True)): the caller's ids (k,) (0: none was
    given), their distances (k,) in the learned metric's coordinates, their
    inputs x (k, d) and their values y (k,) of the target."""
    sample_id: np.ndarray
    distance: np.ndarray
    x: np.ndarray
    y: np.ndarray

    @classmethod
    def from_proto(cls, used: regression_pb2.UsedNeighbors,
                   input_dim: int) -> "UsedNeighbors":
        neighbors = used.neighbors
        x = np.empty((len(neighbors), input_dim))
        for j, neighbor in enumerate(neighbors):
            x[j] = neighbor.x
        return cls(
            sample_id=np.array([n.sample_id for n in neighbors],
                               dtype=np.uint64),
            distance=_array(n.distance for n in neighbors),
            x=x,
            y=_array(n.y for n in neighbors))


@dataclasses.dataclass(frozen=True)
class Predictions:
    """Predictions of n queries of a model with m targets: y and spread
    (n, m), neighbors (n,): the local average's neighbour count (the
    largest over targets). `samples`: what the model had learned.
    `lo`, `hi` (n, m): each target's central interval at the model's level
    or the one asked for (infinite while the model is too young for it).
    `base_variance` (n, m): with the random-feature base, the posterior
    variance of the base's value at each query (docs/estimators.md); None
    for any other model. `used`: asked for (with_neighbors), used[i][t] the
    samples target t's prediction of query i used (UsedNeighbors); None
    otherwise."""
    y: np.ndarray
    spread: np.ndarray
    neighbors: np.ndarray
    samples: int
    lo: Optional[np.ndarray] = None
    hi: Optional[np.ndarray] = None
    base_variance: Optional[np.ndarray] = None
    used: Optional[List[List[UsedNeighbors]]] = None

    def frame(self, target_names: List[str], truth=None, index=None):
        """A pandas DataFrame with the columns of `streamreg predict`'s CSV:
        per target, the truth under its name when `truth`
        (n, m) is given, then predicted_<name>, lower_<name>,
        upper_<name>, spread_<name>, base_variance_<name> (the
        random-feature base's), and neighbors; rows on `index` if given.
        `target_names`: the model's (ModelInfo.target_names)."""
        import pandas
        if len(target_names) != self.y.shape[1]:
            raise ValueError(f"{len(target_names)} target names for "
                             f"predictions of {self.y.shape[1]} targets")
        blocks = []
        if truth is not None:
            truth = np.asarray(truth, dtype="float64").reshape(self.y.shape)
            blocks.append(("", truth))
        blocks += [("predicted_", self.y), ("lower_", self.lo),
                   ("upper_", self.hi), ("spread_", self.spread)]
        if self.base_variance is not None:
            blocks.append(("base_variance_", self.base_variance))
        columns = {}
        for prefix, values in blocks:
            for t, name in enumerate(target_names):
                columns[prefix + name] = values[:, t]
        columns["neighbors"] = self.neighbors
        return pandas.DataFrame(columns, index=index)

    @classmethod
    def from_protos(cls, predictions: List[regression_pb2.Prediction],
                    samples: int,
                    input_dim: Optional[int] = None) -> "Predictions":
        """From the wire; with `input_dim` (the queries'), the samples each
        prediction used if the server listed them."""
        n = len(predictions)
        num_targets = len(predictions[0].y) if predictions else 0
        y = np.empty((n, num_targets))
        spread = np.empty((n, num_targets))
        lo = np.empty((n, num_targets))
        hi = np.empty((n, num_targets))
        with_variance = n > 0 and len(predictions[0].base_variance) > 0
        base_variance = np.empty((n, num_targets)) if with_variance else None
        for i, p in enumerate(predictions):
            y[i] = p.y
            spread[i] = p.spread
            lo[i] = p.lower
            hi[i] = p.upper
            if with_variance:
                base_variance[i] = p.base_variance
        neighbors = np.array([p.neighbors for p in predictions], dtype=np.int64)
        used = None
        if input_dim is not None and n > 0 and len(predictions[0].used) > 0:
            used = [[UsedNeighbors.from_proto(target, input_dim)
                     for target in p.used] for p in predictions]
        return cls(y=y, spread=spread, neighbors=neighbors, samples=samples,
                   lo=lo, hi=hi, base_variance=base_variance, used=used)


@dataclasses.dataclass(frozen=True)
class StreamPrediction:
    """The answer to one sample of a learn stream: the model's prediction
    for it made before learning it (y, spread: (m,)), how many samples that
    prediction had learned (`learned`) and how many it had received before
    and not learned yet (`unlearned`), how long the oldest durable sample
    it missed had waited for learning (`learn_lag`, seconds), and how many
    of the stream's samples were durable when it was answered (`durable`).
    The server answers before the sample is durable; in the cautious mode
    (answer_when_durable) it answers once it is, with the sample's place in
    the model's stream (`sequence`, else 0) and whether its id had been
    learned already (`duplicate`). `lo`, `hi` (m,): the interval in effect
    for the prediction, at the model's level. With the random-feature base,
    `base_variance` (m,) as in Predictions, else None."""
    y: np.ndarray
    spread: np.ndarray
    neighbors: int
    sequence: int
    learned: int
    learn_lag: float
    duplicate: bool
    unlearned: int = 0
    durable: int = 0
    base_variance: Optional[np.ndarray] = None
    lo: Optional[np.ndarray] = None
    hi: Optional[np.ndarray] = None


@dataclasses.dataclass(frozen=True)
class AheadAnswer:
    """The answer to LearnStream.learn_ahead: the samples' predictions,
    each made before learning it (y, lo, hi: (n, m); no rows with
    answer_samples=False), the points' predictions ahead (ahead_y,
    ahead_lo, ahead_hi: (k, m)), the samples the model had learned when it
    made them (`learned`) and had received and not learned (`unlearned`),
    and the stream's samples durable when it was answered."""
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ahead_y: np.ndarray
    ahead_lo: np.ndarray
    ahead_hi: np.ndarray
    learned: int
    unlearned: int
    durable: int


@dataclasses.dataclass(frozen=True)
class IngestSummary:
    """What a learn() call did: samples learned, samples skipped as already
    learned (their ids), and the model's samples after it."""
    accepted: int
    duplicates: int
    samples: int


@dataclasses.dataclass(frozen=True)
class LearnedMetric:
    """One learned metric in standardized inputs (docs/estimators.md): per
    input `weights` (d,); for a matrix metric (EGOP, MLKR) `eigenvalues`
    (descending) and `eigenvectors` (d, d), column r the r-th direction.
    MLKR adds its map A (rank, d); GLML each target's gradient (m, d).
    `target`: the target it belongs to when learned per target, else
    None."""
    kind: str
    target: Optional[str]
    weights: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    map: np.ndarray
    gradient: np.ndarray


@dataclasses.dataclass(frozen=True)
class MetricInfo:
    """A model's learned metrics (GetMetric)."""
    kind: str
    input_names: List[str]
    metrics: List[LearnedMetric]

    @classmethod
    def from_proto(cls, report) -> "MetricInfo":
        metrics = []
        for metric in report.metrics:
            d = len(metric.weights)
            metrics.append(LearnedMetric(
                kind=metric_name(metric.kind),
                target=metric.target or None,
                weights=_array(metric.weights),
                eigenvalues=_array(metric.eigenvalues),
                eigenvectors=_matrix(metric.eigenvectors, d),
                map=_matrix(metric.map, d),
                gradient=_matrix(metric.gradient, d)))
        return cls(kind=metric_name(report.kind),
                   input_names=list(report.input_names), metrics=metrics)
