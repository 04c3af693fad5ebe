#include "core/model/refresh_schedule.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

#include "core/model/model_reader.h"

namespace streamreg {
namespace {

// The store's counts and transforms, read under the state's lock.
std::uint64_t SamplesSeen(const ModelState& state)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  SharedLock lock(state.lock);
  return state.store.seen();
}

std::size_t SamplesStored(const ModelState& state)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  SharedLock lock(state.lock);
  return state.store.size();
}

MetricTransform StandardizingTransform(const ModelState& state)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  SharedLock lock(state.lock);
  return state.StandardizingTransform();
}

MetricTransform PredictionTransform(const ModelState& state, std::size_t i)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  SharedLock lock(state.lock);
  return state.PredictionTransform(i);
}

using Work = TakeOverKey::Work;

// Whether the model's log has recorded the work `key` names done.
bool IsRecorded(const ModelState& state, const TakeOverKey& key)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  const std::vector<TakeOverKey>& logged = state.logged_take_overs;
  return std::find(logged.begin(), logged.end(), key) != logged.end();
}

// The keys of the pieces of background work that may be running.
TakeOverKey RefreshKey(const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  return {Work::kMetricRefresh, 0, state.take_over.refresh};
}
TakeOverKey MlkrKey(const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  return {Work::kMlkrFit, 0, state.take_over.mlkr_refresh};
}
TakeOverKey RandomBaseKey(const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  return {Work::kRandomFeatureRebuild, 0, state.take_over.random_refresh};
}
TakeOverKey GradientIndexKey(const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  return {Work::kGradientIndexRebuild, 0, state.take_over.gradient_index};
}
TakeOverKey PredictionIndexKey(const ModelState& state, std::size_t i)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  return {Work::kPredictionIndexRebuild, static_cast<std::uint32_t>(i),
          state.take_over.prediction_indexes[i]};
}

// Whether the work `key` names may take over at the sample that makes the
// count `seen`: from its earliest point on, and under TakeOverRule::kLogged
// — but in a batch learned at fixed counts — once the log has recorded it.
bool MayTakeOver(const ModelState& state, const TakeOverKey& key,
                 std::uint64_t seen)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  if (seen < key.earliest) return false;
  if (state.config.take_over == TakeOverRule::kFixedCount ||
      state.batch_take_overs == BatchTakeOvers::kAtFixedCounts) {
    return true;
  }
  return IsRecorded(state, key);
}

// Work of `key`'s kind and index has taken over, or another piece of it
// started: no record of an earlier piece names anything now.
void ForgetRecords(ModelState& state, const TakeOverKey& key)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  std::erase_if(state.logged_take_overs, [&key](const TakeOverKey& logged) {
    return logged.work == key.work && logged.index == key.index;
  });
}

// Small stores follow their metric closely: their background work takes
// over at most this many samples after it starts (a build over fewer than
// small_store_below samples takes milliseconds). A lag of a quarter of the
// store cost held-out accuracy (SARCOS split in time: mean nMSE 0.399 ->
// 0.411 for the default model; bench/notes/results-history.md, "Against the
// peers").
constexpr std::uint64_t kSmallStoreMaxLag = 64;

// Samples between starting background work on `size` samples and its
// taking over.
std::uint64_t Lag(const ModelConfig& config, std::size_t size) {
  const auto proportional = static_cast<std::uint64_t>(
      config.rebuild_lag_fraction * static_cast<double>(size));
  if (size < config.small_store_below) {
    return std::clamp<std::uint64_t>(proportional, 1, kSmallStoreMaxLag);
  }
  return std::max<std::uint64_t>(config.rebuild_lag, proportional);
}

// The growth refresh's job over slots [0, num_slots).
GradientRefresh::Job RefreshJob(const ModelState& state, std::size_t num_slots)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  const ModelConfig& config = state.config;
  SharedLock lock(state.lock);
  GradientRefresh::Job job{state.StandardizingTransform()};
  job.kernel = config.kernel;
  job.bandwidth = state.GradientBandwidth();
  job.step = config.step_ratio * job.bandwidth;
  job.estimator = config.gradient_estimator;
  job.num_targets = config.num_targets();
  job.outer_products = KeepsOuterProducts(config.metric);
  job.num_slots = num_slots;
  job.max_points = RefreshPoints(config, num_slots);
  return job;
}

