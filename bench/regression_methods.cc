#include "bench/regression_methods.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/normalized_error.h"
#include "core/base/running_moments.h"
#include "core/index/cover_tree.h"
#include "core/metric/batch_gradients.h"
#include "core/metric/glml_metric.h"
#include "core/metric/glml_search.h"
#include "core/metric/metric_transform.h"
#include "core/metric/mlkr_fit.h"
#include "core/model/model.h"
#include "core/regression/local_average.h"
#include "core/regression/online_ridge.h"

namespace streamreg {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Mean(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) /
         static_cast<double>(values.size());
}

double Nmse(const std::vector<double>& predicted,
            const std::vector<double>& truth) {
  NormalizedError error(1);
  for (std::size_t i = 0; i < truth.size(); ++i) {
    error.Add({&predicted[i], 1}, {&truth[i], 1});
  }
  return error.Nmse(0);
}

std::vector<std::uint64_t> Iota(std::size_t n) {
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  return ids;
}

// Rows mapped through `transform`.
std::vector<double> Mapped(const MetricTransform& transform,
                           const std::vector<double>& rows, std::size_t d) {
  std::vector<double> out(rows.size());
  for (std::size_t r = 0; r < rows.size() / d; ++r) {
    transform.Apply({rows.data() + r * d, d}, {out.data() + r * d, d});
  }
  return out;
}

// A regressor over points in some coordinates: k-NN or box kernel; with
// `glml`, under GLML's metric at each query, from a Gaussian fitted to the
// points.
class GridRegressor {
 public:
  GridRegressor(RegressorKind kind, std::size_t d, std::vector<double> x,
                std::vector<double> y, bool glml = false)
      : kind_(kind),
        d_(d),
        y_(std::move(y)),
        tree_(*CoverTree::Build(d, x, Iota(y_.size()))),
        fallback_(Mean(y_)),
        near_(1) {
    if (!glml) return;
    gaussian_.emplace(d, 1, kGaussianRidge, 1.0);
    for (std::size_t i = 0; i < y_.size(); ++i) {
      gaussian_->Add({x.data() + i * d, d}, {&y_[i], 1});
    }
  }

  // Predictions of every grid value (a bandwidth, or a k) for `query`.
  void PredictGrid(const double* query, const std::vector<double>& grid,
                   std::vector<double>* values) {
    Search(query, grid.back());
    values->resize(grid.size());
    if (kind_ == RegressorKind::kKernel) {
      KernelAverageGrid(Kernel::kBox, grid, near_, {&fallback_, 1}, *values);
    } else {
      std::vector<std::size_t> ks(grid.begin(), grid.end());
      NearestAverageGrid(ks, near_, {&fallback_, 1}, *values);
    }
  }

  double Predict(const double* query, double parameter) {
    Search(query, parameter);
    LocalAverage average;
    if (kind_ == RegressorKind::kKernel) {
      KernelAverageAt(Kernel::kBox, parameter, near_, &average);
    } else {
      NearestAverageAt(static_cast<std::size_t>(parameter), near_, &average);
    }
    return average.neighbors == 0 ? fallback_ : average.value[0];
  }

 private:
  // A ridge small enough to leave the Gaussian's covariance as it is.
  static constexpr double kGaussianRidge = 1e-6;
  static constexpr double kGlmlGammaRatio = 1e-2;

  void Search(const double* query, double parameter) {
    const std::span<const double> q(query, d_);
    if (gaussian_.has_value()) {
      SearchGlml(q, parameter);
    } else if (kind_ == RegressorKind::kKernel) {
      tree_.Range(q, parameter, &found_).IgnoreError();
    } else {
      tree_.Knn(q, static_cast<std::size_t>(parameter), &found_).IgnoreError();
    }
    near_.Gather(found_, [this](std::uint64_t id) { return &y_[id]; });
  }

