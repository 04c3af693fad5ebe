#include "server/rpc/spec_conversion.h"

#include <string>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace streamreg {
namespace {

MetricKind MetricFromWire(v1::Metric metric) {
  switch (metric) {
    case v1::METRIC_EUCLIDEAN:
      return MetricKind::kEuclidean;
    case v1::METRIC_GRADIENT_WEIGHTS:
      return MetricKind::kGradientWeights;
    case v1::METRIC_EGOP:
      return MetricKind::kEgop;
    case v1::METRIC_AUTO:
      return MetricKind::kAuto;
    case v1::METRIC_MLKR:
      return MetricKind::kMlkr;
    case v1::METRIC_GLML:
      return MetricKind::kGlml;
    default:  // unset
      return ModelConfig().metric;
  }
}

Kernel KernelFromWire(v1::Kernel kernel) {
  switch (kernel) {
    case v1::KERNEL_TRIANGULAR:
      return Kernel::kTriangular;
    case v1::KERNEL_EPANECHNIKOV:
      return Kernel::kEpanechnikov;
    case v1::KERNEL_GAUSSIAN:
      return Kernel::kTruncatedGaussian;
    default:
      return Kernel::kBox;
  }
}

v1::Kernel KernelToWire(Kernel kernel) {
  switch (kernel) {
    case Kernel::kTriangular:
      return v1::KERNEL_TRIANGULAR;
    case Kernel::kEpanechnikov:
      return v1::KERNEL_EPANECHNIKOV;
    case Kernel::kTruncatedGaussian:
      return v1::KERNEL_GAUSSIAN;
    case Kernel::kBox:
      break;
  }
  return v1::KERNEL_BOX;
}

RegressorKind RegressorFromWire(v1::Regressor regressor) {
  switch (regressor) {
    case v1::REGRESSOR_KERNEL:
      return RegressorKind::kKernel;
    case v1::REGRESSOR_LOCAL_LINEAR:
      return RegressorKind::kLocalLinear;
    case v1::REGRESSOR_AUTO:
      return RegressorKind::kAuto;
    default:
      return RegressorKind::kNearest;
  }
}

CapacityPolicy PolicyFromWire(v1::CapacityPolicy policy) {
  switch (policy) {
    case v1::CAPACITY_POLICY_WINDOW:
      return CapacityPolicy::kWindow;
    case v1::CAPACITY_POLICY_RESERVOIR:
      return CapacityPolicy::kReservoir;
    default:
      return CapacityPolicy::kUnbounded;
  }
}

v1::CapacityPolicy PolicyToWire(CapacityPolicy policy) {
  switch (policy) {
    case CapacityPolicy::kWindow:
      return v1::CAPACITY_POLICY_WINDOW;
    case CapacityPolicy::kReservoir:
      return v1::CAPACITY_POLICY_RESERVOIR;
    case CapacityPolicy::kUnbounded:
      break;
  }
  return v1::CAPACITY_POLICY_UNBOUNDED;
}

// The wire path of a configuration field the engine named.
std::string SpecField(absl::string_view message) {
  for (absl::string_view tuning :
       {"step_ratio",         "selection_forgetting",
        "metric_forgetting",  "metric_refresh_growth",
        "egop_ridge",         "drift_tolerance",
        "drift_check_every",  "selection_window",
        "local_linear_ridge", "honest_lag",
        "base_ridge",         "base_forgetting",
        "mlkr_rank",          "mlkr_neighbors",
        "mlkr_fit_samples",   "mlkr_fit_steps",
        "glml_gamma_ratio",   "metric_refresh_samples",
        "mlkr_fit_budget",    "interval_window",
        "interval_step",      "max_scoring_stride",
        "base_relative_ridge"}) {
    if (absl::StartsWith(message, tuning)) {
      return absl::StrCat("spec.tuning.", message);
    }
  }
  return absl::StrCat("spec.", message);
}

}  // namespace

v1::Regressor RegressorToWire(RegressorKind regressor) {
  switch (regressor) {
    case RegressorKind::kKernel:
      return v1::REGRESSOR_KERNEL;
    case RegressorKind::kLocalLinear:
      return v1::REGRESSOR_LOCAL_LINEAR;
    case RegressorKind::kAuto:
      return v1::REGRESSOR_AUTO;
    case RegressorKind::kNearest:
      break;
  }
  return v1::REGRESSOR_KNN;
}

v1::Metric MetricToWire(MetricKind metric) {
  switch (metric) {
    case MetricKind::kEuclidean:
      return v1::METRIC_EUCLIDEAN;
    case MetricKind::kEgop:
      return v1::METRIC_EGOP;
    case MetricKind::kAuto:
      return v1::METRIC_AUTO;
    case MetricKind::kMlkr:
      return v1::METRIC_MLKR;
    case MetricKind::kGlml:
      return v1::METRIC_GLML;
    case MetricKind::kGradientWeights:
      break;
  }
  return v1::METRIC_GRADIENT_WEIGHTS;
}

