#ifndef STREAMREG_CORE_MODEL_MODEL_H_
#define STREAMREG_CORE_MODEL_MODEL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/metric/learned_metric.h"
#include "core/metric/metric_transform.h"
#include "core/metric/mlkr_fit_exchange.h"
#include "core/metric/mlkr_map.h"
#include "core/model/model_config.h"
#include "core/model/model_learner.h"
#include "core/model/model_reader.h"
#include "core/model/model_snapshot.h"
#include "core/model/model_state.h"
#include "core/model/predict_options.h"
#include "core/model/prediction.h"
#include "core/model/refresh_schedule.h"
#include "core/model/sample.h"
#include "core/model/take_over_key.h"
#include "core/model/validated_samples.h"

namespace streamreg {

struct ModelStats {
  std::uint64_t samples_seen = 0;    // learned, ever
  std::uint64_t samples_stored = 0;  // kept under the capacity policy
  // Prequential nMSE per target (NaN until known) and the raw mean squared
  // error it is made of.
  std::vector<double> prequential_nmse;
  std::vector<double> prequential_mse;
  // The same for the honest (leave-recent-out) error, and its lag W in
  // samples (0: the honest error is the prequential one).
  std::vector<double> honest_nmse;
  std::vector<double> honest_mse;
  std::uint64_t honest_lag = 0;
  // The samples the queries' interval calibration leaves out (0: it scores
  // the honest predictions).
  std::uint64_t interval_lag = 0;
  // The queries' recalibration (ModelConfig::interval_recalibration): its
  // passes ended, and whether the last found the samples exchangeable (the
  // queries' intervals are then calibrated on the current model's errors
  // on the samples it learned, each left out, and the scores streamed
  // since leave out nothing).
  std::uint64_t interval_recalibration_passes = 0;
  bool interval_recalibrated = false;
  // Per target: the half width of its intervals at the model's level now
  // (+inf while too few samples are scored), and of the samples scored
  // the fraction whose honest prediction (with an interval lag, the one
  // made without the samples it leaves out) fell within the streamed
  // calibration's interval in effect for it (NaN before the first); while
  // interval_recalibrated, the half width is the recalibration's and the
  // coverage still the streamed calibration's (counts that only grow).
  std::vector<double> interval_half_width;
  std::vector<double> interval_coverage;
  // The counts that coverage is made of: samples scored, and of them those
  // within their interval (the status page's coverage over time).
  std::vector<std::uint64_t> interval_scored;
  std::vector<std::uint64_t> interval_covered;
  // The half width and coverage of the intervals of the next sample's
  // predictions (Learn answers; IntervalCalibration::kNextSample), over
  // the prequential predictions.
  std::vector<double> answer_interval_half_width;
  std::vector<double> answer_interval_coverage;
  // Per target, the hyper-parameter the regressor predicts with now: the
  // bandwidth (kernel) or k (k-NN, local linear); the other is 0.
  std::vector<double> bandwidth;
  std::vector<std::uint32_t> k;
  // Per target predicting by local linear fits: the index's coordinates its
  // fits use (ModelConfig::local_linear_leading, or all of them); 0 for
  // the other regressors.
  std::vector<std::uint32_t> coordinates;
  // Per target, the regressor it predicts with now (kAuto's choice), and
  // the metric of the index it predicts from (the metric kAuto's choice).
  std::vector<RegressorKind> regressor;
  std::vector<MetricKind> metric;
  // Per target, whether its prediction adds the linear base now
  // (per_target_base's choice).
  std::vector<bool> uses_base;
  // With config.combine: the candidates' names (CandidateName) and, per
  // target, their weights now (summing to 1) in queries and in the
  // predictions of the next sample (Learn answers); all empty otherwise.
  std::vector<std::string> candidates;
  std::vector<std::vector<double>> candidate_weights;
  std::vector<std::vector<double>> answer_candidate_weights;
  // The gradient estimator's bandwidth h and step t (0 for Euclidean).
  double gradient_bandwidth = 0.0;
  double gradient_step = 0.0;
  // The (forgetting-weighted) number of gradient estimates in the metric.
  double gradient_samples = 0.0;
  // Index rebuilds completed (metric or standardization drift, refits).
  std::uint64_t index_rebuilds = 0;
  // Background rebuilds the learner had to wait for at their take-over
  // point (the stream outran the build).
  std::uint64_t rebuild_waits = 0;
  // Rebuilds built since this Model object was made (a restored model's
  // earlier ones not included) and the seconds they took (MetricIndex::
  // build_time).
  std::uint64_t index_builds_timed = 0;
  double index_build_seconds = 0.0;
  // Batch recomputations of the metric installed (growth refreshes, Refit).
  std::uint64_t metric_refreshes = 0;
  // A random-feature base's replacements by a fit in new coordinates (each
  // rebuild taken over), and the lengthscale and ridge of the fit in use.
  std::uint64_t base_rebuilds = 0;
  double base_lengthscale = 0.0;
  double base_ridge = 0.0;
  // The metric whose coordinates it follows (RandomBaseIndex): its
  // rebuilds fit it in that index's coordinates as they change.
  std::optional<MetricKind> base_metric;
  bool rebuild_in_progress = false;
  std::size_t memory_bytes = 0;
  // Since this Model object was made: the windows in which predictions had
  // to wait for the refresh schedule (an index take-over, a rebuild done at
  // once) and the longest; the waits predictions had, their sum and the
  // longest (ModelState::settling).
  std::uint64_t settle_windows = 0;
  double longest_settle_window_seconds = 0.0;
  std::uint64_t prediction_waits = 0;
  double prediction_wait_seconds = 0.0;
  double longest_prediction_wait_seconds = 0.0;
  // Since this Model object was made: the metric refreshes and MLKR fits
  // that learning had to wait for at their take-over point (the stream
  // outran them), the seconds it waited and the longest wait.
  std::uint64_t refresh_waits = 0;
  double refresh_wait_seconds = 0.0;
  double longest_refresh_wait_seconds = 0.0;
  // MLKR fits raised to the process's priority because a read waited for
  // them (Model::PrioritizeBackgroundWork), and raises the system refused.
  std::uint64_t fits_prioritized = 0;
  std::uint64_t fit_priority_refused = 0;
  // Since this Model object was made: MLKR fits computed here, and fits
  // whose result came from another replica (Model::OfferMlkrFit).
  std::uint64_t mlkr_fits_computed = 0;
  std::uint64_t mlkr_fits_taken = 0;
};

// The learned metric(s) and the transforms the prediction indexes use now.
struct MetricReport {
  MetricKind kind = MetricKind::kEuclidean;
  bool per_target = false;
  // The current estimates, one per prediction index: one shared metric, one
  // per target, or for kAuto one per candidate metric (each its own kind).
  std::vector<LearnedMetric> metrics;
  // The transform of each prediction index (it lags the estimates by at
  // most the drift tolerance).
  std::vector<MetricTransform> in_use;
  double gradient_samples = 0.0;
};

// The unit the service hosts: an online nonparametric regressor of m
// targets on d inputs that learns its metric as samples arrive
// (docs/estimators.md). It is made of its state (model_state.h), the write
// path that learns one sample at a time, predict-then-learn
// (model_learner.h), the read path (model_reader.h), the schedule of
// background metric refreshes and index rebuilds (refresh_schedule.h) and
// the snapshot codec (model_state_codec.h). Results depend only on the
// configuration (seed included) and the samples in order — with
// TakeOverRule::kLogged, on its log: the samples and take-over records in
// order — never on thread timing.
//
// Thread safety: any number of threads may call Predict, stats and metric
// while one thread learns (Learn, Refit and captures serialize among
// themselves). Predictions wait at most for one sample's bookkeeping, never
// for a rebuild or a refit's computation.
class Model {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> Create(ModelConfig config);
  ~Model();

