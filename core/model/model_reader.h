#ifndef STREAMREG_CORE_MODEL_MODEL_READER_H_
#define STREAMREG_CORE_MODEL_MODEL_READER_H_

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/index/knn_radius_estimate.h"
#include "core/index/neighbor.h"
#include "core/index/recent_knn_answers.h"
#include "core/metric/glml_metric.h"
#include "core/model/combined_prediction.h"
#include "core/model/left_out_slots.h"
#include "core/model/metric_index.h"
#include "core/model/model_state.h"
#include "core/model/predict_options.h"
#include "core/model/prediction.h"
#include "core/regression/local_average.h"

namespace streamreg {

// The read path of a Model: predicts every target from the prediction
// indexes, each target with the bandwidth (kernel) or k (k-NN) its
// prequential selection chose; one search per index serves all its targets.
// The write path (ModelLearner) uses the same neighbour gathering and
// averaging to predict a sample before learning it.

// Predicts x (already validated) for every target, with the model of
// out->learned whole samples (ModelState::settling); holds the state's lock
// shared, so any number of threads may predict while one learns. Its
// intervals at options.interval_level in (0, 1) (the model's by default);
// with options.with_neighbors, the samples each target used (out->used).
void PredictWithModel(const ModelState& state, std::span<const double> x,
                      Prediction* out, const PredictOptions& options = {})
    ABSL_LOCKS_EXCLUDED(state.lock);

// The neighbours of a query without the samples `left_out` names (the
// recent ones: ModelState::recent, what the honest error predicts from, or
// ModelState::interval_recent, what a query's interval calibration does; or
// a stored sample and those around it, IntervalRecalibration's).
struct OlderNeighbors {
  explicit OlderNeighbors(std::size_t num_targets) : near(num_targets) {}
  LeftOutSlots left_out;  // set by the caller, under the lock
  std::vector<Neighbor> found;
  NeighborTargets near;
  // How far the k-th of them was for recent samples, and for the last few
  // searches near which the next may be (a stream's next sample): the next
  // k-NN search starts capped (KnnRadiusEstimate, RecentKnnAnswers, keyed
  // by the tree searched). Speed only: answers are exact.
  KnnRadiusEstimate radius;
  RecentKnnAnswers answers;
};

// The neighbours of z (in `generation`'s coordinates) and their targets
// (their residuals under the linear base, if the model has one): a
// range search at bandwidth_grid[grid_index] in ShellOrder for the kernel
// regressor, or the k_grid[grid_index] nearest sorted by distance (with
// their offsets from z for local linear). With `older`, in the same search,
// the same for the samples older->left_out does not name. With `metric`,
// neighbours
// and distances are those under GLML's metric at z (exactly: the searches
// are rescored, SearchUnderGlml).
void GatherNeighbors(const ModelState& state,
                     const MetricIndex::Generation& generation,
                     std::span<const double> z, std::size_t grid_index,
                     std::vector<Neighbor>* found, NeighborTargets* near,
                     OlderNeighbors* older = nullptr,
                     const GlmlMetric* metric = nullptr)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// GLML (ModelConfig::SearchesGlml): the density's gradient direction at raw
// x under the model's Gaussian (d values, once per query), and from it the
// metric of `target` at x in the coordinates of `generation` (a GLML
// index's: standardized inputs).
void GlmlDensityDirection(const ModelState& state, std::span<const double> x,
                          std::vector<double>* out)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);
GlmlMetric GlmlMetricFor(const ModelState& state,
                         const MetricIndex::Generation& generation,
                         std::span<const double> density_direction,
                         std::size_t target)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// Predicts x (already validated) as a query is predicted (PredictWithModel,
// its intervals aside) from the samples `older`->left_out does not name:
// what the queries' interval calibration scores a sample on
// (ModelConfig::interval_lag). `base` and `base_variance` are the linear
// base's values and the random-feature base's variances at x (BaseValues;
// the variances only where interval_difficulty reads them). For the write
// path, which holds the lock already.
void PredictLeavingOut(const ModelState& state, std::span<const double> x,
                       std::span<const double> base,
                       std::span<const double> base_variance,
                       OlderNeighbors* older, Prediction* out)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// Writes the predictions of the targets that predict from prediction index
// `index` (chosen[t] == index, ChosenIndexes) from `near` (gathered at least
// as wide as each such target's current choice), or their fallbacks: the
// running mean and standard deviation of the targets. With a linear base,
// `base` holds its values at the query: `near` holds residuals, each
// prediction is the base's value plus the regressor's, and the fallback the
// base's value (FallbackOf). With `only_target`, that target's alone (GLML:
// a search per target). With config.combine, each target's candidates
// combined (PredictCombined, as `combined` says).
void PredictTargets(const ModelState& state, std::size_t index,
                    std::span<const std::size_t> chosen,
                    const NeighborTargets& near, std::span<const double> base,
                    Prediction* out,
                    std::optional<std::size_t> only_target = std::nullopt,
                    const CombinedOptions& combined = {})
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// Whether target t predicts from prediction index `index` now (chosen[t]
// == index, ChosenIndexes) and is the one asked for (`only_target`, if
// set: GLML's search per target).
inline bool PredictsFrom(std::span<const std::size_t> chosen, std::size_t index,
                         std::size_t t,
                         std::optional<std::size_t> only_target) {
  return chosen[t] == index && (!only_target.has_value() || t == *only_target);
}