absl::StatusOr<ModelConfig> ConfigFromSpec(const v1::ModelSpec& spec) {
  for (const auto& [value, is_valid, field] :
       {std::tuple{int{spec.metric()}, &v1::Metric_IsValid, "spec.metric"},
        std::tuple{int{spec.regressor()}, &v1::Regressor_IsValid,
                   "spec.regressor"},
        std::tuple{int{spec.kernel()}, &v1::Kernel_IsValid, "spec.kernel"},
        std::tuple{int{spec.capacity().policy()}, &v1::CapacityPolicy_IsValid,
                   "spec.capacity.policy"},
        std::tuple{int{spec.tuning().gradient_estimator()},
                   &v1::GradientEstimator_IsValid,
                   "spec.tuning.gradient_estimator"}}) {
    if (!is_valid(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": unknown value ", value));
    }
  }
  if (spec.capacity().limit() != 0 &&
      PolicyFromWire(spec.capacity().policy()) == CapacityPolicy::kUnbounded) {
    return absl::InvalidArgumentError(
        "spec.capacity.limit: set, but the policy is unbounded (choose "
        "CAPACITY_POLICY_WINDOW or CAPACITY_POLICY_RESERVOIR)");
  }
  ModelConfig config;
  config.input_dim = spec.input_dim();
  config.target_names.assign(spec.target_names().begin(),
                             spec.target_names().end());
  config.metric = MetricFromWire(spec.metric());
  config.regressor = RegressorFromWire(spec.regressor());
  config.kernel = KernelFromWire(spec.kernel());
  config.per_target_metric = spec.per_target_metric();
  // Unset: a base where it fits, except under GLML (whose metric follows
  // the targets' gradient, which a base takes out of the residuals).
  config.linear_base = spec.has_linear_base()
                           ? spec.linear_base()
                           : config.input_dim <= kMaxLinearBaseDim &&
                                 config.metric != MetricKind::kGlml;
  config.per_target_base = spec.per_target_base();
  if (spec.has_random_feature_base()) {
    const v1::RandomFeatureBase& base = spec.random_feature_base();
    config.random_feature_base = true;
    if (base.frequencies() != 0) {
      config.random_feature_frequencies = base.frequencies();
    }
    if (!base.lengthscales().empty()) {
      config.random_feature_lengthscales.assign(base.lengthscales().begin(),
                                                base.lengthscales().end());
    }
    if (!base.ridges().empty()) {
      config.random_feature_ridges.assign(base.ridges().begin(),
                                          base.ridges().end());
    }
  }
  if (spec.has_interval_level()) config.interval_level = spec.interval_level();
  config.capacity.policy = PolicyFromWire(spec.capacity().policy());
  config.capacity.limit = spec.capacity().limit();
  config.bandwidth_grid.assign(spec.bandwidth_grid().begin(),
                               spec.bandwidth_grid().end());
  config.k_grid.assign(spec.k_grid().begin(), spec.k_grid().end());
  config.seed = spec.seed();
  const v1::Tuning& tuning = spec.tuning();
  if (tuning.has_step_ratio()) config.step_ratio = tuning.step_ratio();
  if (tuning.has_selection_forgetting()) {
    config.selection_forgetting = tuning.selection_forgetting();
  }
  if (tuning.has_metric_forgetting()) {
    config.metric_forgetting = tuning.metric_forgetting();
  }
  if (tuning.has_metric_refresh_growth()) {
    config.metric_refresh_growth = tuning.metric_refresh_growth();
  }
  if (tuning.has_egop_ridge()) config.egop_ridge = tuning.egop_ridge();
  if (tuning.has_drift_tolerance()) {
    config.drift_tolerance = tuning.drift_tolerance();
  }
  if (tuning.has_drift_check_every()) {
    config.drift_check_every = tuning.drift_check_every();
  }
  if (tuning.has_selection_window()) {
    config.selection_window = tuning.selection_window();
  }
  if (tuning.has_local_linear_ridge()) {
    config.local_linear_ridge = tuning.local_linear_ridge();
  }
  if (tuning.has_honest_lag()) config.honest_lag = tuning.honest_lag();
  if (tuning.has_base_ridge()) config.base_ridge = tuning.base_ridge();
  if (tuning.has_base_forgetting()) {
    config.base_forgetting = tuning.base_forgetting();
  }
  if (tuning.has_base_relative_ridge()) {
    config.base_relative_ridge = tuning.base_relative_ridge();
  }
  if (tuning.has_mlkr_rank()) config.mlkr_rank = tuning.mlkr_rank();
  if (tuning.has_mlkr_neighbors()) {
    config.mlkr_neighbors = tuning.mlkr_neighbors();
  }
  if (tuning.has_mlkr_fit_samples()) {
    config.mlkr_fit_samples = tuning.mlkr_fit_samples();
  }
  if (tuning.has_mlkr_fit_steps()) {
    config.mlkr_fit_steps = tuning.mlkr_fit_steps();
  }
  if (tuning.has_interval_window()) {
    config.interval_window = tuning.interval_window();
  }
  if (tuning.has_interval_step()) config.interval_step = tuning.interval_step();
  if (tuning.has_max_scoring_stride()) {
    config.max_scoring_stride = tuning.max_scoring_stride();
  }
  if (tuning.has_mlkr_fit_budget()) {
    config.mlkr_fit_budget = tuning.mlkr_fit_budget();
  }
  if (tuning.has_glml_gamma_ratio()) {
    config.glml_gamma_ratio = tuning.glml_gamma_ratio();
  }
  if (tuning.has_metric_refresh_samples()) {
    config.metric_refresh_samples = tuning.metric_refresh_samples();
  }
  if (tuning.gradient_estimator() ==
      v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES) {
    config.gradient_estimator = GradientEstimatorKind::kFiniteDifferences;
  }
  if (absl::Status status = CompleteAndValidate(&config); !status.ok()) {
    return absl::Status(status.code(), SpecField(status.message()));
  }
  return config;
}

