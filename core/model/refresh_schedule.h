#ifndef STREAMREG_CORE_MODEL_REFRESH_SCHEDULE_H_
#define STREAMREG_CORE_MODEL_REFRESH_SCHEDULE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/metric/gradient_estimator.h"
#include "core/metric/gradient_refresh.h"
#include "core/model/model_state.h"
#include "core/model/take_over_key.h"

namespace streamreg {

// The refresh schedule: when a Model's background work starts and when it
// takes over (docs/estimators.md, "Learning online"):
//  - each time the store has grown by config.metric_refresh_growth, the
//    metric's sums are recomputed with the papers' batch estimator
//    (GradientRefresh) and installed at a fixed later sample count, with the
//    online estimates made meanwhile added;
//  - every config.drift_check_every samples, an index whose transform has
//    drifted past config.drift_tolerance from the metric's (or the
//    standardization's) is rebuilt, taking over at a fixed later count.
// Both build on a background thread; the lag to the take-over grows with
// the store (ModelConfig::rebuild_lag_fraction), so a build is normally
// done long before it, and the take-over is a pointer swap. The take-over
// points are sample counts (TakeOverRule::kFixedCount), or the later of
// that count and the sample after the model's log recorded the work done
// (kLogged), so results never depend on timing: on the samples alone, or
// on the log.

// The prediction index whose coordinates the random-feature base follows:
// with the metric chosen per target (and config.random_base_follows_choice),
// the one most targets predict from now (the first of those on ties), else
// the first.
std::size_t RandomBaseIndex(const ModelState& state)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// The random-feature base's rebuilds' budget, in multiply-adds
// (RandomFeatureRefresh::MultiplyAdds): a rebuild starts once the samples
// learned since the last one started pay for it, each at
// kRandomBaseRebuildBudget (about 85 us of a core at 1 kHz on the machine
// of bench/RESULTS.md) or at kRandomBaseRebuildPasses times what a sample
// adds to the sums (F^2 / 2, F = 1 + d + 2D), whichever is more — so that
// a rebuild over n stored samples is paid for after n / 4 samples and a
// bounded number more, whatever D. At d = 21 a rebuild over 30,000
// samples is paid for after 940 learned at D = 64, 7,800 at D = 256.
// Without a budget, the rebuilds a 1 kHz arm's metric refreshes started
// took two thirds of a two-core server at D = 256 and it fell behind
// (bench/notes/issue-75-full-size-base.md, "Rebuilds within a budget").
constexpr double kRandomBaseRebuildBudget = 1 << 19;
constexpr double kRandomBaseRebuildPasses = 4;

// Whether `job` may start `learned` samples after the random-feature
// base's last rebuild started, within the budget above.
bool RandomBaseRebuildAffordable(const RandomFeatureRefresh::Job& job,
                                 std::uint64_t learned);

// The stored samples a growth refresh over `size` of them estimates
// gradients at (GradientRefresh::Job::max_points; 0 = every one): at most
// config.metric_refresh_samples, and at most half the samples that arrive
// before it takes over (but never fewer than config.small_store_below), so
// that it adds at most half a gradient estimate to each learned sample's
// one and keeps pace with learning on a thread of its own.
std::size_t RefreshPoints(const ModelConfig& config, std::size_t size);

// After each learned sample, first: its gradient estimate also counts
// toward a refresh running now.
void NoteEstimate(ModelState& state, const GradientEstimate& estimate)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer);

// Before a sample is stored (`seen` samples once it is): waits for the
// background rebuilds that take over at it to catch up (predictions go on
// meanwhile), so that the take-over itself is a pointer swap.
void PrepareTakeOvers(ModelState& state, std::uint64_t seen)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) ABSL_LOCKS_EXCLUDED(state.lock);

// Whether learning the next sample (`seen` samples once it is stored) would
// wait for background work taking over at it that is not done yet (a
// metric refresh, an MLKR fit, a random-feature rebuild, an index rebuild
// still building). If so, a check that says when all of it is done —
// cheap, callable on any thread while the model lives — else none. A
// learner that must not hold its thread through such a wait learns up to
// here and comes back once the check holds (the result is the same).
std::function<bool()> PendingTakeOver(const ModelState& state,
                                      std::uint64_t seen)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer);

// Under TakeOverRule::kLogged, the background work running that the
// model's log has not recorded, each with whether it is done here (its
// record would make no learner wait). Under kFixedCount, none.
struct UnrecordedWork {
  TakeOverKey key;
  bool done = false;
};
std::vector<UnrecordedWork> UnrecordedTakeOvers(const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer);

// The log's record that the work `key` names is done: from then on it takes
// over at the first sample learned from its earliest point on (waiting
// there if it is not done here after all). Whether the key named work
// running and not recorded yet; a record of anything else (work
// superseded, taken over, recorded twice) changes nothing.
bool RecordTakeOver(ModelState& state, const TakeOverKey& key)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer);

// Whether AfterSample may replace an index generation at the sample just
// stored — what predictions see (a metric refresh changes only the sums,
// which predictions do not read): at a take-over point.
bool PredictionsMayChange(const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// After each learned sample: installs what is due, starts what is needed.
void AfterSample(ModelState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
    ABSL_LOCKS_EXCLUDED(state.lock);

// Recomputes the metric from every stored sample now (superseding a refresh
// in flight) and rebuilds every index.
void RefitNow(ModelState& state, const GradientRefresh::Progress& progress)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) ABSL_LOCKS_EXCLUDED(state.lock);

// Waits for background work and installs it now.
void FinishBackgroundWork(ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) ABSL_LOCKS_EXCLUDED(state.lock);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_REFRESH_SCHEDULE_H_
