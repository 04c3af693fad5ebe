#include "core/metric/mlkr_refresh.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace streamreg {
namespace {

// The fit of one map over the standardized inputs `x` (n x d) and the
// scaled targets `y` (n x m), for target `target` (or all).
MlkrMap FitOne(const MlkrRefresh::Job& job, std::size_t target,
               const MlkrMap& start, std::size_t n, std::size_t d,
               std::size_t m, std::span<const double> x,
               std::span<const double> y, std::size_t stride,
               std::stop_token stop) {
  std::vector<double> own;
  MlkrSamples samples{n, d, m, x, y};
  if (target != kAllTargets) {
    own.resize(n);
    for (std::size_t i = 0; i < n; ++i) own[i] = y[i * m + target];
    samples.m = 1;
    samples.y = own;
  }
  if (n < 2) return start;
  MlkrFitOptions options = job.options;
  // Positions in the fit's samples, at most a quarter of them (a small
  // store's points keep neighbours).
  options.exclude_within =
      std::min((options.exclude_within + stride - 1) / stride, n / 4);
  options.stop = std::move(stop);
  // From the paper's initial map, and from where the map is: the objective
  // is not convex, and a map fitted early, to few samples, can hold the
  // descent in a basin that more samples would leave. The lower objective
  // wins. A settled map (Job::also_from_initial_map) descends alone.
  std::optional<MlkrFit> fit;
  const auto keep_if_lower = [&fit](absl::StatusOr<MlkrFit> candidate) {
    if (candidate.ok() && (!fit.has_value() || candidate->loss <= fit->loss)) {
      fit = *std::move(candidate);
    }
  };
  if (!start.known() || job.also_from_initial_map) {
    keep_if_lower(FitMlkr(samples, InitialMlkrMap(samples), options));
  }
  if (start.known()) keep_if_lower(FitMlkr(samples, start.Square(d), options));
  if (!fit.has_value()) return start;
  MlkrMap map;
  map.Install(fit->rank, std::move(fit->a), fit->step);
  return map;
}

}  // namespace

std::size_t MlkrRefresh::Stride(std::size_t num_slots,
                                std::size_t max_samples) {
  if (max_samples == 0 || num_slots <= max_samples) return 1;
  return (num_slots + max_samples - 1) / max_samples;
}

std::size_t MlkrRefresh::SamplesRead(std::size_t num_slots,
                                     std::size_t max_samples) {
  const std::size_t stride = Stride(num_slots, max_samples);
  return (num_slots + stride - 1) / stride;
}

std::vector<MlkrMap> MlkrRefresh::Run(const Job& job, const CopySlotRows& rows,
                                      const Progress& progress,
                                      std::stop_token stop) {
  const std::size_t d = job.standardization.dim();
  const std::size_t m = job.target_scales.size();
  const std::size_t stride = Stride(job.num_slots, job.max_samples);
  // The raw rows (the base reads raw inputs), then standardized in place.
  std::vector<double> x, y;
  ReadMappedRows(job.num_slots, rows,
                 MetricTransform::Standardizing(std::vector<double>(d, 0.0),
                                                std::vector<double>(d, 1.0)),
                 &x, &y, stride);
  const std::size_t n = x.size() / std::max<std::size_t>(d, 1);
  std::vector<double> residual(m), standardized(d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<double> inputs(x.data() + i * d, d);
    const std::span<double> targets(y.data() + i * m, m);
    // The targets the regressor predicts (residuals under the base),
    // scaled.
    if (job.base.has_value()) {
      job.base->Residual(inputs, targets, residual);
      std::copy(residual.begin(), residual.end(), targets.begin());
    }
    for (std::size_t t = 0; t < m; ++t) targets[t] /= job.target_scales[t];
    job.standardization.Apply(inputs, standardized);
    std::copy(standardized.begin(), standardized.end(), inputs.begin());
  }
  std::vector<MlkrMap> fitted;
  for (std::size_t k = 0; k < job.start.size(); ++k) {
    if (progress) progress(k, job.start.size());
    fitted.push_back(
        FitOne(job, job.targets[k], job.start[k], n, d, m, x, y, stride, stop));
  }
  if (progress) progress(job.start.size(), job.start.size());
  return fitted;
}