v1::ModelSpec SpecFromConfig(const ModelConfig& config) {
  v1::ModelSpec spec;
  spec.set_input_dim(static_cast<std::uint32_t>(config.input_dim));
  for (const std::string& name : config.target_names) {
    spec.add_target_names(name);
  }
  spec.set_metric(MetricToWire(config.metric));
  spec.set_regressor(RegressorToWire(config.regressor));
  spec.set_kernel(KernelToWire(config.kernel));
  spec.set_per_target_metric(config.per_target_metric);
  spec.set_linear_base(config.linear_base);
  spec.set_per_target_base(config.per_target_base);
  if (config.random_feature_base) {
    v1::RandomFeatureBase& base = *spec.mutable_random_feature_base();
    base.set_frequencies(
        static_cast<std::uint32_t>(config.random_feature_frequencies));
    for (double l : config.random_feature_lengthscales) {
      base.add_lengthscales(l);
    }
    for (double r : config.random_feature_ridges) base.add_ridges(r);
  }
  spec.set_interval_level(config.interval_level);
  spec.mutable_capacity()->set_policy(PolicyToWire(config.capacity.policy));
  spec.mutable_capacity()->set_limit(config.capacity.limit);
  for (double h : config.bandwidth_grid) spec.add_bandwidth_grid(h);
  for (std::size_t k : config.k_grid) {
    spec.add_k_grid(static_cast<std::uint32_t>(k));
  }
  spec.set_seed(config.seed);
  v1::Tuning& tuning = *spec.mutable_tuning();
  tuning.set_step_ratio(config.step_ratio);
  tuning.set_selection_forgetting(config.selection_forgetting);
  tuning.set_metric_forgetting(config.metric_forgetting);
  tuning.set_metric_refresh_growth(config.metric_refresh_growth);
  tuning.set_egop_ridge(config.egop_ridge);
  tuning.set_drift_tolerance(config.drift_tolerance);
  tuning.set_drift_check_every(
      static_cast<std::uint32_t>(config.drift_check_every));
  tuning.set_selection_window(
      static_cast<std::uint32_t>(config.selection_window));
  tuning.set_local_linear_ridge(config.local_linear_ridge);
  tuning.set_honest_lag(static_cast<std::uint32_t>(config.honest_lag));
  tuning.set_base_ridge(config.base_ridge);
  tuning.set_base_forgetting(config.base_forgetting);
  tuning.set_base_relative_ridge(config.base_relative_ridge);
  tuning.set_gradient_estimator(
      config.gradient_estimator == GradientEstimatorKind::kFiniteDifferences
          ? v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES
          : v1::GRADIENT_ESTIMATOR_LOCAL_LINEAR);
  tuning.set_mlkr_rank(static_cast<std::uint32_t>(config.mlkr_rank));
  tuning.set_mlkr_neighbors(static_cast<std::uint32_t>(config.mlkr_neighbors));
  tuning.set_mlkr_fit_samples(
      static_cast<std::uint32_t>(config.mlkr_fit_samples));
  tuning.set_mlkr_fit_steps(static_cast<std::uint32_t>(config.mlkr_fit_steps));
  tuning.set_mlkr_fit_budget(
      static_cast<std::uint32_t>(config.mlkr_fit_budget));
  tuning.set_glml_gamma_ratio(config.glml_gamma_ratio);
  tuning.set_metric_refresh_samples(
      static_cast<std::uint32_t>(config.metric_refresh_samples));
  tuning.set_interval_window(
      static_cast<std::uint32_t>(config.interval_window));
  tuning.set_interval_step(config.interval_step);
  tuning.set_max_scoring_stride(
      static_cast<std::uint32_t>(config.max_scoring_stride));
  return spec;
}

}  // namespace streamreg
