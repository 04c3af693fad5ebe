#include "client/loadgen/robot_model.h"

#include "client/loadgen/robot_stream.h"

namespace streamreg {

v1::ModelSpec RobotModelSpec(v1::ModelSpec base) {
  base.set_input_dim(kRobotInputs);
  base.clear_input_names();
  base.clear_target_names();
  const std::vector<std::string> columns = RobotStream::ColumnNames();
  for (std::size_t i = 0; i < kRobotInputs; ++i) {
    base.add_input_names(columns[i]);
  }
  for (const std::string& target : RobotStream::TargetNames()) {
    base.add_target_names(target);
  }
  return base;
}

absl::Status CreateModelIfAbsent(Client& client, const std::string& name,
                                 const v1::ModelSpec& spec) {
  absl::StatusOr<v1::Model> existing = client.GetModel(name);
  if (existing.ok()) return absl::OkStatus();
  if (existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }
  return client.CreateModel(name, spec).status();
}

}  // namespace streamreg
