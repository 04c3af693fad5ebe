#ifndef STREAMREG_SERVER_RPC_SPEC_CONVERSION_H_
#define STREAMREG_SERVER_RPC_SPEC_CONVERSION_H_

#include "absl/status/statusor.h"
#include "core/model/model_config.h"
#include "streamreg/v1/model.pb.h"

namespace streamreg {

// The engine's configuration for a wire ModelSpec, completed (unspecified
// enums and empty grids get their defaults) and validated; errors name the
// spec's field ("spec.tuning.step_ratio: ...", "spec.k_grid[2]: ...").
absl::StatusOr<ModelConfig> ConfigFromSpec(const v1::ModelSpec& spec);

// The wire enums of a metric and a regressor kind.
v1::Metric MetricToWire(MetricKind metric);
v1::Regressor RegressorToWire(RegressorKind regressor);

// The spec in effect of a configuration: every enum, grid and tuning value
// as the model uses it.
v1::ModelSpec SpecFromConfig(const ModelConfig& config);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_SPEC_CONVERSION_H_
