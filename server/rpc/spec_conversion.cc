#include "server/rpc/spec_conversion.h"

#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/model/model_settings.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

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

// The wire path of the setting an engine error names first ("step_ratio:
// ..." is "spec.tuning.step_ratio: ...").
std::string SpecField(absl::string_view message) {
  const absl::string_view name = message.substr(0, message.find_first_of(":["));
  const ModelSetting* setting = FindModelSetting(name);
  const bool in_tuning =
      setting != nullptr && setting->wire == SettingWire::kTuning;
  return absl::StrCat(in_tuning ? "spec.tuning." : "spec.", message);
}

// The field of v1::Tuning that carries `setting`; a test checks that every
// kTuning setting has one of a number type, and every field a setting.
const google::protobuf::FieldDescriptor* TuningField(
    const ModelSetting& setting) {
  return v1::Tuning::descriptor()->FindFieldByName(std::string(setting.name));
}

// The kTuning settings the client set, over the defaults.
// A Tuning field's value as a number: a double, a count or a flag (1 or 0).
double TuningNumber(const v1::Tuning& tuning,
                    const google::protobuf::FieldDescriptor& field) {
  const google::protobuf::Reflection& wire = *tuning.GetReflection();
  switch (field.cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
      return wire.GetDouble(tuning, &field);
    case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
      return wire.GetBool(tuning, &field) ? 1.0 : 0.0;
    default:
      return static_cast<double>(wire.GetUInt32(tuning, &field));
  }
}

void TuningFromWire(const v1::Tuning& tuning, ModelConfig& config) {
  const google::protobuf::Reflection& wire = *tuning.GetReflection();
  for (const ModelSetting& setting : ModelSettings()) {
    if (setting.wire != SettingWire::kTuning) continue;
    const google::protobuf::FieldDescriptor* field = TuningField(setting);
    if (field == nullptr || !wire.HasField(tuning, field)) continue;
    SetSettingNumber(setting, TuningNumber(tuning, *field), config);
  }
  if (tuning.gradient_estimator() ==
      v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES) {
    config.gradient_estimator = GradientEstimatorKind::kFiniteDifferences;
  }
}

// Every kTuning setting of `config`, set.
void TuningToWire(const ModelConfig& config, v1::Tuning& tuning) {
  const google::protobuf::Reflection& wire = *tuning.GetReflection();
  for (const ModelSetting& setting : ModelSettings()) {
    if (setting.wire != SettingWire::kTuning) continue;
    const google::protobuf::FieldDescriptor* field = TuningField(setting);
    if (field == nullptr) continue;
    const double value = SettingNumber(setting, config);
    switch (field->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
        wire.SetDouble(&tuning, field, value);
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
        wire.SetBool(&tuning, field, value != 0.0);
        break;
      default:
        wire.SetUInt32(&tuning, field, static_cast<std::uint32_t>(value));
    }
  }
  tuning.set_gradient_estimator(
      config.gradient_estimator == GradientEstimatorKind::kFiniteDifferences
          ? v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES
          : v1::GRADIENT_ESTIMATOR_LOCAL_LINEAR);
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
  config.combine = spec.combine();
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
  TuningFromWire(spec.tuning(), config);
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
  spec.set_combine(config.combine);
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
  TuningToWire(config, *spec.mutable_tuning());
  return spec;
}

}  // namespace streamreg
