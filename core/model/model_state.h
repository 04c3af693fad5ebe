#ifndef STREAMREG_CORE_MODEL_MODEL_STATE_H_
#define STREAMREG_CORE_MODEL_MODEL_STATE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/base/pause_statistics.h"
#include "core/base/running_moments.h"
#include "core/base/writer_priority_mutex.h"
#include "core/metric/gradient_refresh.h"
#include "core/metric/gradient_statistics.h"
#include "core/metric/metric_transform.h"
#include "core/metric/mlkr_map.h"
#include "core/metric/mlkr_refresh.h"
#include "core/metric/slot_rows.h"
#include "core/model/interval_recalibration.h"
#include "core/model/metric_index.h"
#include "core/model/model_config.h"
#include "core/model/random_feature_base.h"
#include "core/model/random_feature_refresh.h"
#include "core/model/recent_slots.h"
#include "core/model/sample_store.h"
#include "core/model/take_over_key.h"
#include "core/regression/adaptive_conformal.h"
#include "core/regression/candidate_aggregation.h"
#include "core/regression/difficulty_scale.h"
#include "core/regression/online_ridge.h"
#include "core/regression/prequential_selector.h"

namespace streamreg {

// An index the regressor predicts from: one shared by every target, one
// per target (per-target metrics), or one per candidate metric (kAuto, each
// shared). Fixed when the model is made.
struct PredictionIndex {
  std::unique_ptr<MetricIndex> index;
  MetricKind metric;                 // the metric its transform follows
  std::vector<std::size_t> targets;  // the targets it scores (and may predict)
  std::size_t metric_target;         // kAllTargets when shared
};

// The sample counts at which background work takes over (RefreshSchedule):
// fixed points in the stream, so that results never depend on timing.
struct TakeOverPoints {
  std::uint64_t gradient_index = 0;               // its rebuild
  std::vector<std::uint64_t> prediction_indexes;  // theirs, by index
  std::uint64_t refresh = 0;                      // the metric refresh
  std::size_t refreshed_size = 0;  // the store's size when it last started
  std::uint64_t mlkr_refresh = 0;  // the same for the MLKR fit
  std::size_t mlkr_refreshed_size = 0;
  std::uint64_t random_refresh = 0;       // the random-feature base's rebuild
  std::size_t random_rebuilt_size = 0;    // the store's size when it started
  std::uint64_t random_rebuilt_seen = 0;  // and the samples seen
};

// The random-feature ridge options of a model's base (its lengthscale and
// ridge: the candidates' middle lengthscale and largest ridge, until a
// rebuild chooses among them).
RandomFeatureRidge::Options RandomFeatureOptions(const ModelConfig& config);
// A rebuild of the random-feature base in the coordinates `transform`
// over stored slots [0, num_slots).
RandomFeatureRefresh::Job RandomFeatureJob(const ModelConfig& config,
                                           MetricTransform transform,
                                           std::size_t num_slots);

// Everything a Model knows — stored samples, running moments, the metric's
// sums, the selection errors, the indexes and the schedule of background
// work — shared by the write path (ModelLearner), the read path
// (ModelReader), the refresh scheduling (RefreshSchedule) and the state
// codec (model_state_codec.h), which saves exactly this.
//
// Two locks: `writer` serializes the writers (Learn, Refit, snapshot
// captures) and guards what only they touch; `lock` guards what readers
// see — a writer changes it holding both, exclusively, and reads it shared.
struct ModelState {
  explicit ModelState(const ModelConfig& config);

