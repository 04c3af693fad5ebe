#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <shared_mutex>
#include <utility>

#include "absl/strings/str_cat.h"

namespace streamreg {
namespace {

// Checks one vector of a sample: its length and every value finite and
// within kMaxValueMagnitude. `field` is e.g. "samples[3].x".
absl::Status ValidateValues(std::span<const double> values,
                            std::size_t expected, absl::string_view field) {
  if (values.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": has ", values.size(),
                     " values, the model expects ", expected));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isnan(v)) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]: NaN"));
    }
    if (!(std::fabs(v) <= kMaxValueMagnitude)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "]: ", v, " is not finite or beyond +-2^200"));
    }
  }
  return absl::OkStatus();
}

void AddBuildTime(const MetricIndex::BuildTime& time, ModelStats* stats) {
  stats->index_builds_timed += time.builds;
  stats->index_build_seconds += time.seconds;
}

}  // namespace

struct Model::LearnScratch {
  explicit LearnScratch(std::size_t dim, std::size_t num_targets)
      : near(num_targets), estimator(dim, num_targets) {}
  std::vector<Neighbor> found;
  NeighborTargets near;
  std::vector<double> z;
  GradientEstimator estimator;
  // Per prediction index: its grid's values for the sample.
  std::vector<std::vector<double>> grid_values;
  std::vector<double> gradient_grid_values;
  GradientEstimate estimate;
};

Model::Model(ModelConfig config)
    : config_(std::move(config)),
      store_(config_.input_dim, config_.num_targets(), config_.capacity,
             config_.seed),
      inputs_(config_.input_dim),
      targets_(config_.num_targets()),
      gradients_(config_.input_dim, config_.num_targets(),
                 config_.metric == MetricKind::kEgop),
      gradient_selector_(config_.gradient_bandwidth_grid.size(),
                         config_.num_targets(), config_.selection_forgetting),
      score_(config_.num_targets(), config_.selection_forgetting),
      since_refresh_(config_.input_dim, config_.num_targets(),
                     config_.metric == MetricKind::kEgop),
      scratch_(std::make_unique<LearnScratch>(config_.input_dim,
                                              config_.num_targets())) {
  const std::size_t m = config_.num_targets();
  const MetricTransform identity = StandardizingTransform();
  const std::size_t grid_size = config_.regressor == RegressorKind::kKernel
                                    ? config_.bandwidth_grid.size()
                                    : config_.k_grid.size();
  const bool learned = config_.metric != MetricKind::kEuclidean;
  if (learned) gradient_index_ = std::make_unique<MetricIndex>(identity);
  auto add_index = [&](std::vector<std::size_t> targets,
                       std::size_t metric_target) {
    predictions_.push_back(PredictionIndex{
        std::make_unique<MetricIndex>(identity),
        PrequentialSelector(grid_size, m, config_.selection_forgetting), 0,
        std::move(targets), metric_target, 0});
  };
  if (learned && config_.per_target_metric) {
    for (std::size_t t = 0; t < m; ++t) add_index({t}, t);
  } else {
    std::vector<std::size_t> all(m);
    for (std::size_t t = 0; t < m; ++t) all[t] = t;
    add_index(std::move(all), kAllTargets);
  }
  scratch_->grid_values.resize(predictions_.size());
}

Model::~Model() = default;

absl::StatusOr<std::unique_ptr<Model>> Model::Create(ModelConfig config) {
  if (absl::Status status = CompleteAndValidate(&config); !status.ok()) {
    return status;
  }
  return std::unique_ptr<Model>(new Model(std::move(config)));
}