// The MLKR fit's job over slots [0, num_slots): every MLKR map, from where
// it is now.
MlkrRefresh::Job MlkrJob(const ModelState& state, std::size_t num_slots)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  const ModelConfig& config = state.config;
  SharedLock lock(state.lock);
  MlkrRefresh::Job job(state.StandardizingTransform());
  job.target_scales = state.TargetScales();
  // The map is fitted to the linear base's residuals. A random-feature
  // base is built in the map's coordinates, so the map is fitted to the
  // targets themselves under it (its ridge is not kept): fitted to that
  // base's residuals the map would lose what the base took out, and the
  // next base be built in the poorer map (bench/notes/results-history.md, "The
  // random-feature base on the wire").
  if (config.linear_base) job.base = state.base;
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    if (state.predictions[i].metric != MetricKind::kMlkr) continue;
    job.targets.push_back(state.predictions[i].metric_target);
    job.start.push_back(state.mlkr_maps[i]);
  }
  job.options.rank = config.mlkr_rank;
  job.options.neighbors = config.mlkr_neighbors;
  job.options.max_steps = config.MlkrFitSteps(
      MlkrRefresh::SamplesRead(num_slots, config.mlkr_fit_samples));
  // A sample's neighbours in the fit leave out those the honest error
  // leaves out (in stream order, which an unbounded store's slots keep).
  if (config.capacity.policy == CapacityPolicy::kUnbounded) {
    job.options.exclude_within = config.EffectiveHonestLag();
  }
  job.num_slots = num_slots;
  job.max_samples = config.mlkr_fit_samples;
  return job;
}

void InstallMlkrMaps(ModelState& state, std::vector<MlkrMap> fitted)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  ExclusiveLock lock(state.lock);
  std::size_t k = 0;
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    if (state.predictions[i].metric != MetricKind::kMlkr) continue;
    if (k < fitted.size()) state.mlkr_maps[i] = std::move(fitted[k++]);
  }
  ++state.metric_refreshes;
}

// Takes a refresh's result at its take-over point, recording the learner's
// wait if it is not done yet.
template <class Refresh>
auto FinishAtTakeOver(Refresh& refresh, PauseStatistics& waits) {
  const bool done = refresh.result().wait_for(std::chrono::seconds(0)) ==
                    std::future_status::ready;
  const PauseStatistics::Clock::time_point start =
      PauseStatistics::Clock::now();
  auto result = refresh.Finish();
  if (!done) waits.RecordSince(start);
  return result;
}

void InstallRefresh(ModelState& state, GradientStatistics batch)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  ExclusiveLock lock(state.lock);
  state.gradients = std::move(batch);
  state.gradients.Merge(state.since_refresh);
  state.since_refresh.Clear();
  ++state.metric_refreshes;
}

// Starts a background rebuild; returns the sample count at which it takes
// over.
std::uint64_t StartRebuild(ModelState& state, MetricIndex& index,
                           MetricTransform transform)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  const std::size_t size = SamplesStored(state);
  index.BeginRebuild(std::move(transform), size, state.StoreRows());
  return SamplesSeen(state) + Lag(state.config, size);
}

// The fewest stored samples background work over them starts at.
constexpr std::size_t kFirstRefresh = 64;

// Whether a refresh last started at `refreshed_size` stored samples is due
// again at `size`: from 64 samples on, each time the store has grown by
// config.metric_refresh_growth (small stores, cheap to refresh, four times
// as often: growth 2 becomes 1.25).
bool RefreshDue(const ModelConfig& config, std::size_t size,
                std::size_t refreshed_size) {
  const bool small = size < config.small_store_below;
  const double growth = small ? 1.0 + (config.metric_refresh_growth - 1.0) / 4
                              : config.metric_refresh_growth;
  return size >= kFirstRefresh &&
         static_cast<double>(size) >=
             growth * static_cast<double>(refreshed_size);
}

// Starts or installs the growth refresh of the metric's sums.
void MaintainMetric(ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  const ModelConfig& config = state.config;
  if (state.gradient_index == nullptr || config.metric_refresh_growth == 0.0 ||
      config.metric_forgetting != 1.0) {
    return;
  }
  TakeOverPoints& take_over = state.take_over;
  if (state.refresh.running()) {
    if (MayTakeOver(state, RefreshKey(state), SamplesSeen(state))) {
      ForgetRecords(state, RefreshKey(state));
      InstallRefresh(state,
                     FinishAtTakeOver(state.refresh, state.refresh_waits));
    }
    return;
  }
  const std::size_t size = SamplesStored(state);
  if (!RefreshDue(config, size, take_over.refreshed_size)) return;
  take_over.refreshed_size = size;
  // Slots below `size` never change in an unbounded store, so the job may
  // read them while learning goes on; otherwise it gets a copy taken now.
  state.refresh.Start(RefreshJob(state, size), state.RefreshRows(size));
  take_over.refresh = SamplesSeen(state) + Lag(config, size);
  ForgetRecords(state, RefreshKey(state));
}