  // The neighbours under the query's GLML metric: exactly the k nearest, or
  // every point within the bandwidth.
  void SearchGlml(std::span<const double> q, double parameter) {
    const GlmlMetric metric = GlmlMetricAt(*gaussian_, q, 0, kGlmlGammaRatio);
    if (kind_ != RegressorKind::kKernel) {
      GlmlKnn(tree_, q, metric, static_cast<std::size_t>(parameter), &found_)
          .IgnoreError();
      return;
    }
    GlmlRange(tree_, q, metric, parameter, &found_).IgnoreError();
  }

  RegressorKind kind_;
  std::size_t d_;
  std::vector<double> y_;
  CoverTree tree_;
  double fallback_;
  std::vector<Neighbor> found_;
  NeighborTargets near_;
  std::optional<OnlineRidge> gaussian_;  // GLML's global model
};

// Two-fold cross-validated squared error of every grid value: each half of
// the training set predicts the other.
std::vector<double> CrossValidate(RegressorKind kind, std::size_t d,
                                  const std::vector<double>& x,
                                  const std::vector<double>& y,
                                  const std::vector<double>& grid,
                                  bool glml = false) {
  const std::size_t n = y.size();
  const std::size_t half = n / 2;
  std::vector<double> errors(grid.size(), 0.0);
  std::vector<double> values;
  for (int fold = 0; fold < 2; ++fold) {
    const std::size_t fit_begin = fold == 0 ? 0 : half;
    const std::size_t fit_end = fold == 0 ? half : n;
    const std::size_t test_begin = fold == 0 ? half : 0;
    const std::size_t test_end = fold == 0 ? n : half;
    GridRegressor regressor(
        kind, d, {x.begin() + fit_begin * d, x.begin() + fit_end * d},
        {y.begin() + fit_begin, y.begin() + fit_end}, glml);
    for (std::size_t i = test_begin; i < test_end; ++i) {
      regressor.PredictGrid(x.data() + i * d, grid, &values);
      for (std::size_t g = 0; g < grid.size(); ++g) {
        errors[g] += (values[g] - y[i]) * (values[g] - y[i]);
      }
    }
  }
  return errors;
}

std::size_t ArgMin(const std::vector<double>& values) {
  return std::min_element(values.begin(), values.end()) - values.begin();
}

// MLKR's map on the standardized training inputs (targets standardized),
// as a transform normalized to trace A^T A = d.
MetricTransform MlkrTransform(const std::vector<double>& z_train,
                              const std::vector<double>& y, std::size_t d) {
  const double mean = Mean(y);
  double squares = 0.0;
  for (double v : y) squares += (v - mean) * (v - mean);
  const double sd = std::sqrt(squares / static_cast<double>(y.size()));
  std::vector<double> scaled(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    scaled[i] = (y[i] - mean) / (sd > 0.0 ? sd : 1.0);
  }
  const MlkrSamples samples{y.size(), d, 1, z_train, scaled};
  MlkrFitOptions options;
  options.threads = 2;
  const absl::StatusOr<MlkrFit> fit =
      FitMlkr(samples, InitialMlkrMap(samples), options);
  std::vector<double> map = fit.ok() ? fit->a : InitialMlkrMap(samples);
  double frobenius = 0.0;
  for (double v : map) frobenius += v * v;
  if (frobenius > 0.0) {
    const double scale = std::sqrt(static_cast<double>(d) / frobenius);
    for (double& v : map) v *= scale;
  }
  return MetricTransform::Dense(std::vector<double>(d, 0.0),
                                std::vector<double>(d, 1.0), std::move(map));
}

// The regressor's grid: the model's defaults (GLML's kernel has its own).
std::vector<double> RegressorGrid(RegressorKind kind, std::size_t d,
                                  bool glml) {
  if (kind == RegressorKind::kKernel) {
    return DefaultBandwidthGrid(
        d, glml ? MetricKind::kGlml : MetricKind::kEuclidean);
  }
  std::vector<double> grid;
  for (std::size_t k : DefaultKGrid()) grid.push_back(static_cast<double>(k));
  return grid;
}

}  // namespace