absl::Status Model::Validate(std::span<const Sample> batch) const {
  for (std::size_t s = 0; s < batch.size(); ++s) {
    const std::string prefix = absl::StrCat("samples[", s, "]");
    if (absl::Status status = ValidateValues(batch[s].x, config_.input_dim,
                                             absl::StrCat(prefix, ".x"));
        !status.ok()) {
      return status;
    }
    if (absl::Status status = ValidateValues(batch[s].y, config_.num_targets(),
                                             absl::StrCat(prefix, ".y"));
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status Model::Learn(std::span<const Sample> batch,
                          std::vector<Prediction>* before) {
  if (absl::Status status = Validate(batch); !status.ok()) return status;
  std::lock_guard writer(writer_);
  if (before != nullptr) before->resize(batch.size());
  for (std::size_t s = 0; s < batch.size(); ++s) {
    LearnOne(batch[s], before != nullptr ? &(*before)[s] : nullptr);
  }
  return absl::OkStatus();
}

void Model::LearnOne(const Sample& sample, Prediction* before) {
  LearnScratch& scratch = *scratch_;
  const std::size_t m = config_.num_targets();
  const std::vector<double> fallback(targets_.mean().begin(),
                                     targets_.mean().end());
  // 1. Every grid value predicts the sample (test before train).
  Prediction prediction;
  prediction.value.assign(m, 0.0);
  prediction.spread.assign(m, 0.0);
  prediction.neighbors.assign(m, 0);
  for (std::size_t i = 0; i < predictions_.size(); ++i) {
    EvaluateGrid(predictions_[i], sample.x, fallback, scratch,
                 &scratch.grid_values[i], &prediction);
  }
  // 2. The gradient estimate from the samples before this one.
  if (gradient_index_ != nullptr) {
    EstimateGradient(sample.x, scratch, &scratch.gradient_grid_values,
                     &scratch.estimate);
  }
  // 3. Store, index and count it.
  {
    std::unique_lock lock(state_lock_);
    const SampleStore::Placement placement = store_.Place();
    for (std::size_t i = 0; i < predictions_.size(); ++i) {
      predictions_[i].selector.Add(scratch.grid_values[i], sample.y,
                                   predictions_[i].evaluated);
    }
    score_.Add(prediction.value, sample.y);
    if (gradient_index_ != nullptr) {
      gradient_selector_.Add(scratch.gradient_grid_values, sample.y,
                             gradient_evaluated_);
      gradients_.Add(scratch.estimate, config_.metric_forgetting);
      if (refresh_.running()) since_refresh_.Add(scratch.estimate);
    }
    if (placement.keep) {
      if (placement.replaces) {
        for (MetricIndex* index : AllIndexes()) index->Remove(placement.slot);
      }
      store_.Put(placement.slot, sample.x, sample.y, sample.sample_id);
      for (MetricIndex* index : AllIndexes()) {
        index->Insert(placement.slot, sample.x);
      }
    }
    inputs_.Add(sample.x);
    targets_.Add(sample.y);
  }
  if (before != nullptr) *before = std::move(prediction);
  // 4. Follow the metric and the standardization.
  MaintainIndexes();
}

void Model::EvaluateGrid(PredictionIndex& p, std::span<const double> x,
                         std::span<const double> fallback,
                         LearnScratch& scratch,
                         std::vector<double>* grid_values,
                         Prediction* prediction) {
  const std::size_t m = config_.num_targets();
  const std::shared_ptr<const MetricIndex::Generation> generation =
      p.index->current();
  scratch.z.resize(config_.input_dim);
  generation->transform.Apply(x, scratch.z);
  std::size_t widest_best = 0;
  for (std::size_t t : p.targets) {
    widest_best = std::max(widest_best, p.selector.Best(t));
  }
  const std::size_t grid_size = p.selector.grid_size();
  p.evaluated = EvaluatedPrefix(grid_size, widest_best);
  GatherNeighbors(*generation, scratch.z, p.evaluated - 1, &scratch.found,
                  &scratch.near);
  grid_values->resize(grid_size * m);
  if (config_.regressor == RegressorKind::kKernel) {
    KernelAverageGrid(config_.kernel,
                      std::span(config_.bandwidth_grid).first(p.evaluated),
                      scratch.near, fallback, *grid_values);
  } else {
    NearestAverageGrid(std::span(config_.k_grid).first(p.evaluated),
                       scratch.near, fallback, *grid_values);
  }
  // The model's own prediction, made with the current choice per target.
  PredictTargets(p, scratch.near, prediction);
}

void Model::GatherNeighbors(const MetricIndex::Generation& generation,
                            std::span<const double> z, std::size_t grid_index,
                            std::vector<Neighbor>* found,
                            NeighborTargets* near) const {
  const auto targets = [this](std::uint64_t slot) { return store_.y(slot); };
  if (config_.regressor == RegressorKind::kKernel) {
    generation.tree.RangeUnordered(z, config_.bandwidth_grid[grid_index], found)
        .IgnoreError();
    near->GatherInShells(config_.bandwidth_grid, found, targets);
  } else {
    generation.tree.Knn(z, config_.k_grid[grid_index], found).IgnoreError();
    near->Gather(*found, targets);
  }
}

void Model::PredictTargets(const PredictionIndex& p,
                           const NeighborTargets& near, Prediction* out) const {
  // Targets grouped by their choice: one average per distinct choice, each
  // over its own targets only.
  thread_local std::vector<std::pair<std::size_t, std::size_t>> by_choice;
  thread_local std::vector<std::size_t> group;
  by_choice.clear();
  for (std::size_t t : p.targets) by_choice.push_back({p.selector.Best(t), t});
  std::sort(by_choice.begin(), by_choice.end());
  LocalAverage average;
  for (std::size_t begin = 0; begin < by_choice.size();) {
    const std::size_t best = by_choice[begin].first;
    group.clear();
    std::size_t end = begin;
    for (; end < by_choice.size() && by_choice[end].first == best; ++end) {
      group.push_back(by_choice[end].second);
    }
    if (config_.regressor == RegressorKind::kKernel) {
      KernelAverageAt(config_.kernel, config_.bandwidth_grid[best], near,
                      &average, group);
    } else {
      NearestAverageAt(config_.k_grid[best], near, &average, group);
    }
    for (std::size_t t : group) {
      if (average.neighbors == 0) {
        Fallback(t, out);
        continue;
      }
      out->value[t] = average.value[t];
      out->spread[t] = average.spread[t];
      out->neighbors[t] = static_cast<std::uint32_t>(average.neighbors);
    }
    begin = end;
  }
}

std::size_t Model::EvaluatedPrefix(std::size_t grid_size,
                                   std::size_t widest_best) const {
  if (store_.size() < config_.full_grid_below ||
      (config_.full_grid_every != 0 &&
       store_.seen() % config_.full_grid_every == 0)) {
    return grid_size;
  }
  return std::min(grid_size, widest_best + config_.selection_window + 1);
}

double Model::GradientBandwidth() const {
  return config_
      .gradient_bandwidth_grid[gradient_selector_.BestOverall(TargetScales())];
}

void Model::EstimateGradient(std::span<const double> x, LearnScratch& scratch,
                             std::vector<double>* grid_values,
                             GradientEstimate* estimate) {
  const std::size_t m = config_.num_targets();
  const std::shared_ptr<const MetricIndex::Generation> generation =
      gradient_index_->current();
  scratch.z.resize(config_.input_dim);
  generation->transform.Apply(x, scratch.z);
  const std::size_t best = gradient_selector_.BestOverall(TargetScales());
  const double h = config_.gradient_bandwidth_grid[best];
  const double t = config_.step_ratio * h;
  gradient_evaluated_ =
      EvaluatedPrefix(config_.gradient_bandwidth_grid.size(), best);
  const std::span<const double> grid =
      std::span(config_.gradient_bandwidth_grid).first(gradient_evaluated_);
  const double radius = std::max(grid.back(), h + t);
  const std::vector<double> fallback(targets_.mean().begin(),
                                     targets_.mean().end());
  generation->tree.Read([&](const CoverTree& tree) {
    tree.RangeUnordered(scratch.z, radius, &scratch.found).IgnoreError();
    // The bandwidth of f_{n,h} is chosen like the regressor's: every grid
    // value predicts the sample in standardized Euclidean coordinates.
    scratch.near.GatherInShells(
        config_.gradient_bandwidth_grid, &scratch.found,
        [this](std::uint64_t slot) { return store_.y(slot); });
    grid_values->resize(config_.gradient_bandwidth_grid.size() * m);
    KernelAverageGrid(config_.kernel, grid, scratch.near, fallback,
                      *grid_values);
    // Delta_{t,i} f_{n,h} from the samples within h + t (in ShellOrder,
    // so the sums do not depend on the index).
    scratch.estimator.Begin(scratch.z, config_.kernel, h, t);
    for (const Neighbor& neighbor : scratch.found) {
      if (neighbor.distance > h + t) continue;
      scratch.estimator.Add(tree.PointOf(neighbor.id).data(),
                            store_.y(neighbor.id));
    }
    scratch.estimator.Finish(estimate);
  });
}

void Model::Fallback(std::size_t target, Prediction* out) const {
  out->value[target] = targets_.mean()[target];
  out->spread[target] = std::sqrt(targets_.Variance(target));
  out->neighbors[target] = 0;
}

absl::StatusOr<Prediction> Model::Predict(std::span<const double> query) const {
  if (absl::Status status =
          ValidateValues(query, config_.input_dim, "queries[0].x");
      !status.ok()) {
    return status;
  }
  Prediction prediction;
  PredictOne(query, &prediction);
  return prediction;
}

absl::Status Model::Predict(std::span<const std::span<const double>> queries,
                            std::vector<Prediction>* out) const {
  for (std::size_t q = 0; q < queries.size(); ++q) {
    if (absl::Status status = ValidateValues(
            queries[q], config_.input_dim, absl::StrCat("queries[", q, "].x"));
        !status.ok()) {
      return status;
    }
  }
  out->resize(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) {
    PredictOne(queries[q], &(*out)[q]);
  }
  return absl::OkStatus();
}

void Model::PredictOne(std::span<const double> x, Prediction* out) const {
  const std::size_t m = config_.num_targets();
  out->value.assign(m, 0.0);
  out->spread.assign(m, 0.0);
  out->neighbors.assign(m, 0);
  thread_local std::vector<Neighbor> found;
  thread_local NeighborTargets near(0);
  if (near.num_targets() != m) near = NeighborTargets(m);
  std::shared_lock lock(state_lock_);
  for (const PredictionIndex& p : predictions_) {
    PredictFrom(p, *p.index->current(), x, near, found, out);
  }
}

void Model::PredictFrom(const PredictionIndex& p,
                        const MetricIndex::Generation& generation,
                        std::span<const double> x, NeighborTargets& near,
                        std::vector<Neighbor>& found, Prediction* out) const {
  thread_local std::vector<double> z;
  z.resize(config_.input_dim);
  generation.transform.Apply(x, z);
  // One search serves every target: at the widest bandwidth (or largest k)
  // any of them predicts with now.
  std::size_t widest = 0;
  for (std::size_t t : p.targets) widest = std::max(widest, p.selector.Best(t));
  GatherNeighbors(generation, z, widest, &found, &near);
  PredictTargets(p, near, out);
}

std::vector<double> Model::TargetScales() const {
  std::vector<double> scales(config_.num_targets());
  for (std::size_t t = 0; t < scales.size(); ++t) {
    scales[t] = targets_.ScaleOrOne(t);
  }
  return scales;
}

MetricTransform Model::StandardizingTransform() const {
  return MetricTransform::Standardizing(inputs_);
}

MetricTransform Model::PredictionTransform(const PredictionIndex& p) const {
  MetricTransform standardizing = StandardizingTransform();
  if (config_.metric == MetricKind::kEuclidean) return standardizing;
  const LearnedMetric metric =
      EstimateMetric(config_.metric, gradients_, p.metric_target,
                     TargetScales(), /*with_spectrum=*/false);
  std::span<const double> center = standardizing.center();
  std::span<const double> scale = standardizing.scale();
  return TransformFor(metric, {center.begin(), center.end()},
                      {scale.begin(), scale.end()}, config_.egop_ridge);
}

std::uint64_t Model::StartRebuild(MetricIndex& index,
                                  MetricTransform transform) {
  const std::size_t size = store_.size();
  if (size < config_.synchronous_rebuild_below) {
    index.RebuildNow(std::move(transform), size, StoreRows());
    return 0;
  }
  index.BeginRebuild(std::move(transform), size, StoreRows());
  return store_.seen() + RebuildLag(size);
}

GradientRefresh::Job Model::RefreshJob(std::size_t num_slots) const {
  GradientRefresh::Job job{StandardizingTransform()};
  job.kernel = config_.kernel;
  job.bandwidth = GradientBandwidth();
  job.step = config_.step_ratio * job.bandwidth;
  job.num_targets = config_.num_targets();
  job.outer_products = config_.metric == MetricKind::kEgop;
  job.num_slots = num_slots;
  return job;
}

CopySlotRows Model::StoreRows() const {
  return [this](std::size_t begin, std::size_t end, std::vector<double>* x,
                std::vector<double>* y) {
    const std::size_t d = config_.input_dim;
    const std::size_t m = config_.num_targets();
    x->resize((end - begin) * d);
    if (y != nullptr) y->resize((end - begin) * m);
    std::shared_lock lock(state_lock_);
    for (std::size_t slot = begin; slot < end; ++slot) {
      std::copy(store_.x(slot), store_.x(slot) + d,
                x->data() + (slot - begin) * d);
      if (y != nullptr) {
        std::copy(store_.y(slot), store_.y(slot) + m,
                  y->data() + (slot - begin) * m);
      }
    }
  };
}

CopySlotRows Model::SnapshotRows(std::size_t num_slots) const {
  auto x = std::make_shared<std::vector<double>>();
  auto y = std::make_shared<std::vector<double>>();
  StoreRows()(0, num_slots, x.get(), y.get());
  const std::size_t d = config_.input_dim;
  const std::size_t m = config_.num_targets();
  return [x, y, d, m](std::size_t begin, std::size_t end,
                      std::vector<double>* x_out, std::vector<double>* y_out) {
    x_out->assign(x->begin() + begin * d, x->begin() + end * d);
    if (y_out != nullptr) {
      y_out->assign(y->begin() + begin * m, y->begin() + end * m);
    }
  };
}

void Model::InstallRefresh(GradientStatistics batch) {
  std::unique_lock lock(state_lock_);
  gradients_ = std::move(batch);
  gradients_.Merge(since_refresh_);
  since_refresh_.Clear();
  ++metric_refreshes_;
}

void Model::MaintainMetric() {
  constexpr std::size_t kFirstRefresh = 64;
  if (gradient_index_ == nullptr || config_.metric_refresh_growth == 0.0 ||
      config_.metric_forgetting != 1.0) {
    return;
  }
  if (refresh_.running()) {
    if (store_.seen() >= refresh_swap_at_) InstallRefresh(refresh_.Finish());
    return;
  }
  // Small stores (refreshed on this thread, cheaply) refresh four times as
  // often: growth 2 becomes 1.25.
  const std::size_t size = store_.size();
  const bool small = size < config_.synchronous_rebuild_below;
  const double growth = small ? 1.0 + (config_.metric_refresh_growth - 1.0) / 4
                              : config_.metric_refresh_growth;
  if (size < kFirstRefresh ||
      static_cast<double>(size) <
          growth * static_cast<double>(refreshed_size_)) {
    return;
  }
  refreshed_size_ = size;
  if (small) {
    InstallRefresh(GradientRefresh::Run(RefreshJob(size), StoreRows()));
    return;
  }
  // Slots below `size` never change in an unbounded store, so the job may
  // read them while learning goes on; otherwise it gets a copy taken now
  // (either way its result depends only on the samples, as determinism
  // requires).
  refresh_.Start(RefreshJob(size),
                 config_.capacity.policy == CapacityPolicy::kUnbounded
                     ? StoreRows()
                     : SnapshotRows(size));
  refresh_swap_at_ = store_.seen() + RebuildLag(size);
}

std::uint64_t Model::RebuildLag(std::size_t size) const {
  return std::max<std::uint64_t>(
      config_.rebuild_lag,
      static_cast<std::uint64_t>(config_.rebuild_lag_fraction *
                                 static_cast<double>(size)));
}

void Model::MaintainIndexes() {
  MaintainMetric();
  const std::uint64_t seen = store_.seen();
  if (gradient_index_ != nullptr && gradient_index_->rebuilding() &&
      seen >= gradient_swap_at_) {
    gradient_index_->FinishRebuild();
  }
  for (PredictionIndex& p : predictions_) {
    if (p.index->rebuilding() && seen >= p.swap_at) p.index->FinishRebuild();
  }
  if (seen % config_.drift_check_every != 0) return;
  if (gradient_index_ != nullptr && !gradient_index_->rebuilding()) {
    MetricTransform standardizing = StandardizingTransform();
    if (gradient_index_->transform().RelativeChange(standardizing) >
        config_.drift_tolerance) {
      gradient_swap_at_ =
          StartRebuild(*gradient_index_, std::move(standardizing));
    }
  }
  for (PredictionIndex& p : predictions_) {
    if (p.index->rebuilding()) continue;
    MetricTransform transform = PredictionTransform(p);
    if (p.index->transform().RelativeChange(transform) >
        config_.drift_tolerance) {
      p.swap_at = StartRebuild(*p.index, std::move(transform));
    }
  }
}

void Model::FinishRebuilds() {
  std::lock_guard writer(writer_);
  if (refresh_.running()) InstallRefresh(refresh_.Finish());
  if (gradient_index_ != nullptr) gradient_index_->FinishRebuild();
  for (PredictionIndex& p : predictions_) p.index->FinishRebuild();
}

std::vector<MetricIndex*> Model::AllIndexes() {
  std::vector<MetricIndex*> all;
  if (gradient_index_ != nullptr) all.push_back(gradient_index_.get());
  for (PredictionIndex& p : predictions_) all.push_back(p.index.get());
  return all;
}

absl::Status Model::Refit(
    const std::function<void(std::size_t, std::size_t)>& progress) {
  std::lock_guard writer(writer_);
  if (gradient_index_ == nullptr) {
    if (progress) progress(0, 0);
    return absl::OkStatus();
  }
  // A growth refresh in flight is superseded.
  if (refresh_.running()) (void)refresh_.Finish();
  since_refresh_.Clear();
  const std::size_t size = store_.size();
  refreshed_size_ = size;
  InstallRefresh(GradientRefresh::Run(RefreshJob(size), StoreRows(), progress));
  gradient_index_->RebuildNow(StandardizingTransform(), size, StoreRows());
  for (PredictionIndex& p : predictions_) {
    p.index->RebuildNow(PredictionTransform(p), size, StoreRows());
  }
  return absl::OkStatus();
}

std::uint64_t Model::samples_seen() const {
  std::shared_lock lock(state_lock_);
  return store_.seen();
}

std::size_t Model::samples_stored() const {
  std::shared_lock lock(state_lock_);
  return store_.size();
}

ModelStats Model::stats() const {
  std::shared_lock lock(state_lock_);
  const std::size_t m = config_.num_targets();
  ModelStats stats;
  stats.samples_seen = store_.seen();
  stats.samples_stored = store_.size();
  stats.bandwidth.assign(m, 0.0);
  stats.k.assign(m, 0);
  for (std::size_t t = 0; t < m; ++t) {
    stats.prequential_nmse.push_back(score_.Nmse(t));
    stats.prequential_mse.push_back(score_.MeanSquaredError(t));
  }
  for (const PredictionIndex& p : predictions_) {
    for (std::size_t t : p.targets) {
      const std::size_t best = p.selector.Best(t);
      if (config_.regressor == RegressorKind::kKernel) {
        stats.bandwidth[t] = config_.bandwidth_grid[best];
      } else {
        stats.k[t] = static_cast<std::uint32_t>(config_.k_grid[best]);
      }
    }
    stats.index_rebuilds += p.index->generation();
    stats.rebuild_waits += p.index->waits();
    AddBuildTime(p.index->build_time(), &stats);
    stats.rebuild_in_progress |= p.index->rebuilding();
    stats.memory_bytes += p.index->MemoryUsage();
  }
  if (gradient_index_ != nullptr) {
    stats.gradient_bandwidth = GradientBandwidth();
    stats.gradient_step = config_.step_ratio * stats.gradient_bandwidth;
    stats.gradient_samples = gradients_.count();
    stats.index_rebuilds += gradient_index_->generation();
    stats.rebuild_waits += gradient_index_->waits();
    AddBuildTime(gradient_index_->build_time(), &stats);
    stats.rebuild_in_progress |= gradient_index_->rebuilding();
    stats.memory_bytes += gradient_index_->MemoryUsage();
  }
  stats.memory_bytes += store_.MemoryUsage();
  stats.metric_refreshes = metric_refreshes_;
  stats.rebuild_in_progress |= refresh_.running();
  return stats;
}

MetricReport Model::metric() const {
  std::shared_lock lock(state_lock_);
  MetricReport report;
  report.kind = config_.metric;
  report.per_target = predictions_.size() > 1;
  const std::vector<double> scales = TargetScales();
  for (const PredictionIndex& p : predictions_) {
    report.metrics.push_back(
        EstimateMetric(config_.metric, gradients_, p.metric_target, scales));
    report.in_use.push_back(p.index->current()->transform);
  }
  report.gradient_samples = gradients_.count();
  return report;
}

}  // namespace streamreg