// Samples between starting an MLKR fit over `size` stored samples and its
// taking over: at least half the samples it reads. Beside the robot loop
// (d = 21, 1 kHz, two cores) a fit of 16,384 samples took about 6.6 s,
// 0.4 ms per sample read, and the gradient metrics' lag (a quarter of the
// store, 4.1 s there) made the learner wait 2.6 s for it; a quarter of the
// samples read stalled it 3.1 s, half of them did not
// (bench/notes/results-history.md, "The robot loop with MLKR").
std::uint64_t MlkrLag(const ModelConfig& config, std::size_t size) {
  return std::max<std::uint64_t>(Lag(config, size),
                                 std::min(size, config.mlkr_fit_samples) / 2);
}

// Whether the maps' last growth fit, over `fitted_size` stored samples,
// read config.mlkr_settled_after samples or more (1,024 by default): the
// map is settled and the next fit descends from it alone. On the 1 kHz arm
// the fits from the second second on descend once; data/'s sets (at most
// 3,000 training rows) keep both descents in every fit that takes over
// before their last sample (bench/notes/issue-73-server-cpu.md, "A map
// settled at half a budget").
bool MapSettled(const ModelConfig& config, std::size_t fitted_size) {
  return config.mlkr_settled_after != 0 &&
         MlkrRefresh::SamplesRead(fitted_size, config.mlkr_fit_samples) >=
             config.mlkr_settled_after;
}

// Starts or installs the growth refresh of the MLKR maps (the same
// schedule; their first fit, at 64 samples, makes them known).
void MaintainMlkr(ModelState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
    ABSL_LOCKS_EXCLUDED(state.lock) {
  const ModelConfig& config = state.config;
  if (!config.LearnsMlkr() || config.metric_refresh_growth == 0.0) return;
  TakeOverPoints& take_over = state.take_over;
  if (state.mlkr_refresh.running()) {
    if (MayTakeOver(state, MlkrKey(state), SamplesSeen(state))) {
      ForgetRecords(state, MlkrKey(state));
      InstallMlkrMaps(
          state, FinishAtTakeOver(state.mlkr_refresh, state.refresh_waits));
    }
    return;
  }
  const std::size_t size = SamplesStored(state);
  if (!RefreshDue(config, size, take_over.mlkr_refreshed_size)) return;
  MlkrRefresh::Job job = MlkrJob(state, size);
  job.also_from_initial_map =
      !MapSettled(config, take_over.mlkr_refreshed_size);
  take_over.mlkr_refreshed_size = size;
  state.mlkr_refresh.Start(std::move(job), state.RefreshRows(size).copy,
                           SamplesSeen(state));
  take_over.mlkr_refresh = SamplesSeen(state) + MlkrLag(config, size);
  ForgetRecords(state, MlkrKey(state));
}

// Starts rebuilding the random-feature base in the coordinates of the
// model's index (RandomBaseIndex) when they are not the base's (it took over
// new ones: a metric refresh, a standardization drift), or the store has
// grown as a metric refresh waits for (Tuning.metric_refresh_growth) since
// the last rebuild started (its lengthscale and ridge then chosen again on
// more samples), from 64 stored samples on — if it is within the budget
// (kRandomBaseRebuildBudget): else it waits, and starts in the coordinates
// of then (or the index the targets choose has changed). A rebuild in
// flight is superseded when the index has just taken over (`took_over`).
// Counted in samples, so that results never depend on timing.
void RebuildRandomBaseWhenDue(ModelState& state, std::size_t base_index,
                              bool took_over)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  const ModelConfig& config = state.config;
  TakeOverPoints& take_over = state.take_over;
  const std::size_t size = SamplesStored(state);
  if ((state.random_refresh.running() && !took_over) || size < kFirstRefresh) {
    return;
  }
  const MetricTransform& coordinates =
      state.predictions[base_index].index->transform();
  bool moved = false;
  {
    SharedLock lock(state.lock);
    moved = !state.random_base->coming_transform().SameAs(coordinates);
  }
  const bool grown = config.metric_refresh_growth != 0.0 &&
                     RefreshDue(config, size, take_over.random_rebuilt_size);
  if (!moved && !grown) return;
  RandomFeatureRefresh::Job job = RandomFeatureJob(config, coordinates, size);
  const std::uint64_t seen = SamplesSeen(state);
  if (!RandomBaseRebuildAffordable(job, seen - take_over.random_rebuilt_seen)) {
    return;
  }
  take_over.random_rebuilt_size = size;
  take_over.random_rebuilt_seen = seen;
  state.random_refresh.Start(std::move(job), state.RefreshRows(size).copy);
  take_over.random_refresh = seen + Lag(config, size);
  ForgetRecords(state, RandomBaseKey(state));
}

