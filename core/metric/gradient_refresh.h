#ifndef STREAMREG_CORE_METRIC_GRADIENT_REFRESH_H_
#define STREAMREG_CORE_METRIC_GRADIENT_REFRESH_H_

#include <cstddef>
#include <functional>
#include <future>
#include <optional>
#include <stop_token>
#include <vector>

#include "core/base/background_task.h"
#include "core/base/byte_coding.h"
#include "core/metric/gradient_estimator.h"
#include "core/metric/gradient_statistics.h"
#include "core/metric/metric_transform.h"
#include "core/metric/slot_rows.h"
#include "core/regression/kernel.h"

namespace streamreg {

// The papers' batch gradient statistics (GW eq. 2; Trivedi et al. §3.1)
// recomputed over a snapshot of the stored samples: every sample's gradient
// estimate from all of them, in standardized Euclidean coordinates. A Model
// runs it for Refit, and in the background each time its store has grown
// by a factor, so that the online estimate — a mean of estimates each made
// from the samples before it, the early ones from few samples — is replaced
// by estimates made from much more data (docs/estimators.md, "Learning
// online").
class GradientRefresh {
 public:
  struct Job {
    MetricTransform standardization;  // raw x -> standardized coordinates
    Kernel kernel = Kernel::kBox;
    double bandwidth = 1.0;  // h of f_{n,h}
    double step = 0.5;       // t
    // Not saved by SaveJob: the model's configuration gives it.
    GradientEstimatorKind estimator = GradientEstimatorKind::kFiniteDifferences;
    std::size_t num_targets = 1;
    bool outer_products = false;  // EGOP sums too
    std::size_t num_slots = 0;    // samples 0 .. num_slots - 1
    // Not saved by SaveJob either. The samples whose gradients are
    // estimated, at most: a stride through the num_slots (0 = all of them;
    // ModelConfig::metric_refresh_samples). Every estimate is made from all
    // num_slots samples, and the sums are scaled to stand for all of them.
    std::size_t max_points = 0;
  };
  using Progress = std::function<void(std::size_t done, std::size_t total)>;
  // A job exactly, for snapshots; LoadJob fails on a malformed one.
  static void SaveJob(const Job& job, ByteWriter& out);
  static bool LoadJob(ByteReader& in, std::size_t dim, Job* job);

  GradientRefresh() = default;
  GradientRefresh(const GradientRefresh&) = delete;
  GradientRefresh& operator=(const GradientRefresh&) = delete;

  // Where a job reads the stored samples: copies through `copy`, or in
  // place through `pointers` when the owner gives them (rows that never
  // move or change: the job's tree then references them instead of
  // keeping copies). The statistics are the same either way.
  struct Rows {
    CopySlotRows copy;
    SlotRowPointers pointers;
  };

  // The slots whose gradients a job estimates: every one, or an even stride
  // through them (from slot 0) of at most job.max_points.
  static std::vector<std::uint64_t> EvaluatedSlots(const Job& job);

  // Computes the statistics on the calling thread (part of them, if `stop`
  // is requested meanwhile).
  static GradientStatistics Run(const Job& job, const Rows& rows,
                                const Progress& progress = {},
                                std::stop_token stop = {});

  // Computes them on a background thread; Finish() waits and returns them.
  void Start(Job job, Rows rows);
  // Running again with a result already known (a model restored from a
  // snapshot taken while a refresh ran): Finish() returns `result`.
  void Resume(GradientStatistics result);
  bool running() const { return task_.running(); }
  // The result to come of the refresh running now (a snapshot waits for it
  // on its own thread, while the model goes on learning).
  std::shared_future<GradientStatistics> result() const {
    return task_.result();
  }
  // The job running, if Start began it (not Resume).
  const std::optional<Job>& job() const { return job_; }
  GradientStatistics Finish();

 private:
  // Destroyed, it abandons a refresh still running (requests stop, then
  // joins): its result would never be used, and a model at 10^6 samples
  // is not kept minutes from going away.
  BackgroundTask<GradientStatistics> task_;
  std::optional<Job> job_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_GRADIENT_REFRESH_H_
