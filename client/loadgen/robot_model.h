#ifndef STREAMREG_CLIENT_LOADGEN_ROBOT_MODEL_H_
#define STREAMREG_CLIENT_LOADGEN_ROBOT_MODEL_H_

#include <string>

#include "absl/status/status.h"
#include "client/lib/client.h"

namespace streamreg {

// `base` (metric, regressor, capacity, ...) with the simulated arm's 21
// named inputs (q1..qdd7) and 7 torques (tau1..tau7).
v1::ModelSpec RobotModelSpec(v1::ModelSpec base = {});

// Creates the model with `spec` unless a model of that name exists.
absl::Status CreateModelIfAbsent(Client& client, const std::string& name,
                                 const v1::ModelSpec& spec);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LOADGEN_ROBOT_MODEL_H_