// The random-feature base replaced by `fit` now, every residual taken
// under it.
void ReplaceRandomBaseNow(ModelState& state, RandomFeatureFit fit)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  ExclusiveLock lock(state.lock);
  state.random_base->Replace(std::move(fit), state.store);
  state.random_base->CompleteSweep(state.store);
}

// The random-feature base fitted in one batch to the `size` stored
// samples in its index's coordinates (RandomBaseIndex), with every
// residual under it (Refit; a rebuild in flight is superseded).
void RefitRandomBase(ModelState& state, std::size_t size)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  if (!state.config.random_feature_base) return;
  if (state.random_refresh.running()) (void)state.random_refresh.Finish();
  state.take_over.random_rebuilt_size = size;
  state.take_over.random_rebuilt_seen = SamplesSeen(state);
  std::size_t base_index = 0;
  {
    SharedLock lock(state.lock);
    base_index = RandomBaseIndex(state);
  }
  const RandomFeatureRefresh::Job job = RandomFeatureJob(
      state.config, state.predictions[base_index].index->transform(), size);
  std::vector<double> z, y;
  ReadMappedRows(size, state.RefreshRows(size).copy, job.transform, &z, &y);
  ReplaceRandomBaseNow(
      state, {job.transform, RandomFeatureRefresh::BuildOver(job, z, y)});
}

// At its take-over point, the rebuilt random-feature base replaces the one
// in use once its residuals are swept (RandomFeatureBase::Replace).
void MaintainRandomBase(ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_LOCKS_EXCLUDED(state.lock) {
  if (!state.random_refresh.running() ||
      !MayTakeOver(state, RandomBaseKey(state), SamplesSeen(state))) {
    return;
  }
  ForgetRecords(state, RandomBaseKey(state));
  const PauseStatistics::Clock::time_point start =
      PauseStatistics::Clock::now();
  RandomFeatureRefresh::Built built = state.random_refresh.Finish();
  if (PauseStatistics::Clock::now() - start > std::chrono::milliseconds(1)) {
    state.refresh_waits.RecordSince(start);
  }
  SharedLock lock(state.lock);
  state.LearnersRandomBase().Replace(std::move(built), state.store);
}

}  // namespace

std::size_t RandomBaseIndex(const ModelState& state) {
  if (state.config.metric != MetricKind::kAuto ||
      !state.config.random_base_follows_choice) {
    return 0;
  }
  thread_local std::vector<std::size_t> chosen;
  thread_local std::vector<std::size_t> targets;
  ChosenIndexes(state, &chosen);
  targets.assign(state.predictions.size(), 0);
  for (std::size_t index : chosen) ++targets[index];
  return static_cast<std::size_t>(
      std::max_element(targets.begin(), targets.end()) - targets.begin());
}

bool RandomBaseRebuildAffordable(const RandomFeatureRefresh::Job& job,
                                 std::uint64_t learned) {
  const double per_sample = std::max(
      kRandomBaseRebuildBudget,
      kRandomBaseRebuildPasses * RandomFeatureRefresh::SampleMultiplyAdds(job));
  return RandomFeatureRefresh::MultiplyAdds(job) <=
         per_sample * static_cast<double>(learned);
}

std::size_t RefreshPoints(const ModelConfig& config, std::size_t size) {
  if (config.metric_refresh_samples == 0) return 0;  // every one, exactly
  const std::size_t paced =
      std::max<std::size_t>(config.small_store_below,
                            static_cast<std::size_t>(Lag(config, size) / 2));
  return std::min(config.metric_refresh_samples, paced);
}

void NoteEstimate(ModelState& state, const GradientEstimate& estimate) {
  if (state.refresh.running()) state.since_refresh.Add(estimate);
}

