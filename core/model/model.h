#ifndef STREAMREG_CORE_MODEL_MODEL_H_
#define STREAMREG_CORE_MODEL_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/running_moments.h"
#include "core/base/writer_priority_mutex.h"
#include "core/metric/gradient_estimator.h"
#include "core/metric/gradient_refresh.h"
#include "core/metric/gradient_statistics.h"
#include "core/metric/learned_metric.h"
#include "core/metric/metric_transform.h"
#include "core/model/metric_index.h"
#include "core/model/model_config.h"
#include "core/model/model_snapshot.h"
#include "core/model/sample_store.h"
#include "core/regression/local_average.h"
#include "core/regression/prequential_selector.h"

namespace streamreg {

// The largest input or target magnitude a model accepts (so that no sum or
// standardized coordinate can overflow).
inline constexpr double kMaxValueMagnitude = 0x1p200;

// One labelled sample: d inputs, m targets, and the caller's id for it.
struct Sample {
  std::span<const double> x;
  std::span<const double> y;
  std::uint64_t sample_id = 0;
};

// A prediction for every target: the local average, the weighted standard
// deviation of the neighbours' targets around it, and how many neighbours
// had positive weight (0: no sample within the bandwidth; the value is then
// the running mean of the targets and the spread their standard deviation).
struct Prediction {
  std::vector<double> value;
  std::vector<double> spread;
  std::vector<std::uint32_t> neighbors;
};

struct ModelStats {
  std::uint64_t samples_seen = 0;    // learned, ever
  std::uint64_t samples_stored = 0;  // kept under the capacity policy
  // Prequential nMSE per target (NaN until known) and the raw mean squared
  // error it is made of.
  std::vector<double> prequential_nmse;
  std::vector<double> prequential_mse;
  // Per target, the hyper-parameter the regressor predicts with now: the
  // bandwidth (kernel) or k (k-NN); the other is 0.
  std::vector<double> bandwidth;
  std::vector<std::uint32_t> k;
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
  bool rebuild_in_progress = false;
  std::size_t memory_bytes = 0;
};

// The learned metric(s) and the transforms the prediction indexes use now.
struct MetricReport {
  MetricKind kind = MetricKind::kEuclidean;
  bool per_target = false;
  // The current estimates: one shared metric, or one per target.
  std::vector<LearnedMetric> metrics;
  // The transform of each prediction index (it lags the estimates by at
  // most the drift tolerance).
  std::vector<MetricTransform> in_use;
  double gradient_samples = 0.0;
};

// The unit the service hosts: an online nonparametric regressor of m
// targets on d inputs that learns its metric as samples arrive
// (docs/estimators.md).
//
// Learning one sample (predict-then-learn):
//  1. every bandwidth (or k) of the grid predicts it from one search at the
//     largest; their prequential errors choose the bandwidth per target,
//     and the prediction of the current choice scores the model (nMSE);
//  2. for a learned metric, the gradient estimate at the sample from the
//     samples before it (GradientEstimator, in standardized Euclidean
//     coordinates with a bandwidth chosen the same way) is added to the
//     metric's running sums;
//  3. the sample is stored (capacity policy) and indexed;
//  4. each time the store has doubled, the metric's sums are recomputed
//     with the papers' batch estimator over the stored samples, in the
//     background (GradientRefresh), taking over at a fixed later sample
//     count with the online estimates made meanwhile added;
//  5. every drift_check_every samples the metric and standardization are
//     compared with those of the indexes; one that moved past the tolerance
//     is rebuilt (MetricIndex), the new index taking over at a fixed later
//     sample count.
// Results depend only on the configuration (seed included) and the samples
// in order — never on thread timing.
//
// Thread safety: any number of threads may call Predict, stats and metric
// while one thread learns (Learn and Refit serialize among themselves).
// Predictions wait at most for one sample's bookkeeping, never for a
// rebuild or a refit's computation.
class Model {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> Create(ModelConfig config);
  ~Model();

  // Validates the whole batch (dimensions, finite values within
  // kMaxValueMagnitude) and then learns every sample in order — all or
  // nothing. The error names the sample and field, e.g.
  // "samples[10].x[3]: NaN". With `before`, fills the prediction the model
  // made for each sample just before learning it.
  absl::Status Learn(std::span<const Sample> batch,
                     std::vector<Prediction>* before = nullptr);

  // Checks a batch as Learn does, without learning it.
  absl::Status Validate(std::span<const Sample> batch) const;

  // Predicts every query ("queries[i]" in errors); all or nothing.
  absl::Status Predict(std::span<const std::span<const double>> queries,
                       std::vector<Prediction>* out) const;
  absl::StatusOr<Prediction> Predict(std::span<const double> query) const;

  // Batch refit: recomputes the metric with every stored sample's gradient
  // estimate from all stored samples (the papers' estimator), replacing the
  // online sums, and rebuilds the indexes. progress(done, total) reports.
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
  // The model a snapshot captured, which then behaves exactly as that one
  // would have. `config` must be the one it was created with (the caller
  // stores it); DATA_LOSS names what does not fit. Indexes are rebuilt
  // from the stored samples, several at once.
  static absl::StatusOr<std::unique_ptr<Model>> Restore(
      ModelConfig config, const ModelSnapshotRecords& records);

