#ifndef STREAMREG_CLIENT_CLI_TARGET_MEAN_H_
#define STREAMREG_CLIENT_CLI_TARGET_MEAN_H_

#include "google/protobuf/repeated_field.h"

namespace streamreg {

// The mean over a model's targets of a per-target figure (ModelStats'
// errors), 0 for none: the one number the CLI's tables show.
inline double MeanOverTargets(
    const google::protobuf::RepeatedField<double>& values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return values.empty() ? 0.0 : sum / values.size();
}

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_TARGET_MEAN_H_
