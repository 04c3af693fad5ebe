#ifndef STREAMREG_CORE_MODEL_PREDICT_OPTIONS_H_
#define STREAMREG_CORE_MODEL_PREDICT_OPTIONS_H_

#include <optional>

namespace streamreg {

// Which errors a prediction's intervals are calibrated on (docs/
// estimators.md, "Intervals"): for a query anywhere, the honest errors
// (each sample predicted without the recent ones: a query is rarely the
// next tick of the stream); for the prediction of the stream's next sample
// (a Learn answer), the prequential errors (each sample predicted by the
// model just before it learned it), which are errors of exactly such
// predictions.
enum class IntervalCalibration {
  kQuery,
  kNextSample,
};

// What a caller asks of a prediction beyond its values: the coverage of its
// intervals (the model's level when unset; in (0, 1)) and what they are
// calibrated on, and whether to list the stored samples each target's
// prediction used (Prediction::used).
struct PredictOptions {
  std::optional<double> interval_level;
  IntervalCalibration calibration = IntervalCalibration::kQuery;
  bool with_neighbors = false;

  // The defaults but one (named, since GCC warns of a designated
  // initializer that leaves a member out).
  static PredictOptions AtLevel(std::optional<double> level) {
    PredictOptions options;
    options.interval_level = level;
    return options;
  }
  static PredictOptions WithNeighbors() {
    PredictOptions options;
    options.with_neighbors = true;
    return options;
  }
  // A Learn answer's: the model's level, the next sample's calibration.
  static PredictOptions ForNextSample() {
    PredictOptions options;
    options.calibration = IntervalCalibration::kNextSample;
    return options;
  }
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_PREDICT_OPTIONS_H_
