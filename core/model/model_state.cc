#include "core/model/model_state.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/metric/learned_metric.h"
#include "core/model/prediction.h"

namespace streamreg {
namespace {

bool LearnsMetric(const ModelConfig& config) {
  return config.metric != MetricKind::kEuclidean;
}

// The intervals' calibration settings: the config's.
AdaptiveConformal::Options IntervalOptions(const ModelConfig& config) {
  return {.level = config.interval_level,
          .window = config.interval_window,
          .step = config.interval_step};
}

// One shared index, one per target for per-target metrics, or one shared
// index per candidate metric (kAuto); each starts in the coordinates
// `identity`.
std::vector<PredictionIndex> MakePredictionIndexes(
    const ModelConfig& config, const MetricTransform& identity,
    const MetricIndex::RowReferences& references) {
  const std::size_t m = config.num_targets();
  std::vector<PredictionIndex> indexes;
  auto add = [&](MetricKind metric, std::vector<std::size_t> targets,
                 std::size_t metric_target) {
    indexes.push_back(
        PredictionIndex{std::make_unique<MetricIndex>(identity, references),
                        metric, std::move(targets), metric_target});
  };
  if (LearnsMetric(config) && config.per_target_metric) {
    for (std::size_t t = 0; t < m; ++t) add(config.metric, {t}, t);
    return indexes;
  }
  std::vector<std::size_t> all(m);
  for (std::size_t t = 0; t < m; ++t) all[t] = t;
  for (MetricKind metric : config.Candidates()) {
    add(metric, all, kAllTargets);
  }
  return indexes;
}

// Indexes may reference the stored rows where the store only appends.
MetricIndex::RowReferences RowReferencesFor(const ModelConfig& config,
                                            const ModelState& state) {
  if (config.capacity.policy != CapacityPolicy::kUnbounded) return {};
  return {state.StoreRowPointers(), config.reference_rows_from};
}

}  // namespace

ModelState::ModelState(const ModelConfig& config)
    : config(config),
      store(config.input_dim, config.num_targets(), config.capacity,
            config.seed),
      inputs(config.input_dim),
      targets(config.num_targets()),
      gradients(config.input_dim, config.num_targets(),
                KeepsOuterProducts(config.metric)),
      gradient_selector(config.gradient_bandwidth_grid.size(),
                        config.num_targets(), config.selection_forgetting),
      score(config.num_targets(), config.selection_forgetting),
      honest_score(config.num_targets(), config.selection_forgetting),
      recent(config.EffectiveHonestLag()),
      interval_recent(config.EffectiveIntervalLag(),
                      config.interval_lag_divisor),
      intervals(config.num_targets(), IntervalOptions(config)),
      answer_intervals(config.num_targets(), IntervalOptions(config)),
      recalibration(config.num_targets(), IntervalOptions(config),
                    config.capacity.policy == CapacityPolicy::kUnbounded
                        ? config.interval_recalibration
                        : 0),
      difficulty(config.num_targets(), kDifficultyFeatures,
                 static_cast<double>(config.interval_window)),
      since_refresh(config.input_dim, config.num_targets(),
                    KeepsOuterProducts(config.metric)),
      gradient_index(EstimatesGradients(config.metric)
                         ? std::make_unique<MetricIndex>(
                               MetricTransform::Standardizing(inputs),
                               RowReferencesFor(config, *this))
                         : nullptr),
      predictions(MakePredictionIndexes(config,
                                        MetricTransform::Standardizing(inputs),
                                        RowReferencesFor(config, *this))) {
  selectors.assign(
      predictions.size(),
      PrequentialSelector(config.GridSize(),
                          config.num_targets() * NumScoredVariants(config),
                          config.selection_forgetting));
  if (config.combine) {
    combinations.assign(
        predictions.size(),
        CandidateAggregation(config.num_targets(), NumCandidates(config),
                             config.combination_recency));
    answer_combinations = combinations;
  }
  take_over.prediction_indexes.assign(predictions.size(), 0);
  mlkr_maps.resize(predictions.size());
  if (config.KeepsRidge()) {
    // GLML's Gaussian (no linear base) keeps the ridge it was measured with.
    base.emplace(config.input_dim, config.num_targets(), config.base_ridge,
                 config.base_forgetting,
                 config.linear_base ? config.base_relative_ridge : 0.0);
  }
  if (config.random_feature_base) {
    random_base.emplace(
        MetricTransform::Standardizing(inputs),
        RandomFeatureRidge(config.input_dim, config.num_targets(),
                           RandomFeatureOptions(config)));
  }
}

RandomFeatureRidge::Options RandomFeatureOptions(const ModelConfig& config) {
  const double root_d = std::sqrt(static_cast<double>(config.input_dim));
  const std::vector<double>& lengthscales = config.random_feature_lengthscales;
  return {.num_frequencies = config.random_feature_frequencies,
          .lengthscale = root_d * lengthscales[lengthscales.size() / 2],
          .ridge = config.random_feature_ridges.back(),
          .linear_ridge = 1.0,
          .intercept_ridge = 1e-6,
          .forgetting = config.base_forgetting,
          .seed = config.seed};
}

RandomFeatureRefresh::Job RandomFeatureJob(const ModelConfig& config,
                                           MetricTransform transform,
                                           std::size_t num_slots) {
  const double root_d = std::sqrt(static_cast<double>(config.input_dim));
  RandomFeatureRefresh::Job job{.transform = std::move(transform),
                                .num_targets = config.num_targets(),
                                .options = RandomFeatureOptions(config),
                                .num_slots = num_slots};
  for (double lengthscale : config.random_feature_lengthscales) {
    job.lengthscales.push_back(root_d * lengthscale);
  }
  job.ridges = config.random_feature_ridges;
  return job;
}

MetricTransform ModelState::StandardizingTransform() const {
  return MetricTransform::Standardizing(inputs);
}

MetricTransform ModelState::PredictionTransform(std::size_t i) const {
  MetricTransform standardizing = StandardizingTransform();
  const PredictionIndex& prediction = predictions[i];
  // GLML's metric is per query (GlmlMetric), in standardized coordinates.
  if (prediction.metric == MetricKind::kEuclidean ||
      prediction.metric == MetricKind::kGlml) {
    return standardizing;
  }
  std::span<const double> center = standardizing.center();
  std::span<const double> scale = standardizing.scale();
  if (prediction.metric == MetricKind::kMlkr) {
    // A itself, normalized and without a ridge: a low rank stays low.
    return TransformFor(mlkr_maps[i].Metric(config.input_dim, false),
                        {center.begin(), center.end()},
                        {scale.begin(), scale.end()}, 0.0);
  }
  const LearnedMetric metric =
      EstimateMetric(prediction.metric, gradients, prediction.metric_target,
                     TargetScales(), /*with_spectrum=*/false);
  return TransformFor(metric, {center.begin(), center.end()},
                      {scale.begin(), scale.end()}, config.egop_ridge);
}

std::vector<double> ModelState::TargetScales() const {
  std::vector<double> scales(config.num_targets());
  for (std::size_t t = 0; t < scales.size(); ++t) {
    scales[t] = targets.ScaleOrOne(t);
  }
  return scales;
}

double ModelState::GradientBandwidth() const {
  return config
      .gradient_bandwidth_grid[gradient_selector.BestOverall(TargetScales())];
}

CopySlotRows ModelState::StoreRows() const {
  return [this](std::size_t begin, std::size_t end, std::vector<double>* x,
                std::vector<double>* y) {
    const std::size_t d = config.input_dim;
    const std::size_t m = config.num_targets();
    x->resize((end - begin) * d);
    if (y != nullptr) y->resize((end - begin) * m);
    SharedLock shared(lock);
    for (std::size_t slot = begin; slot < end; ++slot) {
      std::copy(store.x(slot), store.x(slot) + d,
                x->data() + (slot - begin) * d);
      if (y != nullptr) {
        std::copy(store.y(slot), store.y(slot) + m,
                  y->data() + (slot - begin) * m);
      }
    }
  };
}

SlotRowPointers ModelState::StoreRowPointers() const {
  return [this](std::size_t begin, std::size_t end,
                std::vector<const double*>* x, std::vector<const double*>* y) {
    SharedLock shared(lock);
    for (std::size_t slot = begin; slot < end; ++slot) {
      x->push_back(store.x(slot));
      if (y != nullptr) y->push_back(store.y(slot));
    }
  };
}

GradientRefresh::Rows ModelState::RefreshRows(std::size_t num_slots) const {
  if (config.capacity.policy != CapacityPolicy::kUnbounded) {
    return {SnapshotRows(num_slots), nullptr};
  }
  if (num_slots < config.reference_rows_from) return {StoreRows(), nullptr};
  return {StoreRows(), StoreRowPointers()};
}

CopySlotRows ModelState::SnapshotRows(std::size_t num_slots) const {
  auto x = std::make_shared<std::vector<double>>();
  auto y = std::make_shared<std::vector<double>>();
  StoreRows()(0, num_slots, x.get(), y.get());
  const std::size_t d = config.input_dim;
  const std::size_t m = config.num_targets();
  return [x, y, d, m](std::size_t begin, std::size_t end,
                      std::vector<double>* x_out, std::vector<double>* y_out) {
    x_out->assign(x->begin() + begin * d, x->begin() + end * d);
    if (y_out != nullptr) {
      y_out->assign(y->begin() + begin * m, y->begin() + end * m);
    }
  };
}

std::vector<MetricIndex*> ModelState::AllIndexes() const {
  std::vector<MetricIndex*> all;
  if (gradient_index != nullptr) all.push_back(gradient_index.get());
  for (const PredictionIndex& p : predictions) all.push_back(p.index.get());
  return all;
}

absl::Status ModelState::IndexFailure() const {
  for (const MetricIndex* index : AllIndexes()) {
    if (absl::Status status = index->failure(); !status.ok()) return status;
  }
  return absl::OkStatus();
}

void ModelState::BeginSettling() {
  settling_since = PauseStatistics::Clock::now();
  settling.store(true, std::memory_order_relaxed);
}

void ModelState::Settle() {
  if (!settling.load(std::memory_order_relaxed)) return;
  settle_windows.RecordSince(settling_since);
  {
    MutexLock lock(&settle_mutex);
    settling.store(false, std::memory_order_release);
  }
  settled.SignalAll();
}

void ModelState::WaitUntilSettled() const {
  const PauseStatistics::Clock::time_point start =
      PauseStatistics::Clock::now();
  {
    MutexLock lock(&settle_mutex);
    while (settling.load(std::memory_order_acquire)) {
      settled.Wait(&settle_mutex);
    }
  }
  prediction_waits.RecordSince(start);
}

}  // namespace streamreg