namespace {

// The key of `index`'s rebuild (the gradient index or a prediction index).
TakeOverKey KeyOf(const ModelState& state, const MetricIndex& index)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    if (state.predictions[i].index.get() == &index) {
      return PredictionIndexKey(state, i);
    }
  }
  return GradientIndexKey(state);
}

// The indexes whose background rebuild takes over once `seen` samples are
// stored.
std::vector<MetricIndex*> TakingOverAt(const ModelState& state,
                                       std::uint64_t seen)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  std::vector<MetricIndex*> out;
  if (state.gradient_index != nullptr && state.gradient_index->rebuilding() &&
      MayTakeOver(state, GradientIndexKey(state), seen)) {
    out.push_back(state.gradient_index.get());
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    if (state.predictions[i].index->rebuilding() &&
        MayTakeOver(state, PredictionIndexKey(state, i), seen)) {
      out.push_back(state.predictions[i].index.get());
    }
  }
  return out;
}

}  // namespace

void PrepareTakeOvers(ModelState& state, std::uint64_t seen) {
  for (MetricIndex* index : TakingOverAt(state, seen)) {
    index->WaitForBuild();
  }
}

namespace {

// Whether a refresh's result is known (Finish would not wait).
template <class Result>
bool Known(const std::shared_future<Result>& result) {
  return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Adds to `unfinished` the check of a refresh `key` names, if the sample
// `seen` would wait for it.
template <class Refresh>
void AddIfUnfinished(const ModelState& state, const Refresh& refresh,
                     const TakeOverKey& key, std::uint64_t seen,
                     std::vector<std::function<bool()>>& unfinished)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  if (!refresh.running() || !MayTakeOver(state, key, seen)) return;
  auto result = refresh.result();
  if (Known(result)) return;
  unfinished.push_back([result] { return Known(result); });
}

}  // namespace

std::function<bool()> PendingTakeOver(const ModelState& state,
                                      std::uint64_t seen) {
  std::vector<std::function<bool()>> unfinished;
  AddIfUnfinished(state, state.refresh, RefreshKey(state), seen, unfinished);
  AddIfUnfinished(state, state.mlkr_refresh, MlkrKey(state), seen, unfinished);
  const RandomFeatureRefresh* random = &state.random_refresh;
  if (random->running() && MayTakeOver(state, RandomBaseKey(state), seen) &&
      !random->Idle()) {
    unfinished.push_back([random] { return random->Idle(); });
  }
  for (const MetricIndex* index : TakingOverAt(state, seen)) {
    if (index->RebuildStillBuilding()) {
      unfinished.push_back([index] { return !index->RebuildStillBuilding(); });
    }
  }
  if (unfinished.empty()) return nullptr;
  return [unfinished = std::move(unfinished)] {
    return std::all_of(
        unfinished.begin(), unfinished.end(),
        [](const std::function<bool()>& done) { return done(); });
  };
}

std::vector<UnrecordedWork> UnrecordedTakeOvers(const ModelState& state) {
  std::vector<UnrecordedWork> running;
  if (state.config.take_over == TakeOverRule::kFixedCount) return running;
  if (state.refresh.running()) {
    running.push_back({RefreshKey(state), Known(state.refresh.result())});
  }
  if (state.mlkr_refresh.running()) {
    running.push_back({MlkrKey(state), Known(state.mlkr_refresh.result())});
  }
  if (state.random_refresh.running()) {
    running.push_back({RandomBaseKey(state), state.random_refresh.Idle()});
  }
  if (state.gradient_index != nullptr && state.gradient_index->rebuilding()) {
    running.push_back({GradientIndexKey(state),
                       !state.gradient_index->RebuildStillBuilding()});
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    const MetricIndex& index = *state.predictions[i].index;
    if (index.rebuilding()) {
      running.push_back(
          {PredictionIndexKey(state, i), !index.RebuildStillBuilding()});
    }
  }
  std::vector<UnrecordedWork> out;
  for (const UnrecordedWork& work : running) {
    if (!IsRecorded(state, work.key)) out.push_back(work);
  }
  return out;
}

bool RecordTakeOver(ModelState& state, const TakeOverKey& key) {
  if (state.config.take_over != TakeOverRule::kLogged) return false;
  for (const UnrecordedWork& work : UnrecordedTakeOvers(state)) {
    if (work.key == key) {
      state.logged_take_overs.push_back(key);
      return true;
    }
  }
  return false;
}