  // The standardization of the inputs seen so far.
  MetricTransform StandardizingTransform() const
      ABSL_SHARED_LOCKS_REQUIRED(lock);
  // The transform prediction index `i` should search in now: the metric's
  // (or the standardization alone, for Euclidean models).
  MetricTransform PredictionTransform(std::size_t i) const
      ABSL_SHARED_LOCKS_REQUIRED(lock);
  // Each target's scale (standard deviation, or 1 while unknown).
  std::vector<double> TargetScales() const ABSL_SHARED_LOCKS_REQUIRED(lock);
  // The gradient estimator's bandwidth chosen now.
  double GradientBandwidth() const ABSL_SHARED_LOCKS_REQUIRED(lock);
  // Copies stored x and y, taking `lock` shared for each chunk.
  CopySlotRows StoreRows() const;
  // The addresses of stored x and y, taking `lock` shared: for indexes and
  // refreshes of a store that only appends (unbounded), whose rows never
  // move or change.
  SlotRowPointers StoreRowPointers() const;
  // How a metric refresh of slots [0, num_slots) reads them: from the store
  // where it only appends (in place from reference_rows_from samples on),
  // else from a copy taken now (either way its result depends only on the
  // samples, as determinism requires).
  GradientRefresh::Rows RefreshRows(std::size_t num_slots) const
      ABSL_LOCKS_EXCLUDED(lock);
  // A copy of stored x and y of slots [0, num_slots) taken now.
  CopySlotRows SnapshotRows(std::size_t num_slots) const
      ABSL_LOCKS_EXCLUDED(lock);
  // The gradient index (if any) and then every prediction index.
  std::vector<MetricIndex*> AllIndexes() const;
  // The first index's failure (MetricIndex::failure); OK when none failed.
  absl::Status IndexFailure() const;
  // The writer, holding `lock` exclusively, has stored a sample at which
  // predictions may change: readers wait until Settle.
  void BeginSettling() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer);
  // A sample's refresh schedule has run (the writer, after AfterSample):
  // wakes the readers waiting for it.
  void Settle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer)
      ABSL_LOCKS_EXCLUDED(settle_mutex);
  // Waits while `settling` (a reader, not holding `lock`).
  void WaitUntilSettled() const ABSL_LOCKS_EXCLUDED(settle_mutex);

  const ModelConfig& config;
  mutable Mutex writer;
  mutable WriterPriorityMutex lock ABSL_ACQUIRED_AFTER(writer);

  SampleStore store ABSL_GUARDED_BY(lock);
  RunningMoments inputs ABSL_GUARDED_BY(lock);
  RunningMoments targets ABSL_GUARDED_BY(lock);
  // The online ridge, if the model keeps one (ModelConfig::KeepsRidge): its
  // linear base (config.linear_base), or GLML's global Gaussian of (x, y).
  std::optional<OnlineRidge> base ABSL_GUARDED_BY(lock);
  // The random-feature base instead (config.random_feature_base): readers
  // use what its Commit published; the learner Prepares each sample under
  // the shared lock (RandomFeatureBase).
  std::optional<RandomFeatureBase> random_base ABSL_GUARDED_BY(lock);
  // The learner's way to it under the shared lock, for what readers never
  // read (RandomFeatureBase::Prepare, Replace): outside the lock analysis,
  // which knows no member written under a shared lock.
  RandomFeatureBase& LearnersRandomBase() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer)
      ABSL_SHARED_LOCKS_REQUIRED(lock) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return *random_base;
  }
  GradientStatistics gradients ABSL_GUARDED_BY(lock);
  PrequentialSelector gradient_selector ABSL_GUARDED_BY(lock);
  PrequentialScore score ABSL_GUARDED_BY(lock);
  // The honest (leave-recent-out) error of the model's predictions, and the
  // slots of the samples it leaves out.
  PrequentialScore honest_score ABSL_GUARDED_BY(lock);
  RecentSlots recent ABSL_GUARDED_BY(lock);
  // The slots of the samples a query's interval calibration leaves out
  // (config.EffectiveIntervalLag(); none: it scores the honest
  // predictions).
  RecentSlots interval_recent ABSL_GUARDED_BY(lock);
  // The intervals' calibrations (IntervalScale): over the scores of the
  // predictions made as a query's, without the interval_recent samples (or
  // the honest ones), for queries, and over the prequential ones', for the
  // predictions of the stream's next sample (Learn answers).
  AdaptiveConformal intervals ABSL_GUARDED_BY(lock);
  AdaptiveConformal answer_intervals ABSL_GUARDED_BY(lock);
  // The queries' calibration made again by the current model while the
  // stream is young (config.interval_recalibration), which calibrates
  // them instead of `intervals` while it finds the samples exchangeable.
  IntervalRecalibration recalibration ABSL_GUARDED_BY(lock);
  // With config.interval_difficulty, how the honest errors grow with their
  // predictions' difficulty: the queries' intervals widen by it.
  DifficultyScale difficulty ABSL_GUARDED_BY(lock);
  // The selection over each prediction index's grid, by index; for each
  // regressor the model scores (two for kAuto), the targets in order.
  std::vector<PrequentialSelector> selectors ABSL_GUARDED_BY(lock);
  // With config.combine, by prediction index: the weights of each target's
  // candidates (NumCandidates) in queries, learned from their honest
  // errors, and in predictions of the stream's next sample (Learn
  // answers), learned from their prequential errors — as the intervals'
  // two calibrations; empty otherwise.
  std::vector<CandidateAggregation> combinations ABSL_GUARDED_BY(lock);
  std::vector<CandidateAggregation> answer_combinations ABSL_GUARDED_BY(lock);
  // By prediction index: the MLKR map it follows (unknown for the other
  // metrics).
  std::vector<MlkrMap> mlkr_maps ABSL_GUARDED_BY(lock);
  std::uint64_t metric_refreshes ABSL_GUARDED_BY(lock) = 0;

  // The online estimates made since the refresh running now started.
  GradientStatistics since_refresh ABSL_GUARDED_BY(writer);
  TakeOverPoints take_over ABSL_GUARDED_BY(writer);
  // Under TakeOverRule::kLogged, the work running that the model's log has
  // recorded done (Model::ApplyTakeOverRecord): it takes over at the first
  // sample learned from its earliest point on.
  std::vector<TakeOverKey> logged_take_overs ABSL_GUARDED_BY(writer);
  // How the batch being learned takes over (a Learn call's; between calls
  // kWhereRecorded).
  BatchTakeOvers batch_take_overs ABSL_GUARDED_BY(writer) =
      BatchTakeOvers::kWhereRecorded;
  // The metric refresh in the background: started and finished by a
  // writer; running() may be asked from any thread.
  GradientRefresh refresh;
  // The MLKR maps' batch fit in the background, likewise.
  MlkrRefresh mlkr_refresh;
  // The random-feature base rebuilt in new coordinates, likewise; fed
  // every sample learned while it runs.
  RandomFeatureRefresh random_refresh;

  // Set (holding `lock` exclusively) when a sample is stored at which the
  // refresh schedule replaces an index generation (PredictionsMayChange:
  // take-over points), cleared once the schedule has run. A reader that finds
  // it set under `lock` waits until it clears, so that every prediction is the
  // one the model of a whole number of samples makes, as Prediction::learned
  // says. The refresh schedule keeps these windows short (the swap of a
  // generation already built; refresh_schedule.h).
  mutable std::atomic<bool> settling{false};
  mutable Mutex settle_mutex;
  mutable CondVar settled;
  PauseStatistics::Clock::time_point settling_since ABSL_GUARDED_BY(writer);
  // The settling windows (each as long as a prediction could have had to
  // wait) and the waits predictions had.
  PauseStatistics settle_windows;
  mutable PauseStatistics prediction_waits;
  // The learner's waits for a metric refresh or MLKR fit not done by its
  // take-over point (the stream outran it; docs/threading.md rule 4).
  PauseStatistics refresh_waits;

  // Fixed at construction; each index synchronizes itself.
  // The gradient estimator's (standardized Euclidean): null unless the
  // metric is estimated from gradients.
  const std::unique_ptr<MetricIndex> gradient_index;
  const std::vector<PredictionIndex> predictions;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_STATE_H_
