#ifndef STREAMREG_CORE_MODEL_COMBINED_PREDICTION_H_
#define STREAMREG_CORE_MODEL_COMBINED_PREDICTION_H_

#include <cstddef>
#include <optional>
#include <span>

#include "absl/base/thread_annotations.h"
#include "core/model/model_state.h"
#include "core/model/predict_options.h"
#include "core/model/prediction.h"
#include "core/regression/local_average.h"

namespace streamreg {

// The prediction of a model that combines its candidates
// (ModelConfig::combine; docs/estimators.md, "Candidates combined"): per
// target, every scored variant at its best grid value and the base alone,
// weighed by the index's CandidateAggregation.

// What a combined prediction is for, and where its candidates' values go.
struct CombinedOptions {
  // Which weights: the queries' (learned from the honest errors) or the
  // next sample's (from the prequential ones).
  IntervalCalibration weights = IntervalCalibration::kQuery;
  // If not empty, each predicted target's candidates' values, m x
  // NumCandidates (the learner's, to learn the next sample's weights).
  std::span<double> candidates;

  static CombinedOptions WeighedFor(IntervalCalibration calibration) {
    CombinedOptions options;
    options.weights = calibration;
    return options;
  }
};

// The weights `calibration` names of prediction index `index`.
const CandidateAggregation& CombinationFor(const ModelState& state,
                                           std::size_t index,
                                           IntervalCalibration calibration)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// PredictTargets for a combining model: the targets of prediction index
// `index` (chosen[t] == index; only `only_target` if set) from `near`
// (gathered at least as wide as every variant's best grid value, and
// `base` the base's values at the query, empty without one). Each value
// is sum_c w_c p_c with the weights options.weights names, its spread
// sum_c w_c s_c (a candidate's spread as PredictTargets gives it), its
// neighbours the most any candidate used.
void PredictCombined(const ModelState& state, std::size_t index,
                     std::span<const std::size_t> chosen,
                     const NeighborTargets& near, std::span<const double> base,
                     Prediction* out, std::optional<std::size_t> only_target,
                     const CombinedOptions& options)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// How much lower the honest error of a local linear candidate's fit over
// all coordinates must be than that of its fit over the leading ones at the
// same k for the candidate to take it: on the simulated arm the fits over 8
// of 21 coordinates predict held-out states as well (0.0113 both) with
// honest errors within 3-10% of the full fits', and cost 0.35x; on data/'s
// sets the combined configurations' errors moved by a geometric mean of
// 0.998-1.008 (bench/notes/issue-75-candidates.md).
inline constexpr double kFullFitMargin = 0.1;

// The grid value scored variant s of target t predicts with in a
// combination (ModelConfig::combine): its best (`selector`'s), or for a
// local linear variant whose best fits all coordinates, the fit over the
// leading ones at the same k unless that one's error is more than
// kFullFitMargin above the best's.
std::size_t CandidateGridValue(const ModelConfig& config,
                               const PrequentialSelector& selector,
                               std::size_t s, std::size_t t);

// Target t's candidates' values (NumCandidates) read from the learner's
// grid values of prediction index `index` (row g holds each scored
// variant's m targets at grid value g, the base added where the variant
// has it): each variant at its best grid value, then `base[t]` for the
// base alone.
void CandidatesFromGrid(const ModelState& state, std::size_t index,
                        std::size_t t, std::span<const double> grid_values,
                        std::span<const double> base,
                        std::span<double> candidates)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_COMBINED_PREDICTION_H_