  // Checks a batch — dimensions, finite values within kMaxValueMagnitude,
  // no sample id but 0 twice — into the type Learn takes. The error names
  // the sample and field: "samples[10].x[3]: NaN", "samples[4].sample_id:
  // 7 repeats samples[1]".
  absl::StatusOr<ValidatedSamples> Validate(
      std::span<const Sample> batch) const;
  // Learns every sample in order. With `before`, fills the prediction the
  // model made for each sample just before learning it, for the samples it
  // scores (ModelConfig::ScoringStride; the others' are left empty). Under
  // TakeOverRule::kLogged, `take_overs` says how background work takes
  // over meanwhile (take_over_key.h). An error only if an index failed
  // (MetricIndex::failure): the model is then broken, and every later
  // Learn and Refit reports it.
  absl::Status Learn(
      const ValidatedSamples& batch, std::vector<Prediction>* before = nullptr,
      BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded);
  // Validate, then Learn: all or nothing.
  absl::Status Learn(
      std::span<const Sample> batch, std::vector<Prediction>* before = nullptr,
      BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded);
  // Learns samples in order as Learn does, but stops before one whose
  // learning would wait for background work taking over at it (a refresh
  // or rebuild not done yet): then `resume_when` is a check that says when
  // it is done (refresh_schedule.h, PendingTakeOver), so that the caller
  // may give its thread to other work meanwhile and come back for the rest
  // — with the same result as Learn's. It also stops once `yield_at` has
  // passed (resume_when then holds at once: the caller lets other work
  // run first). Returns how many samples it learned (and their predictions
  // in `before`); an error as Learn's.
  struct PartLearned {
    std::size_t learned = 0;
    std::function<bool()> resume_when;  // none: all were learned
    // resume_when waits for background work taking over at the next
    // sample (else for the time slice's end only).
    bool waits_for_background_work = false;
  };
  using Clock = std::chrono::steady_clock;
  absl::StatusOr<PartLearned> LearnUntilWait(
      const ValidatedSamples& batch, std::vector<Prediction>* before = nullptr,
      Clock::time_point yield_at = Clock::time_point::max(),
      BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded);
  // A read waits for learning that waits for background work
  // (PartLearned::waits_for_background_work): the work that runs lowered —
  // an MLKR fit — runs at the process's priority until it is done
  // (RaisablePriority). Callable from any thread.
  void PrioritizeBackgroundWork() const;

