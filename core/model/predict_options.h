#ifndef STREAMREG_CORE_MODEL_PREDICT_OPTIONS_H_
#define STREAMREG_CORE_MODEL_PREDICT_OPTIONS_H_

#include <optional>

namespace streamreg {

// What a caller asks of a prediction beyond its values: the coverage of its
// intervals (the model's level when unset; in (0, 1)), and whether to list
// the stored samples each target's prediction used (Prediction::used).
struct PredictOptions {
  std::optional<double> interval_level;
  bool with_neighbors = false;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_PREDICT_OPTIONS_H_
