#ifndef STREAMREG_CLIENT_CLI_TUNING_FLAG_H_
#define STREAMREG_CLIENT_CLI_TUNING_FLAG_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "streamreg/v1/model.pb.h"

namespace streamreg {

// --tuning name=value,...: sets the fields of a new model's v1::Tuning by
// their names in the proto, so that every tuning setting the server knows
// is reachable from the CLI without a flag of its own. A number field takes
// a number; gradient_estimator takes local_linear or finite_differences
// (or the enum's full name). A usage error names the setting: an unknown
// name lists the known ones.
absl::Status ParseTuning(const std::vector<std::string>& settings,
                         v1::Tuning* tuning);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_TUNING_FLAG_H_