bool PredictionsMayChange(const ModelState& state) {
  // A drift check only starts a background rebuild.
  return !TakingOverAt(state, state.store.seen()).empty();
}

void AfterSample(ModelState& state) {
  MaintainMetric(state);
  MaintainMlkr(state);
  if (state.config.random_feature_base) MaintainRandomBase(state);
  const std::uint64_t seen = SamplesSeen(state);
  std::size_t base_index = 0;
  if (state.config.random_feature_base) {
    SharedLock lock(state.lock);
    base_index = RandomBaseIndex(state);
  }
  bool base_index_took_over = false;
  for (MetricIndex* index : TakingOverAt(state, seen)) {
    ForgetRecords(state, KeyOf(state, *index));
    index->FinishRebuild();
    base_index_took_over |= index == state.predictions[base_index].index.get();
  }
  if (state.config.random_feature_base) {
    RebuildRandomBaseWhenDue(state, base_index, base_index_took_over);
  }
  if (seen % state.config.drift_check_every != 0) return;
  TakeOverPoints& take_over = state.take_over;
  MetricIndex* gradient_index = state.gradient_index.get();
  const double tolerance = state.config.drift_tolerance;
  if (gradient_index != nullptr && !gradient_index->rebuilding()) {
    MetricTransform standardizing = StandardizingTransform(state);
    if (gradient_index->transform().RelativeChange(standardizing) > tolerance) {
      take_over.gradient_index =
          StartRebuild(state, *gradient_index, std::move(standardizing));
      ForgetRecords(state, GradientIndexKey(state));
    }
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    MetricIndex& index = *state.predictions[i].index;
    if (index.rebuilding()) continue;
    MetricTransform transform = PredictionTransform(state, i);
    if (index.transform().RelativeChange(transform) > tolerance) {
      take_over.prediction_indexes[i] =
          StartRebuild(state, index, std::move(transform));
      ForgetRecords(state, PredictionIndexKey(state, i));
    }
  }
}

void RefitNow(ModelState& state, const GradientRefresh::Progress& progress) {
  // Whatever runs is superseded or finished now.
  state.logged_take_overs.clear();
  const bool gradients = state.gradient_index != nullptr;
  const bool mlkr = state.config.LearnsMlkr();
  const std::size_t size = SamplesStored(state);
  if (!gradients && !mlkr) {
    if (progress) progress(0, 0);
    RefitRandomBase(state, size);
    return;
  }
  if (gradients) {
    // A growth refresh in flight is superseded.
    if (state.refresh.running()) (void)state.refresh.Finish();
    state.since_refresh.Clear();
    state.take_over.refreshed_size = size;
    // Every stored sample's estimate: the papers' batch mean exactly.
    GradientRefresh::Job job = RefreshJob(state, size);
    job.max_points = 0;
    InstallRefresh(
        state, GradientRefresh::Run(job, state.RefreshRows(size), progress));
    state.gradient_index->RebuildNow(StandardizingTransform(state), size,
                                     state.StoreRows());
  }
  if (mlkr) {
    state.mlkr_refresh.Abandon();  // superseded
    state.take_over.mlkr_refreshed_size = size;
    // The batch fit afresh, from the paper's initial map, as the gradient
    // metrics' refit recomputes their sums (growth refreshes go on from
    // where the map is), with every evaluation: a refit asked for is not
    // held to the background fits' budget.
    MlkrRefresh::Job job = MlkrJob(state, size);
    for (MlkrMap& start : job.start) start = MlkrMap();
    job.options.max_steps = state.config.mlkr_fit_steps;
    InstallMlkrMaps(state, MlkrRefresh::Run(
                               job, state.RefreshRows(size).copy,
                               gradients ? MlkrRefresh::Progress{} : progress));
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    state.predictions[i].index->RebuildNow(PredictionTransform(state, i), size,
                                           state.StoreRows());
  }
  RefitRandomBase(state, size);
}

void FinishBackgroundWork(ModelState& state) {
  state.logged_take_overs.clear();
  if (state.refresh.running()) InstallRefresh(state, state.refresh.Finish());
  if (state.mlkr_refresh.running()) {
    InstallMlkrMaps(state, state.mlkr_refresh.Finish());
  }
  if (state.random_refresh.running()) {
    ReplaceRandomBaseNow(state, state.random_refresh.Finish());
  }
  for (MetricIndex* index : state.AllIndexes()) index->FinishRebuild();
}

}  // namespace streamreg