void MlkrRefresh::SetExchange(std::shared_ptr<MlkrFitExchange> exchange) {
  MutexLock lock(&mutex_);
  exchange_ = std::move(exchange);
}

void MlkrRefresh::Start(Job job, CopySlotRows rows, std::uint64_t fit) {
  MutexLock lock(&mutex_);
  last_started_ = fit;
  hold_ = nullptr;
  // Offered before it started (this replica behind the one that computed
  // it): taken at once.
  if (const auto offered = offers_.find(fit); offered != offers_.end()) {
    std::vector<MlkrMap> maps = std::move(offered->second);
    offers_.erase(offers_.begin(), std::next(offered));
    task_.Resume(std::move(maps));
    taken_.fetch_add(1);
    return;
  }
  offers_.erase(offers_.begin(), offers_.lower_bound(fit));
  if (exchange_ != nullptr && !exchange_->ComputesFirst()) {
    hold_ = std::make_shared<Hold>();
  }
  // Seconds of arithmetic that must not take a core from the learner or
  // the searches (it has half the samples it reads to finish), unless a
  // read comes to wait for it (Prioritize). (The replica computing a fit
  // for all, left at the server's priority, ingested no faster: measured.)
  task_.Start(
      "mlkr-fit",
      [this, job = std::move(job), rows = std::move(rows), fit, hold = hold_,
       exchange = exchange_](std::stop_token stop) {
        return Work(job, rows, fit, hold, exchange, std::move(stop));
      },
      &priority_);
}

std::vector<MlkrMap> MlkrRefresh::Work(
    const Job& job, const CopySlotRows& rows, std::uint64_t fit,
    const std::shared_ptr<Hold>& hold,
    const std::shared_ptr<MlkrFitExchange>& exchange, std::stop_token stop) {
  if (hold != nullptr) {
    {
      std::unique_lock<std::mutex> lock(hold->mutex);
      hold->released_changed.wait(lock, stop,
                                  [&hold] { return hold->released; });
    }
    // Completed by an offer, or abandoned: what it returns is dropped.
    if (stop.stop_requested()) return job.start;
    priority_.LowerCallingThread(kHeldFitLoweredBy);
  }
  std::vector<MlkrMap> maps = Run(job, rows, {}, stop);
  if (stop.stop_requested()) return maps;  // dropped
  computed_.fetch_add(1);
  if (exchange != nullptr) exchange->Share(fit, maps);
  return maps;
}

void MlkrRefresh::Resume(std::vector<MlkrMap> result) {
  MutexLock lock(&mutex_);
  hold_ = nullptr;
  task_.Resume(std::move(result));
}

bool MlkrRefresh::Offer(std::uint64_t fit, std::vector<MlkrMap> maps) {
  MutexLock lock(&mutex_);
  if (last_started_ == fit && task_.running()) {
    if (!task_.Complete(std::move(maps))) return false;
    taken_.fetch_add(1);
    return true;
  }
  if (last_started_.has_value() && fit <= *last_started_) return false;
  offers_.insert_or_assign(fit, std::move(maps));
  while (offers_.size() > kKeptOffers) offers_.erase(offers_.begin());
  return true;
}

void MlkrRefresh::Release() const {
  std::shared_ptr<Hold> hold;
  {
    MutexLock lock(&mutex_);
    hold = hold_;
  }
  if (hold == nullptr) return;
  std::lock_guard<std::mutex> lock(hold->mutex);
  hold->released = true;
  hold->released_changed.notify_all();
}

std::vector<MlkrMap> MlkrRefresh::Finish() {
  result().wait();  // without mutex_: an offer may complete it meanwhile
  MutexLock lock(&mutex_);
  hold_ = nullptr;
  return task_.Finish();
}

void MlkrRefresh::Abandon() {
  MutexLock lock(&mutex_);
  hold_ = nullptr;
  if (!task_.running()) return;
  (void)task_.Complete({});
  (void)task_.Finish();
}

}  // namespace streamreg
