"""scikit-learn's estimator API over a model on a streamreg server.

    from sklearn.model_selection import cross_val_score
    from streamreg.sklearn import StreamRegressor

    print(cross_val_score(StreamRegressor("127.0.0.1:50051"), X, y))

    with StreamRegressor("127.0.0.1:50051") as model:   # deleted at the end
        for x, y in ticks:                              # the online case
            model.partial_fit(x.reshape(1, -1), y.reshape(1, -1))
        model.predict(X_new)

Needs scikit-learn (Debian: python3-sklearn); pandas (python3-pandas) is
optional: DataFrames are accepted wherever arrays are.
"""

import uuid
import weakref
from typing import Optional, Tuple

import grpc
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from streamreg import frames
from streamreg.client import Client
from streamreg.errors import Error
from streamreg.results import METRICS, REGRESSORS
from streamreg.v1 import model_pb2

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - the older method
    def _validate_data(estimator, *args, **kwargs):
        return estimator._validate_data(*args, **kwargs)

KERNELS = {
    "box": model_pb2.KERNEL_BOX,
    "triangular": model_pb2.KERNEL_TRIANGULAR,
    "epanechnikov": model_pb2.KERNEL_EPANECHNIKOV,
    "gaussian": model_pb2.KERNEL_GAUSSIAN,
}
CAPACITIES = {
    "unbounded": model_pb2.CAPACITY_POLICY_UNBOUNDED,
    "window": model_pb2.CAPACITY_POLICY_WINDOW,
    "reservoir": model_pb2.CAPACITY_POLICY_RESERVOIR,
}
# Queries per Predict call: well under the server's message limit at any
# input dimension it accepts.
_QUERIES_PER_CALL = 1000


class _ServerModel:
    """The server model a fitted StreamRegressor predicts with: its name,
    the client that reaches it, the Learn stream partial_fit keeps open,
    and whether the estimator owns it (deletes it when released). Holds no
    reference to the estimator, so that it can be the estimator's
    finalizer."""

    def __init__(self, client: Client, name: str, owned: bool):
        self.client = client
        self.name = name
        self.owned = owned
        self._stream = None

    def learn_one(self, x: np.ndarray, y: np.ndarray) -> None:
        """One sample over the Learn stream, answered once durable (so
        that every later predict sees it, as after fit)."""
        if self._stream is None:
            self._stream = self.client.learn_stream(self.name,
                                                    answer_when_durable=True)
        try:
            self._stream.learn(x, y)
        except Error:
            self._stream = None  # failed for good: the next call reopens
            raise

    def close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def release(self) -> None:
        """Ends the stream and deletes the model if owned; never raises
        (it also runs from the garbage collector and at exit)."""
        try:
            self.close_stream()
        except Exception:  # noqa: BLE001 - a finalizer must not raise
            pass
        if self.owned:
            self.owned = False
            try:
                self.client.delete(self.name)
            except Exception:  # noqa: BLE001 - deleted already, server gone,
                pass           # or gRPC shutting down at interpreter exit
        self.client.close()