  // Waits for background index rebuilds and installs them now (tests and
  // benchmarks; a model does this on its own at its fixed points).
  void FinishRebuilds();

 private:
  // An index the regressor predicts from, with the prequential errors of
  // its grid. One shared index, or one per target (per-target metrics).
  struct PredictionIndex {
    std::unique_ptr<MetricIndex> index;
    PrequentialSelector selector;
    std::size_t evaluated = 0;         // grid values evaluated for this sample
    std::vector<std::size_t> targets;  // the targets it predicts
    std::size_t metric_target;         // kAllTargets when shared
    std::uint64_t swap_at = 0;
  };

  // Work buffers of the learning thread.
  struct LearnScratch;

  explicit Model(ModelConfig config);
  void LearnOne(const Sample& sample, Prediction* before);
  // Prequential grid values of one prediction index for x, and the model's
  // prediction (written for p.targets into `prediction`).
  void EvaluateGrid(PredictionIndex& p, std::span<const double> x,
                    std::span<const double> fallback, LearnScratch& scratch,
                    std::vector<double>* grid_values, Prediction* prediction);
  void EstimateGradient(std::span<const double> x, LearnScratch& scratch,
                        std::vector<double>* grid_values,
                        GradientEstimate* estimate);
  // How many values of a grid (of grid_size, best choice `widest_best`)
  // predict the sample being learned.
  std::size_t EvaluatedPrefix(std::size_t grid_size,
                              std::size_t widest_best) const;
  // The neighbours of z and their targets: a range search at
  // bandwidth_grid[grid_index] in ShellOrder for the bandwidth grid, or the
  // k_grid[grid_index] nearest sorted by distance.
  void GatherNeighbors(const MetricIndex::Generation& generation,
                       std::span<const double> z, std::size_t grid_index,
                       std::vector<Neighbor>* found,
                       NeighborTargets* near) const;
  // Writes p's targets' predictions from `near` (gathered at least as wide
  // as each target's current choice), or their fallbacks.
  void PredictTargets(const PredictionIndex& p, const NeighborTargets& near,
                      Prediction* out) const;
  void PredictOne(std::span<const double> x, Prediction* out) const;
  void PredictFrom(const PredictionIndex& p, const MetricIndex::Generation& g,
                   std::span<const double> x, NeighborTargets& near,
                   std::vector<Neighbor>& found, Prediction* out) const;
  void Fallback(std::size_t target, Prediction* out) const;

  void MaintainIndexes();
  // Starts or installs the growth refresh of the metric's sums.
  void MaintainMetric();
  void InstallRefresh(GradientStatistics batch);
  GradientRefresh::Job RefreshJob(std::size_t num_slots) const;
  // Reads stored x and y under the shared lock.
  CopySlotRows StoreRows() const;
  // A copy of stored x and y taken now, served to a background job.
  CopySlotRows SnapshotRows(std::size_t num_slots) const;
  MetricTransform StandardizingTransform() const;
  MetricTransform PredictionTransform(const PredictionIndex& p) const;
  // Rebuilds now (small) or starts a background rebuild; returns the sample
  // count at which a background rebuild takes over.
  std::uint64_t StartRebuild(MetricIndex& index, MetricTransform transform);
  // Samples between starting a background rebuild of `size` samples and
  // its taking over.
  std::uint64_t RebuildLag(std::size_t size) const;
  std::vector<double> TargetScales() const;
  double GradientBandwidth() const;
  std::vector<MetricIndex*> AllIndexes();
  // What a snapshot says about one index (core/model/model_snapshot.cc).
  struct SavedIndex {
    MetricTransform live;
    std::size_t generation = 0;
    std::size_t waits = 0;
    std::optional<MetricTransform> rebuild;  // a rebuild in progress
  };
  // The state of CaptureSnapshot / Restore, but for the stored rows and a
  // refresh's result.
  void SaveState(ByteWriter& out) const;
  bool LoadState(ByteReader& in, std::size_t* num_rows,
                 std::vector<SavedIndex>* indexes,
                 std::optional<GradientRefresh::Job>* refresh_job);
  bool LoadRows(absl::string_view payload);
  void RestoreIndexes(std::vector<SavedIndex> indexes);

  const ModelConfig config_;
  mutable std::mutex writer_;  // serializes Learn, Refit and captures
  // Guards the state below against readers: the learning thread changes it
  // under the exclusive lock (and reads it without the lock).
  mutable WriterPriorityMutex state_lock_;
  SampleStore store_;
  RunningMoments inputs_;
  RunningMoments targets_;
  GradientStatistics gradients_;
  PrequentialSelector gradient_selector_;
  std::size_t gradient_evaluated_ = 0;
  PrequentialScore score_;
  std::unique_ptr<MetricIndex> gradient_index_;  // null for Euclidean
  std::uint64_t gradient_swap_at_ = 0;
  std::vector<PredictionIndex> predictions_;
  // Growth refresh of the metric (learning thread; counts under the lock).
  GradientRefresh refresh_;
  GradientStatistics since_refresh_;  // online estimates since it started
  std::uint64_t refresh_swap_at_ = 0;
  std::size_t refreshed_size_ = 0;
  std::uint64_t metric_refreshes_ = 0;
  std::unique_ptr<LearnScratch> scratch_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_H_
