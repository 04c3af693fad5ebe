#ifndef STREAMREG_CORE_MODEL_MODEL_LEARNER_H_
#define STREAMREG_CORE_MODEL_MODEL_LEARNER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/metric/gradient_estimator.h"
#include "core/model/model_reader.h"
#include "core/model/model_state.h"
#include "core/model/prediction.h"
#include "core/model/refresh_schedule.h"
#include "core/model/sample.h"

namespace streamreg {

// The write path of a Model: learns one sample at a time, predict-then-learn
// (docs/estimators.md):
//  1. every bandwidth (or k) of the grid predicts the sample from one
//     search at the largest; their prequential errors choose the bandwidth
//     per target, and the prediction of the current choice scores the model
//     (every sample of a small store, one in ModelConfig::ScoringStride of
//     a large one);
//  2. for a learned metric, the gradient estimate at the sample from the
//     samples before it (GradientEstimator, in standardized Euclidean
//     coordinates with a bandwidth chosen the same way) is added to the
//     metric's running sums;
//  3. the sample is stored (capacity policy) and indexed;
//  4. the refresh schedule installs or starts background work.
// Steps 1–2 read the state under its lock shared (predictions go on), step 3
// holds it exclusively for the bookkeeping only. A learner holds the work
// buffers of one model's state, which it is given at each call (so that the
// thread-safety analysis sees the locks of that state).
class ModelLearner {
 public:
  explicit ModelLearner(const ModelState& state);
  ~ModelLearner();

  // Learns a validated sample into `state`; with `before`, fills the
  // prediction the model made for it just before if the sample was scored
  // (ModelConfig::ScoringStride), else leaves it empty (no value).
  void Learn(ModelState& state, const Sample& sample, Prediction* before)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
          ABSL_LOCKS_EXCLUDED(state.lock);

 private:
  // Work buffers, reused from sample to sample.
  struct Scratch;

  // Prediction index i's grid values for x (by the honest error: without
  // the recent samples) and the model's prediction for its targets, plain
  // (written into `prediction`) and honest (into `honest`).
  void EvaluateGrid(const ModelState& state, std::size_t i,
                    std::span<const double> x, std::span<const double> fallback,
                    Prediction* prediction, Prediction* honest)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // Gathers the neighbours of z (scratch) in `generation` — under GLML's
  // `metric` at the sample, if given — and from them writes the evaluated
  // grid values of prediction index i (only_target's columns alone, if
  // given) and its targets' plain and honest predictions.
  void ScoreNeighbors(const ModelState& state, std::size_t i,
                      const MetricIndex::Generation& generation,
                      std::span<const double> fallback,
                      const GlmlMetric* metric,
                      std::optional<std::size_t> only_target,
                      Prediction* prediction, Prediction* honest)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // A combining model's prediction of the sample from prediction index i
  // (only_target's alone, if given), from the neighbours ScoreNeighbors
  // just gathered: every target the index scores has its candidates' values
  // kept to learn its weights for the next sample (a model choosing its
  // metric per target learns them in every index), and the targets that
  // predict from the index now take its combination into `prediction`.
  void CombineAtIndex(const ModelState& state, std::size_t i,
                      std::optional<std::size_t> only_target,
                      Prediction* prediction)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // The honest prediction of prediction index i's targets (only_target's
  // alone, if given) read from the grid values ScoreNeighbors just wrote,
  // when it scored them on the honest neighbours: each target's value at
  // its current choice of regressor and grid value, or with config.combine
  // its candidates' values there, combined.
  void HonestFromGrid(const ModelState& state, std::size_t i,
                      std::optional<std::size_t> only_target,
                      Prediction* honest)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // The gradient of the sample's leave-one-out term of MLKR's objective
  // (MlkrPointLoss) under prediction index i's map, from the neighbours
  // EvaluateGrid just gathered (those the honest error allows), at most
  // config.mlkr_neighbors of them: the online step Record takes.
  void MlkrGradient(const ModelState& state, std::size_t i,
                    const Sample& sample)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // The gradient estimator's grid values for x and its estimate there.
  void EstimateGradient(const ModelState& state, std::span<const double> x,
                        std::span<const double> fallback)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // One regressor's values at the first `evaluated` values of its grid,
  // from `near` (rows of m targets), or `fallback` where nothing is near.
  static void EvaluateRegressor(const ModelConfig& config,
                                RegressorKind regressor, std::size_t evaluated,
                                const NeighborTargets& near,
                                std::span<const double> fallback,
                                std::span<double> values);
  // How many values of a grid (of grid_size, best choice `widest_best`)
  // predict the sample being learned: all of them while the store is small
  // and every config.full_grid_every samples, else those up to the widest
  // choice and config.selection_window beyond. The grid's values come in
  // steps of `per_step` (a k's fits over each choice of coordinates,
  // ModelConfig::CoordinateChoices): the window counts steps, and a step
  // is evaluated whole.
  static std::size_t EvaluatedPrefix(const ModelState& state,
                                     std::size_t grid_size,
                                     std::size_t widest_best,
                                     std::size_t per_step = 1)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // Whether the sample about to be learned is scored: its number (from 1)
  // a multiple of config.ScoringStride at the store's size.
  static bool ScoresNextSample(const ModelState& state)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // A scored sample's candidates' honest predictions (HonestFromGrid) to
  // each target's weights for queries, and their prequential ones (its
  // next-sample prediction, ScoreNeighbors) to its weights for the next
  // sample (config.combine).
  void LearnCombinations(ModelState& state, const Sample& sample)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);
  // A scored sample's errors: its grid values to the selectors, MLKR's
  // online step, the intervals' calibration, the prequential and honest
  // errors.
  void Score(ModelState& state, const Sample& sample,
             const Prediction& prediction)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);
  // Target t's score for the queries' intervals: the sample's error in its
  // honest prediction, or where calibrates_apart in its prediction without
  // the interval lag's samples, over the scale before it (widened by its
  // difficulty); it also teaches the difficulty scale. While the
  // recalibration collects, the score of the sample's prediction with
  // nothing left out goes to its calibration too.
  void CalibrateQueries(ModelState& state, const Sample& sample, std::size_t t)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);
  // Of the scored sample's neighbours EvaluateGrid just gathered (the first
  // prediction index's), the share of the nearest that are recent and its
  // chance (IntervalRecalibration::RecentShareOfNearest), into the scratch
  // buffers, while the recalibration may run.
  void NoteNearestAge(const ModelState& state)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // The stored samples the queries' recalibration has due before this
  // sample (IntervalRecalibration::DueBefore), each predicted as a query
  // without itself and, where the pass asks, without its band: their
  // scores and errors into the scratch buffers.
  void RescoreStored(const ModelState& state)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // Stored slot `slot` predicted as a query without the slots `left_out`
  // names (with the base's values and variances RescoreStored put in the
  // scratch buffers), its scores for the queries' intervals into `scores`.
  void ScoreWithout(const ModelState& state, std::uint64_t slot,
                    LeftOutSlots left_out, std::span<double> scores)
      ABSL_SHARED_LOCKS_REQUIRED(state.lock);
  // Those rescorings into the pass, which then ends or starts one
  // (IntervalRecalibration::AfterSample), the sample stored.
  void RecordRescored(ModelState& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);
  // Step 4: the sample's errors (if scored), estimate, storage and
  // indexing.
  void Record(ModelState& state, const Sample& sample,
              const Prediction& prediction, bool scored)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);

  // Used only by the writer of the state (Learn holds state.writer).
  const std::unique_ptr<Scratch> scratch_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_LEARNER_H_