absl::StatusOr<RegressionMethod> ParseRegressionMethod(absl::string_view name) {
  RegressionMethod method;
  absl::string_view rest = name;
  if (absl::ConsumePrefix(&rest, "knn")) {
    method.regressor = RegressorKind::kNearest;
  } else if (absl::ConsumePrefix(&rest, "kr")) {
    method.regressor = RegressorKind::kKernel;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--methods: unknown method '", name, "'"));
  }
  if (rest.empty()) {
    method.metric = MetricKind::kEuclidean;
  } else if (rest == "-mlkr") {
    method.metric = MetricKind::kMlkr;
  } else if (rest == "-glml") {
    method.metric = MetricKind::kGlml;
  } else if (rest == "-gw") {
    method.metric = MetricKind::kGradientWeights;
  } else if (rest == "-egop") {
    method.metric = MetricKind::kEgop;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--methods: unknown method '", name, "'"));
  }
  return method;
}

std::string RegressionMethodName(RegressionMethod method) {
  std::string name = method.regressor == RegressorKind::kNearest ? "knn" : "kr";
  if (method.metric == MetricKind::kGradientWeights) name += "-gw";
  if (method.metric == MetricKind::kEgop) name += "-egop";
  if (method.metric == MetricKind::kMlkr) name += "-mlkr";
  if (method.metric == MetricKind::kGlml) name += "-glml";
  return name;
}

MethodOutcome RunBatch(const RegressionSplit& split, RegressionMethod method) {
  const Clock::time_point start = Clock::now();
  const std::size_t d = split.dim;
  const std::size_t n = split.train_size();
  // Standardize by the training statistics.
  RunningMoments moments(d);
  for (std::size_t s = 0; s < n; ++s) {
    moments.Add({split.train_x.data() + s * d, d});
  }
  const MetricTransform standardize = MetricTransform::Standardizing(moments);
  const std::vector<double> z_train = Mapped(standardize, split.train_x, d);
  const std::vector<double> z_test = Mapped(standardize, split.test_x, d);

  MethodOutcome outcome;
  // The candidate coordinates: standardized Euclidean, or the learned
  // metric for each step t.
  std::vector<MetricTransform> candidates;
  std::vector<double> steps;
  if (method.metric == MetricKind::kMlkr) {
    candidates.push_back(MlkrTransform(z_train, split.train_y, d));
    steps.push_back(0.0);
  } else if (method.metric == MetricKind::kEuclidean ||
             method.metric == MetricKind::kGlml) {
    // GLML's metric is per query, in standardized coordinates.
    candidates.push_back(MetricTransform::Standardizing(
        std::vector<double>(d, 0.0), std::vector<double>(d, 1.0)));
    steps.push_back(0.0);
  } else {
    const std::vector<double> bandwidths = DefaultBandwidthGrid(d);
    const double h = bandwidths[ArgMin(CrossValidate(
        RegressorKind::kKernel, d, z_train, split.train_y, bandwidths))];
    outcome.gradient_bandwidth = h;
    const CoverTree tree = *CoverTree::Build(d, z_train, Iota(n));
    for (double ratio : {0.25, 0.5, 1.0}) {
      GradientStatistics stats(d, 1, method.metric == MetricKind::kEgop);
      AddBatchGradients(
          tree, Iota(n), [&](std::uint64_t id) { return &split.train_y[id]; },
          Kernel::kBox, h, ratio * h, GradientEstimatorKind::kFiniteDifferences,
          &stats);
      const std::vector<double> unit = {1.0};
      const LearnedMetric metric = EstimateMetric(method.metric, stats, 0, unit,
                                                  /*with_spectrum=*/false);
      candidates.push_back(TransformFor(metric, std::vector<double>(d, 0.0),
                                        std::vector<double>(d, 1.0),
                                        ModelConfig().egop_ridge));
      steps.push_back(ratio * h);
    }
  }
  // Cross-validate the regressor in each candidate; keep the best pair.
  const bool glml = method.metric == MetricKind::kGlml;
  const std::vector<double> grid = RegressorGrid(method.regressor, d, glml);
  double best_error = std::numeric_limits<double>::infinity();
  std::size_t best_candidate = 0;
  double parameter = grid[0];
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const std::vector<double> errors =
        CrossValidate(method.regressor, d, Mapped(candidates[c], z_train, d),
                      split.train_y, grid, glml);
    const std::size_t g = ArgMin(errors);
    if (errors[g] < best_error) {
      best_error = errors[g];
      best_candidate = c;
      parameter = grid[g];
    }
  }
  outcome.gradient_step = steps[best_candidate];
  if (method.regressor == RegressorKind::kKernel) {
    outcome.bandwidth = parameter;
  } else {
    outcome.k = static_cast<std::size_t>(parameter);
  }
  const MetricTransform& chosen = candidates[best_candidate];
  GridRegressor regressor(method.regressor, d, Mapped(chosen, z_train, d),
                          split.train_y, glml);
  outcome.fit_seconds = SecondsSince(start);

  const std::vector<double> u_test = Mapped(chosen, z_test, d);
  std::vector<double> predicted(split.test_size());
  const Clock::time_point predict_start = Clock::now();
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    predicted[i] = regressor.Predict(u_test.data() + i * d, parameter);
  }
  outcome.predict_us =
      1e6 * SecondsSince(predict_start) / static_cast<double>(predicted.size());
  outcome.nmse = Nmse(predicted, split.test_y);
  return outcome;
}