class StreamRegressor(RegressorMixin, BaseEstimator):
    """A scikit-learn regressor whose model lives on a streamreg server.

    fit(X, y) creates a fresh server model with these options and learns
    the rows in order; partial_fit(X, y) learns more rows in order (a first
    call creates the model), one row over a Learn stream kept open, so a
    control loop can call it at every tick; predict(X) asks the model, and
    predict_interval(X) adds each prediction's central interval. y may have
    several columns (targets). Every option of the server's ModelSpec is a
    parameter (docs/api.md): metric (euclidean, gw, egop, mlkr, glml,
    auto), regressor (knn, kernel, local_linear, auto), kernel, capacity
    and capacity_limit, grids, seed, linear_base (None: the server's
    default), the random-feature base, interval_level, tuning (a dict of
    Tuning fields, e.g. {"honest_lag": 100}); the defaults are the server's.

    server: "host:port" (several of a cluster, comma-separated); model: the
    server model's name (None: a fresh "sklearn-<random>" per fit);
    timeout: seconds a server call may take (fit waits until the server has
    learned every row, which for a large fit on a slow machine takes
    minutes); token, root_certificates: as streamreg.Client's.

    The estimator owns the model it created and deletes it on close(), at
    the end of a `with` block, on the next fit, or when the estimator is
    garbage collected (or at interpreter exit, weakref.finalize). A copy
    (pickle, copy.deepcopy) predicts with the same server model but does
    not own it: it stops working once the original deletes it. Failed
    server calls raise streamreg.Error; a spec or sample the server refuses
    raises ValueError with the server's message (naming the field or
    sample), and leaves no model behind.

    DataFrames (pandas) are accepted wherever arrays are: their column
    names become the model's input and target names, and predict returns a
    DataFrame (a Series for one target given as a vector) with the query
    frame's index.
    """

    def __init__(self, server: str = "127.0.0.1:50051", *,
                 metric: str = "mlkr", regressor: str = "knn",
                 kernel: str = "box", per_target_metric: bool = False,
                 linear_base: Optional[bool] = None,
                 per_target_base: bool = False,
                 combine: bool = False,
                 random_feature_base: bool = False,
                 random_feature_frequencies: Optional[int] = None,
                 random_feature_lengthscales=None,
                 random_feature_ridges=None, k_grid=None,
                 bandwidth_grid=None, capacity: str = "unbounded",
                 capacity_limit: Optional[int] = None, seed: int = 0,
                 interval_level: Optional[float] = None,
                 mlkr_rank: Optional[int] = None, tuning=None,
                 model: Optional[str] = None, timeout: float = 600.0,
                 token: Optional[str] = None,
                 root_certificates: Optional[bytes] = None):
        self.server = server
        self.metric = metric
        self.regressor = regressor
        self.kernel = kernel
        self.per_target_metric = per_target_metric
        self.linear_base = linear_base
        self.per_target_base = per_target_base
        self.combine = combine
        self.random_feature_base = random_feature_base
        self.random_feature_frequencies = random_feature_frequencies
        self.random_feature_lengthscales = random_feature_lengthscales
        self.random_feature_ridges = random_feature_ridges
        self.k_grid = k_grid
        self.bandwidth_grid = bandwidth_grid
        self.capacity = capacity
        self.capacity_limit = capacity_limit
        self.seed = seed
        self.interval_level = interval_level
        self.mlkr_rank = mlkr_rank
        self.tuning = tuning
        self.model = model
        self.timeout = timeout
        self.token = token
        self.root_certificates = root_certificates

    # ---- learning ----

    def fit(self, X, y) -> "StreamRegressor":
        """A fresh server model (the one this estimator owned is deleted)
        that has learned the rows of X, y in order; returns once the server
        has learned them all (not only stored them), so that the time a fit
        takes is in fit."""
        inputs, targets, vector = self._check_samples(X, y, reset=True)
        self._release()
        self._create(y, targets.shape[1], vector)
        self._learn_or_discard(inputs, targets)
        self.info()  # waits until every row is learned
        return self

    def partial_fit(self, X, y) -> "StreamRegressor":
        """Learns the rows of X, y in order after everything learned so
        far (a first call creates the model, as fit does without learning).
        Returns once the server has made them durable, so every later
        predict sees them. A single row goes over a Learn stream kept open
        (the lowest latency); more go in one Ingest call."""
        first = not hasattr(self, "model_")
        one = None if first else self._one_checked_sample(X, y)
        if one is not None:  # the control loop's case, checked quickly
            self._server_call(lambda: self._server_model.learn_one(*one))
            return self
        inputs, targets, vector = self._check_samples(X, y, reset=first)
        if first:
            self._create(y, targets.shape[1], vector)
            self._learn_or_discard(inputs, targets)
            return self
        if targets.shape[1] != self.n_outputs_:
            raise ValueError(f"y has {targets.shape[1]} targets, but the "
                             f"model has {self.n_outputs_} targets")
        if inputs.shape[0] == 1:
            self._server_call(lambda: self._server_model.learn_one(
                inputs[0], targets[0]))
        else:
            self._server_call(lambda: self._server_model.client.learn(
                self.model_, inputs, targets))
        return self

    # ---- predicting ----

    def predict(self, X):
        """The model's predictions for the rows of X: (n,) when fit with a
        vector y, else (n, targets); a DataFrame (or Series) when X is
        one."""
        queries = self._check_queries(X)
        parts = [p.y for p in self._predictions(queries, None)]
        return self._shaped(parts[0] if len(parts) == 1 else np.vstack(parts),
                            X)

    def predict_interval(self, X, level: Optional[float] = None
                         ) -> Tuple[object, object]:
        """(lo, hi): each prediction's central interval at `level` in
        (0, 1) (None: the model's interval_level), shaped as predict's;
        infinite while the model is too young to calibrate it."""
        queries = self._check_queries(X)
        parts = list(self._predictions(queries, level))
        return (self._shaped(np.vstack([p.lo for p in parts]), X),
                self._shaped(np.vstack([p.hi for p in parts]), X))

    def info(self):
        """The server model's streamreg.ModelInfo: samples, prequential
        and honest errors, the spec in effect."""
        check_is_fitted(self)
        return self._server_call(
            lambda: self._server_model.client.info(self.model_))

    # ---- ownership ----

    def close(self) -> None:
        """Deletes the server model this estimator owns (a copy's is left
        alone) and closes its connection; the estimator is then unfitted."""
        self._release()
        self.__dict__.pop("n_features_in_", None)
        self.__dict__.pop("feature_names_in_", None)

    def __enter__(self) -> "StreamRegressor":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_server_model", None)
        state.pop("_finalizer", None)
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        if "model_" in state:  # a copy of a fitted estimator: not the owner
            self._server_model = _ServerModel(self._connect(), self.model_,
                                              owned=False)

    def _more_tags(self):
        return {"multioutput": True}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    # ---- helpers ----

    def _connect(self) -> Client:
        return Client(self.server, timeout=self.timeout, token=self.token,
                      root_certificates=self.root_certificates)

    def _create(self, y, num_targets: int, vector: bool) -> None:
        input_names = getattr(self, "feature_names_in_", None)
        target_names = frames.target_names(y, num_targets, vector)
        spec = self._spec(self.n_features_in_, input_names, target_names)
        client = self._connect()
        name = self.model or f"sklearn-{uuid.uuid4().hex[:16]}"
        try:
            client.create(name, inputs=self.n_features_in_,
                          targets=target_names, spec=spec)
        except Error as error:
            client.close()
            if error.code == grpc.StatusCode.INVALID_ARGUMENT:
                raise ValueError(error.details) from error
            raise
        server_model = _ServerModel(client, name, owned=True)
        self._server_model = server_model
        self._finalizer = weakref.finalize(self, server_model.release)
        self.model_ = name
        self.n_outputs_ = num_targets
        self.target_names_ = target_names
        self._vector_y = vector

    def _learn_or_discard(self, inputs, targets) -> None:
        """The first rows of a new model: on failure the model goes."""
        try:
            self._server_call(lambda: self._server_model.client.learn(
                self.model_, inputs, targets))
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        """Lets go of the server model (deleted if owned) and forgets
        what was fitted on the server (not the inputs' count and names the
        last fit's data set, which the next fit may have just checked)."""
        finalizer = self.__dict__.pop("_finalizer", None)
        server_model = self.__dict__.pop("_server_model", None)
        if finalizer is not None:
            finalizer()  # server_model.release, once
        elif server_model is not None:
            server_model.release()
        for fitted in ("model_", "n_outputs_", "target_names_", "_vector_y"):
            self.__dict__.pop(fitted, None)

    def _server_call(self, call):
        """call(); a sample or spec the server refuses is a ValueError."""
        try:
            return call()
        except Error as error:
            if error.code == grpc.StatusCode.INVALID_ARGUMENT:
                raise ValueError(error.details) from error
            raise

    def _check_samples(self, X, y, reset: bool):
        """X (n, d) and y (n,) or (n, m) checked the scikit-learn way
        (ValueError, TypeError), as float64 arrays (y as (n, m)), and
        whether y was a vector."""
        inputs, targets = _validate_data(
            self, X, y, reset=reset, multi_output=True, y_numeric=True,
            dtype=np.float64)
        targets = np.asarray(targets, dtype=np.float64)
        return (inputs, targets.reshape(targets.shape[0], -1),
                targets.ndim == 1)

    def _one_checked_sample(self, X, y):
        """(x, y) of a partial_fit of one float64 row to a model fit on
        arrays, checked as _check_samples would pass it in a few
        microseconds (its checks cost more than the server's answer); None
        for anything else, which _check_samples checks."""
        if (type(X) is not np.ndarray or type(y) is not np.ndarray or
                X.dtype != np.float64 or y.dtype != np.float64 or
                hasattr(self, "feature_names_in_") or
                X.shape != (1, self.n_features_in_) or
                y.size != self.n_outputs_ or
                y.shape not in ((1,), (1, self.n_outputs_)) or
                not (np.isfinite(X).all() and np.isfinite(y).all())):
            return None
        return X[0], y.reshape(-1)

    def _check_queries(self, X) -> np.ndarray:
        if not hasattr(self, "model_"):
            check_is_fitted(self)  # raises NotFittedError
        if (type(X) is np.ndarray and X.dtype == np.float64 and
                X.ndim == 2 and X.shape[0] > 0 and
                X.shape[1] == self.n_features_in_ and
                not hasattr(self, "feature_names_in_") and
                np.isfinite(X).all()):
            return X  # what _validate_data passes, at a fraction of its cost
        return _validate_data(self, X, reset=False, dtype=np.float64)

    def _predictions(self, queries: np.ndarray, level: Optional[float]):
        client = self._server_model.client
        for start in range(0, queries.shape[0], _QUERIES_PER_CALL):
            chunk = queries[start:start + _QUERIES_PER_CALL]
            yield self._server_call(lambda: client.predict(
                self.model_, chunk, interval_level=level))

    def _shaped(self, values: np.ndarray, X):
        if self._vector_y:
            values = values[:, 0]
        return frames.like(values, X, self.target_names_)

    def _spec(self, input_dim: int, input_names, target_names):
        """The wire ModelSpec of these parameters (the server checks the
        values and names the field it refuses)."""
        spec = model_pb2.ModelSpec(input_dim=input_dim,
                                   target_names=target_names)
        if input_names is not None:
            spec.input_names.extend(str(name) for name in input_names)
        spec.metric = _choice("metric", self.metric, METRICS)
        spec.regressor = _choice("regressor", self.regressor, REGRESSORS)
        spec.kernel = _choice("kernel", self.kernel, KERNELS)
        spec.per_target_metric = bool(self.per_target_metric)
        spec.capacity.policy = _choice("capacity", self.capacity, CAPACITIES)
        if self.capacity_limit is not None:
            spec.capacity.limit = int(self.capacity_limit)
        if self.bandwidth_grid is not None:
            spec.bandwidth_grid.extend(float(h) for h in self.bandwidth_grid)
        if self.k_grid is not None:
            spec.k_grid.extend(int(k) for k in self.k_grid)
        spec.seed = int(self.seed)
        if self.linear_base is not None:
            spec.linear_base = bool(self.linear_base)
        if self.per_target_base:
            spec.per_target_base = True
        if self.combine:
            spec.combine = True
        if self.random_feature_base:
            base = spec.random_feature_base
            base.SetInParent()
            if self.random_feature_frequencies is not None:
                base.frequencies = int(self.random_feature_frequencies)
            if self.random_feature_lengthscales is not None:
                base.lengthscales.extend(
                    float(v) for v in self.random_feature_lengthscales)
            if self.random_feature_ridges is not None:
                base.ridges.extend(float(v) for v in
                                   self.random_feature_ridges)
        if self.interval_level is not None:
            spec.interval_level = float(self.interval_level)
        if self.mlkr_rank is not None:
            spec.tuning.mlkr_rank = int(self.mlkr_rank)
        _set_tuning(spec.tuning, self.tuning or {})
        return spec


def _choice(parameter: str, value, choices) -> int:
    if value not in choices:
        raise ValueError(f"{parameter}: {value!r} is not one of "
                         f"{', '.join(choices)}")
    return choices[value]


def _set_tuning(tuning: model_pb2.Tuning, values) -> None:
    """Sets the Tuning fields named in `values` (enum values by name)."""
    fields = tuning.DESCRIPTOR.fields_by_name
    for key, value in dict(values).items():
        field = fields.get(key)
        if field is None:
            raise ValueError(f"tuning: {key!r} is not one of "
                             f"{', '.join(sorted(fields))}")
        if field.enum_type is not None and isinstance(value, str):
            known = field.enum_type.values_by_name
            if value not in known:
                raise ValueError(f"tuning.{key}: {value!r} is not one of "
                                 f"{', '.join(known)}")
            value = known[value].number
        try:
            setattr(tuning, key, value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"tuning.{key}: {error}") from None