  // Under TakeOverRule::kLogged (take_over_key.h): the background work
  // running that the model's log has not recorded yet, each with whether
  // it is done here. The model's host appends a record of each piece done
  // to the log, and applies the records in the log's order
  // (ApplyTakeOverRecord); learning never waits for work unrecorded.
  std::vector<UnrecordedWork> UnrecordedTakeOvers() const;
  // A take-over record of the model's log, applied in order with its
  // samples: the work `key` names takes over at the first sample learned
  // from its earliest point on (waiting there if it is not done here — a
  // replay, a follower replica). Whether it named work running and not
  // recorded yet; any other record changes nothing, the same way on every
  // replica.
  bool ApplyTakeOverRecord(const TakeOverKey& key);

  // Shares this model's MLKR fits with its other replicas (cluster mode:
  // MlkrFitExchange) from the next fit on. Callable from any thread.
  void ShareMlkrFits(std::shared_ptr<MlkrFitExchange> exchange);
  // The result of MLKR fit `fit` from another replica (MlkrRefresh::Offer):
  // whether it was taken (or kept for a fit not started yet). Callable from
  // any thread.
  bool OfferMlkrFit(std::uint64_t fit, std::vector<MlkrMap> maps);

  // Predicts every query ("queries[i]" in errors), with intervals at
  // options.interval_level (the model's by default; outside (0, 1) refused
  // as INVALID_ARGUMENT naming interval_level) and, if asked, the samples
  // each used; all or nothing.
  absl::Status Predict(std::span<const std::span<const double>> queries,
                       std::vector<Prediction>* out,
                       const PredictOptions& options = {}) const;
  absl::StatusOr<Prediction> Predict(std::span<const double> query,
                                     const PredictOptions& options = {}) const;

