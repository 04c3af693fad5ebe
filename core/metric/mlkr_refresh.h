#ifndef STREAMREG_CORE_METRIC_MLKR_REFRESH_H_
#define STREAMREG_CORE_METRIC_MLKR_REFRESH_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "core/base/background_priority.h"
#include "core/base/background_task.h"
#include "core/metric/learned_metric.h"
#include "core/metric/metric_transform.h"
#include "core/metric/mlkr_fit.h"
#include "core/metric/mlkr_map.h"
#include "core/metric/slot_rows.h"
#include "core/regression/online_ridge.h"

namespace streamreg {

// The batch fit of a model's MLKR maps (FitMlkr) over its stored samples,
// on Refit and in the background each time the store has grown by a
// factor, like the gradient metrics' refresh (GradientRefresh): each map
// is fitted to the samples stored (a stride through them above
// max_samples, so that a fit costs the same at any size), in standardized
// coordinates, to the targets the regressor predicts — their residuals
// under the linear base when the model has one — each divided by its
// standard deviation. Two descents, from the paper's initial map and from
// where the map is; the lower objective wins.
class MlkrRefresh {
 public:
  struct Job {
    explicit Job(MetricTransform standardization)
        : standardization(std::move(standardization)) {}
    MetricTransform standardization;  // raw x -> standardized coordinates
    std::vector<double> target_scales;
    std::optional<OnlineRidge> base;  // the residuals' base, if any
    // Per map: the target it is learned for (kAllTargets: every target,
    // each weighing alike) and where it is (an unknown map: the descent
    // from InitialMlkrMap alone).
    std::vector<std::size_t> targets;
    std::vector<MlkrMap> start;
    // Rank, neighbours, steps; exclude_within counts stream positions
    // (the honest error's lag), divided by the stride for the fit.
    MlkrFitOptions options;
    std::size_t num_slots = 0;  // samples 0 .. num_slots - 1
    std::size_t max_samples = 20000;
  };
  using Progress = std::function<void(std::size_t done, std::size_t total)>;

  MlkrRefresh() = default;
  MlkrRefresh(const MlkrRefresh&) = delete;
  MlkrRefresh& operator=(const MlkrRefresh&) = delete;

  // The fitted maps, in the job's order, on the calling thread; a map
  // whose fit cannot run (fewer than 2 samples) or is stopped stays where
  // it started.
  static std::vector<MlkrMap> Run(const Job& job, const CopySlotRows& rows,
                                  const Progress& progress = {},
                                  std::stop_token stop = {});
  // The slots a job over `num_slots` reads one of (1, or more above
  // max_samples).
  static std::size_t Stride(std::size_t num_slots, std::size_t max_samples);
  // The samples it then reads: num_slots / stride, rounded up.
  static std::size_t SamplesRead(std::size_t num_slots,
                                 std::size_t max_samples);

  // Runs it on a background thread; Finish() waits and returns the maps.
  void Start(Job job, CopySlotRows rows);
  // Running again with its result known (a snapshot taken while it ran).
  void Resume(std::vector<MlkrMap> result) { task_.Resume(std::move(result)); }
  bool running() const { return task_.running(); }
  // Something waits for the fit running now (a read, through the learner
  // at its take-over point): its thread, lowered so far, runs at the
  // process's priority from now on. False if the system refused.
  bool Prioritize() const { return priority_.Raise(); }
  // Fits raised so far, and raises the system refused.
  std::uint64_t prioritized() const { return priority_.raised(); }
  std::uint64_t prioritize_refused() const { return priority_.refused(); }
  std::shared_future<std::vector<MlkrMap>> result() const {
    return task_.result();
  }
  std::vector<MlkrMap> Finish() { return task_.Finish(); }

 private:
  BackgroundTask<std::vector<MlkrMap>> task_;
  mutable RaisablePriority priority_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_MLKR_REFRESH_H_
