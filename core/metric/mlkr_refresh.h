#ifndef STREAMREG_CORE_METRIC_MLKR_REFRESH_H_
#define STREAMREG_CORE_METRIC_MLKR_REFRESH_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "core/base/background_priority.h"
#include "core/base/background_task.h"
#include "core/base/mutex.h"
#include "core/metric/learned_metric.h"
#include "core/metric/metric_transform.h"
#include "core/metric/mlkr_fit.h"
#include "core/metric/mlkr_fit_exchange.h"
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
// where the map is, the lower objective winning — one, from where the map
// is, once the map is settled (Job::also_from_initial_map;
// ModelConfig::mlkr_settled_after).
//
// In a cluster, the replicas of a model share the fits (MlkrFitExchange):
// a replica that does not compute first holds its fit back until another
// replica's result comes (Offer) or something waits for it (its learner at
// the take-over point, a read, a snapshot: result(), Finish()); then it
// computes it itself, lowered below the computing replica's fit.
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
    // Whether a known map's fit also descends from the paper's initial map
    // (the lower objective wins), or only from where the map is: a map
    // fitted to a thousand samples or more no longer holds the descent in
    // a basin of a few samples, and the second descent would double the
    // fit's cost (ModelConfig::mlkr_settled_after).
    bool also_from_initial_map = true;
    // Rank, neighbours, steps; exclude_within counts stream positions
    // (the honest error's lag), divided by the stride for the fit.
    MlkrFitOptions options;
    std::size_t num_slots = 0;  // samples 0 .. num_slots - 1
    std::size_t max_samples = 20000;
  };
  using Progress = std::function<void(std::size_t done, std::size_t total)>;

  // How far a fit held back and then computed anyway is lowered: below a
  // computing replica's fit (kLoweredBy), to yield the cores to it.
  static constexpr int kHeldFitLoweredBy = 19;
  // Results offered for fits not started yet that are kept (the latest).
  static constexpr std::size_t kKeptOffers = 8;

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

  // Shares the fits with the model's other replicas from the next Start
  // on (null: none, every fit computed as it starts).
  void SetExchange(std::shared_ptr<MlkrFitExchange> exchange)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Runs it on a background thread (or holds it back: see the class);
  // Finish() waits and returns the maps. `fit` names it for the exchange:
  // the samples the model had seen when it started, the same on every
  // replica.
  void Start(Job job, CopySlotRows rows, std::uint64_t fit = 0)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Running again with its result known (a snapshot taken while it ran).
  void Resume(std::vector<MlkrMap> result) ABSL_LOCKS_EXCLUDED(mutex_);
  // A result of fit `fit` from another replica: the fit running now ends
  // with it if it is that fit and has no result yet (its computation, if
  // any, stops); a result for a fit not started yet is kept for it (the
  // kKeptOffers latest). Whether it was taken or kept. Thread-safe.
  bool Offer(std::uint64_t fit, std::vector<MlkrMap> maps)
      ABSL_LOCKS_EXCLUDED(mutex_);
  bool running() const { return task_.running(); }
  // Something waits for the fit running now (a read, through the learner
  // at its take-over point): its thread, lowered so far, runs at the
  // process's priority from now on, and a fit held back starts. False if
  // the system refused.
  bool Prioritize() const ABSL_LOCKS_EXCLUDED(mutex_) {
    Release();
    return priority_.Raise();
  }
  // Fits raised so far, and raises the system refused.
  std::uint64_t prioritized() const { return priority_.raised(); }
  std::uint64_t prioritize_refused() const { return priority_.refused(); }
  // Whether the fit running now has its result, or none runs (without
  // starting one held back).
  bool Done() const {
    const std::shared_future<std::vector<MlkrMap>> result = task_.result();
    return !result.valid() || result.wait_for(std::chrono::seconds(0)) ==
                                  std::future_status::ready;
  }
  // Fits computed here, and fits whose result came from another replica.
  std::uint64_t computed() const { return computed_.load(); }
  std::uint64_t taken() const { return taken_.load(); }
  // The result to come: something waits for it, so a fit held back starts.
  std::shared_future<std::vector<MlkrMap>> result() const
      ABSL_LOCKS_EXCLUDED(mutex_) {
    Release();
    return task_.result();
  }
  // Waits for the result (a fit held back starts) and takes it.
  std::vector<MlkrMap> Finish() ABSL_LOCKS_EXCLUDED(mutex_);
  // Drops the fit running now, stopping its computation: superseded.
  void Abandon() ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  // A fit held back: released once something waits for it.
  struct Hold {
    std::mutex mutex;
    std::condition_variable_any released_changed;
    bool released = false;
  };
  // Starts a fit held back, if there is one.
  void Release() const ABSL_LOCKS_EXCLUDED(mutex_);
  // The fit's work on its thread: waits while held, computes, shares.
  std::vector<MlkrMap> Work(const Job& job, const CopySlotRows& rows,
                            std::uint64_t fit,
                            const std::shared_ptr<Hold>& hold,
                            const std::shared_ptr<MlkrFitExchange>& exchange,
                            std::stop_token stop);

  mutable Mutex mutex_;
  std::shared_ptr<MlkrFitExchange> exchange_ ABSL_GUARDED_BY(mutex_);
  // The fit started last; the one running, while task_ runs.
  std::optional<std::uint64_t> last_started_ ABSL_GUARDED_BY(mutex_);
  std::shared_ptr<Hold> hold_ ABSL_GUARDED_BY(mutex_);
  std::map<std::uint64_t, std::vector<MlkrMap>> offers_ ABSL_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> computed_ = 0;
  std::atomic<std::uint64_t> taken_ = 0;
  mutable RaisablePriority priority_;
  BackgroundTask<std::vector<MlkrMap>> task_;  // last: its thread ends first
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_MLKR_REFRESH_H_