MethodOutcome RunOnline(const RegressionSplit& split, RegressionMethod method,
                        std::uint64_t seed) {
  const std::size_t d = split.dim;
  ModelConfig config;
  config.input_dim = d;
  config.target_names = {"y"};
  config.regressor = method.regressor;
  config.metric = method.metric;
  config.kernel = Kernel::kBox;
  // GLML's Gaussian follows the targets themselves (ModelConfig).
  config.linear_base = method.metric != MetricKind::kGlml;
  // The papers' estimator, as the batch rows use.
  config.gradient_estimator = GradientEstimatorKind::kFiniteDifferences;
  config.seed = seed;
  // The step t of a learned metric is chosen online too: one model per
  // ratio t/h, all fed the same stream; the one with the least prequential
  // error predicts (no test data is looked at).
  const std::vector<double> ratios =
      EstimatesGradients(method.metric)
          ? std::vector<double>{0.25, 0.5, 1.0}
          : std::vector<double>{config.step_ratio};
  std::vector<std::unique_ptr<Model>> models;
  for (double ratio : ratios) {
    config.step_ratio = ratio;
    models.push_back(*Model::Create(config));
  }
  const Clock::time_point start = Clock::now();
  for (std::size_t s = 0; s < split.train_size(); ++s) {
    const Sample sample{
        {split.train_x.data() + s * d, d}, {&split.train_y[s], 1}, s};
    for (auto& model : models) {
      if (!model->Learn({&sample, 1}).ok()) std::abort();
    }
  }
  MethodOutcome outcome;
  outcome.fit_seconds = SecondsSince(start);
  outcome.learn_us = 1e6 * outcome.fit_seconds /
                     static_cast<double>(split.train_size() * models.size());
  const Model* best = models[0].get();
  for (const auto& model : models) {
    if (model->stats().prequential_mse[0] < best->stats().prequential_mse[0]) {
      best = model.get();
    }
  }
  std::vector<double> predicted(split.test_size());
  const Clock::time_point predict_start = Clock::now();
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    predicted[i] = best->Predict({split.test_x.data() + i * d, d})->value[0];
  }
  outcome.predict_us =
      1e6 * SecondsSince(predict_start) / static_cast<double>(predicted.size());
  outcome.nmse = Nmse(predicted, split.test_y);
  const ModelStats stats = best->stats();
  outcome.bandwidth = stats.bandwidth[0];
  outcome.k = stats.k[0];
  outcome.gradient_bandwidth = stats.gradient_bandwidth;
  outcome.gradient_step = stats.gradient_step;
  return outcome;
}

}  // namespace streamreg