  // Batch refit: recomputes the metric with every stored sample's gradient
  // estimate from all stored samples (the papers' estimator), replacing the
  // online sums — or fits the MLKR map afresh from the paper's initial map
  // to the stored samples (FitMlkr) — and rebuilds the indexes.
  // progress(done, total) reports.
  absl::Status Refit(
      const std::function<void(std::size_t, std::size_t)>& progress = {});

  ModelStats stats() const;
  // stats().samples_seen and .samples_stored, without the rest.
  std::uint64_t samples_seen() const;
  std::size_t samples_stored() const;
  MetricReport metric() const;
  const ModelConfig& config() const { return config_; }

  // The model's state now, for a snapshot (core/model/model_snapshot.h): waits
  // for a Learn or Refit in progress, then pauses learning for about as
  // long as copying the running sums takes.
  ModelSnapshot CaptureSnapshot() const;
  // The same built on `base` (a whole snapshot's AsBase()): the state and
  // only the samples stored since, without index structures — as
  // CaptureSnapshot's, in a fraction of the bytes, restored together with
  // the base's records. nullopt when it could not be: a sample since the
  // base replaced a stored one or was not stored (a bounded store, full),
  // or an index moved to new coordinates since (the base's trees are no
  // longer this model's). A rebuild in progress is saved as a whole
  // snapshot saves one that has not caught up: built again on restore.
  std::optional<ModelSnapshot> CaptureSnapshotSince(
      const SnapshotBase& base) const;
  // Whether a snapshot taken now would hold the results of all background
  // work started (no metric refresh or MLKR fit still computing, no index
  // rebuild still building), so that a model restored from it redoes none.
  // Snapshots taken on a schedule wait a while for this.
  bool BackgroundWorkSettled() const;
  // The model a snapshot captured, which then behaves exactly as that one
  // would have. `config` must be the one it was created with (the caller
  // stores it); DATA_LOSS names what does not fit. Indexes are read back
  // from their saved structure (or, without one, built from the stored
  // samples), several at once.
  static absl::StatusOr<std::unique_ptr<Model>> Restore(
      ModelConfig config, const ModelSnapshotRecords& records);
  // What a restore could not use as saved (an index structure refused, its
  // tree then built from the stored samples): for the operator's log.
  const std::vector<std::string>& restore_notes() const {
    return restore_notes_;
  }
  // Stored samples the restore inserted into trees it read back (the rows
  // after the last tree changes a chain of snapshots held; 0 when every
  // tree was read as it was at capture).
  std::size_t restore_insertions() const { return restore_insertions_; }
  // Of a restored model, what a snapshot taken as Restore finished would
  // be as a base (ModelSnapshot::AsBase): a snapshot built on the one it
  // was restored from may be captured on it (CaptureSnapshotSince), with
  // the changes of the trees read back exactly as saved. None for a model
  // not restored.
  const std::optional<SnapshotBase>& restored_base() const {
    return restored_base_;
  }

  // Waits for background index rebuilds and installs them now (tests and
  // benchmarks; a model does this on its own at its fixed points).
  void FinishRebuilds();

 private:
  explicit Model(ModelConfig config);
  // INVALID_ARGUMENT if a non-empty batch was checked for another shape.
  absl::Status CheckShape(const ValidatedSamples& batch) const;
  // CaptureSnapshot's work, built on `base` if given (checked by
  // CanBuildOn).
  ModelSnapshot CaptureLocked(const std::optional<SnapshotBase>& base) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.writer)
          ABSL_SHARED_LOCKS_REQUIRED(state_.lock);
  bool CanBuildOn(const SnapshotBase& base) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.writer)
          ABSL_SHARED_LOCKS_REQUIRED(state_.lock);

  const ModelConfig config_;
  ModelState state_;
  ModelLearner learner_;
  std::vector<std::string> restore_notes_;
  std::size_t restore_insertions_ = 0;
  std::optional<SnapshotBase> restored_base_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_H_