// What target t predicts where its regressor has no neighbour: with a base
// (`base` its values at the query), the base's value with its residual
// scale as the spread; else the targets' running mean and standard
// deviation.
struct FallbackValue {
  double value = 0.0;
  double spread = 0.0;
};
FallbackValue FallbackOf(const ModelState& state, std::size_t target,
                         std::span<const double> base)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// One regressor's average (or fit) at value `grid` of its grid over
// `near`, for the listed columns (LocalAverage).
void AverageAt(const ModelConfig& config, RegressorKind regressor,
               std::size_t grid, const NeighborTargets& near, LocalAverage* out,
               std::span<const std::size_t> columns);

// For each target that predicts from prediction index `index` (chosen[t]
// == index; only `only_target` if set), after PredictTargets wrote
// out->neighbors from `found` (the search it gathered `near` from, in the
// same order): the first out->neighbors[t] of them, the samples its average
// used, into out->used[t], nearest first.
void RecordUsedNeighbors(const ModelState& state, std::size_t index,
                         std::span<const std::size_t> chosen,
                         std::span<const Neighbor> found, Prediction* out,
                         std::optional<std::size_t> only_target = std::nullopt)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The scale of target t's intervals: the RMS of the errors they are
// calibrated on (1 while it is 0), the same at every input: the honest
// error (kQuery) or the prequential one (kNextSample). A sample's score
// is |y - y_hat| over the scale before it, y_hat its honest (or
// prequential) prediction; an interval is value ± q * scale, q the
// calibration's multiplier (the half width ModelStats reports).
double IntervalScale(const ModelState& state, std::size_t t,
                     IntervalCalibration calibration)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// Target t's score for the queries' intervals (AdaptiveConformal) of a
// prediction `prediction` made without the sample y (its value for the
// target): |y - value| over the queries' IntervalScale and the
// prediction's RelativeDifficulty.
double QueryIntervalScore(const ModelState& state, std::size_t t, double y,
                          const Prediction& prediction)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// How much wider than at typical difficulty target t's interval is for a
// prediction of difficulty `prediction.difficulty`: the DifficultyScale's
// relative scale for a query (kQuery) of a model with
// config.interval_difficulty, else 1.
double RelativeDifficulty(const ModelState& state, std::size_t t,
                          IntervalCalibration calibration,
                          const Prediction& prediction)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// With config.interval_difficulty, the difficulty features of the targets
// that predict from prediction index `index` (as PredictsFrom) into
// out->difficulty (kDifficultyFeatures per target): from `near`, the
// neighbours their search found, `base_variance`, the random-feature
// base's variances at the query (BaseValues; empty without that base), and
// `candidates`, a combining model's candidates' values (m x NumCandidates;
// empty otherwise) around out->value.
void SetDifficulty(const ModelState& state, std::size_t index,
                   std::span<const std::size_t> chosen,
                   const NeighborTargets& near,
                   std::span<const double> base_variance,
                   std::span<const double> candidates,
                   std::optional<std::size_t> only_target, Prediction* out)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The calibration of the intervals `calibration` names: for queries, the
// scores of the honest predictions (or of those without the interval lag),
// or while the recalibration finds the samples exchangeable its own; for
// the next sample, those of the prequential predictions.
const AdaptiveConformal& IntervalCalibrationOf(const ModelState& state,
                                               IntervalCalibration calibration)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// Sets `out`'s intervals from its values at coverage options.interval_level
// (the model's by default), calibrated as options.calibration says, each
// widened by its RelativeDifficulty.
void SetIntervals(const ModelState& state, const PredictOptions& options,
                  Prediction* out) ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The linear base's values at x into `out` (resized to the targets), or
// `out` emptied for a model without a base. With `variance`, the
// random-feature base's posterior variances there (emptied for any other
// base, or none).
void BaseValues(const ModelState& state, std::span<const double> x,
                std::vector<double>* out,
                std::vector<double>* variance = nullptr)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// What a target predicts with now in prediction index `index`: its scored
// variant (ScoredVariantAt: kAuto's regressor, per_target_base's base or
// none) whose best grid value has the least error (the first on ties:
// k-NN, with the base), that regressor, whether it adds the base, the grid
// value and its error.
struct RegressorChoice {
  RegressorKind regressor;
  std::size_t grid;
  double error;
  std::size_t variant = 0;
  bool with_base = false;
};
RegressorChoice ChoiceOf(const ModelState& state, std::size_t index,
                         std::size_t target)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// Per target, the prediction index it predicts from now: the only one that
// scores it, or for the metric kAuto the one whose choice (ChoiceOf) has the
// least error (the first on ties: Euclidean, GW, EGOP).
void ChosenIndexes(const ModelState& state, std::vector<std::size_t>* chosen)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The widest grid value target `target` predicts with now from index
// `index`: its choice's, or with config.combine its candidates' widest.
std::size_t WidestFor(const ModelState& state, std::size_t index,
                      std::size_t target)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The widest grid value any target predicting from index `index` (chosen[t]
// == index) predicts with now (with config.combine, any of its candidates);
// nullopt if none does.
std::optional<std::size_t> WidestChoice(const ModelState& state,
                                        std::size_t index,
                                        std::span<const std::size_t> chosen)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The widest best grid value of any regressor the model scores for index
// `index`'s targets (the learner keeps scoring around each).
std::size_t WidestScored(const ModelState& state, std::size_t index)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_READER_H_
