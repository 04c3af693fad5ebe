#include "core/model/model_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "core/index/search_rules.h"
#include "core/metric/glml_search.h"
#include "core/model/combined_prediction.h"
#include "core/regression/local_linear.h"

namespace streamreg {
namespace {

// The k nearest (`found`) and the k nearest that are not recent
// (older->found), in one traversal: first capped (SearchWithCaps) at twice
// the distance the k-th older neighbour of recent samples had or nearer, at
// the reach of a recent search near z (a stream's last sample), and again
// uncapped if that was too small (on a trajectory every near sample is
// recent, and an uncapped bound stays infinite until k older ones are
// found).
// Under GLML's metric at the query with `metric` (distances, cap and
// estimate then in its units).
// `recent_run`: slots is_recent names, all of them (LeftOutSlots::run).
template <class IsRecent>
void SplitKnn(const CoverTree& tree, std::span<const double> z, std::size_t k,
              const IsRecent& is_recent, IdRange recent_run,
              const GlmlMetric* metric, std::vector<Neighbor>* found,
              OlderNeighbors* older) {
  const auto search = [&](auto& rules) {
    if (metric == nullptr) {
      tree.Search(z.data(), rules);
    } else {
      SearchUnderGlml(tree, z, *metric, rules);
    }
    rules.Finish();
  };
  // Under GLML's metric a query's distances are its own: no other query's
  // answer bounds them.
  const std::uintptr_t source = reinterpret_cast<std::uintptr_t>(&tree);
  const double reach = metric == nullptr
                           ? older->answers.Cap(z, k, source)
                           : std::numeric_limits<double>::infinity();
  const bool held =
      SearchWithCaps(older->radius.Cap(k), reach, [&](double cap) {
        SplitKnnRules capped(k, found, &older->found, is_recent, cap,
                             recent_run);
        search(capped);
        return capped.KeptCapHeld();
      });
  if (!held) {
    SplitKnnRules rules(k, found, &older->found, is_recent,
                        std::numeric_limits<double>::infinity(), recent_run);
    search(rules);
  }
  if (older->found.size() == k) {
    const double kth = older->found.back().distance;
    older->radius.Record(k, kth);
    if (metric == nullptr) older->answers.Record(z, k, kth, source);
  }
}

// The weights a query's combination is made with, and, where its
// intervals' difficulty reads them, its candidates' values into `buffer`.
CombinedOptions QueryCombination(const ModelState& state,
                                 IntervalCalibration calibration,
                                 std::vector<double>* buffer) {
  CombinedOptions combined = CombinedOptions::WeighedFor(calibration);
  if (state.config.combine && state.config.interval_difficulty) {
    buffer->resize(state.config.num_targets() * NumCandidates(state.config));
    combined.candidates = *buffer;
  }
  return combined;
}

// What every search of one query shares.
struct QueryContext {
  std::span<const std::size_t> chosen;  // ChosenIndexes
  std::span<const double> base;         // BaseValues at the query
  std::span<const double> base_variance;
  const PredictOptions& options;
  OlderNeighbors* older;  // null: every sample may be a neighbour
};

// `out` emptied for a query's m targets.
void ResetPrediction(const ModelState& state, const PredictOptions& options,
                     Prediction* out) {
  const std::size_t m = state.config.num_targets();
  out->value.assign(m, 0.0);
  out->spread.assign(m, 0.0);
  out->neighbors.assign(m, 0);
  out->difficulty.assign(
      state.config.interval_difficulty ? m * kDifficultyFeatures : 0,
      std::numeric_limits<double>::infinity());
  out->used.resize(options.with_neighbors ? m : 0);
  for (std::vector<UsedNeighbor>& used : out->used) used.clear();
}

// One search's predictions: those of the targets that predict from index
// `index` (only_target's alone, if set), from the neighbours of z at grid
// value `grid` (under GLML's `metric` at the query, if given).
void PredictFromSearch(const ModelState& state, std::size_t index,
                       const MetricIndex::Generation& generation,
                       std::span<const double> z, std::size_t grid,
                       const GlmlMetric* metric,
                       std::optional<std::size_t> only_target,
                       const QueryContext& query, Prediction* out)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock) {
  thread_local std::vector<Neighbor> found;
  thread_local NeighborTargets near(0);
  thread_local std::vector<double> candidates;
  const std::size_t columns = state.config.NeighborColumns();
  if (near.num_targets() != columns) near = NeighborTargets(columns);
  GatherNeighbors(state, generation, z, grid, &found, &near, query.older,
                  metric);
  const NeighborTargets& used =
      query.older != nullptr ? query.older->near : near;
  const CombinedOptions combined =
      QueryCombination(state, query.options.calibration, &candidates);
  PredictTargets(state, index, query.chosen, used, query.base, out, only_target,
                 combined);
  SetDifficulty(state, index, query.chosen, used, query.base_variance,
                combined.candidates, only_target, out);
  if (query.options.with_neighbors) {
    RecordUsedNeighbors(state, index, query.chosen,
                        query.older != nullptr ? query.older->found : found,
                        out, only_target);
  }
}

// Every target's prediction at raw x, its intervals aside. One search per
// index serves every target that predicts from it, at the widest
// bandwidth (or largest k) any of them predicts with now; an index no
// target predicts from now is not searched. GLML: a search per target,
// under that target's metric at x, at its own choice.
void PredictEveryTarget(const ModelState& state, std::span<const double> x,
                        const QueryContext& query, Prediction* out)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock) {
  thread_local std::vector<double> z;
  thread_local std::vector<double> direction;
  z.resize(state.config.input_dim);
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    const std::optional<std::size_t> widest =
        WidestChoice(state, i, query.chosen);
    if (!widest.has_value()) continue;
    const std::shared_ptr<const MetricIndex::Generation> generation =
        state.predictions[i].index->current();
    generation->transform.Apply(x, z);
    if (state.predictions[i].metric != MetricKind::kGlml) {
      PredictFromSearch(state, i, *generation, z, *widest, nullptr,
                        std::nullopt, query, out);
      continue;
    }
    GlmlDensityDirection(state, x, &direction);
    for (std::size_t t : state.predictions[i].targets) {
      if (query.chosen[t] != i) continue;
      const GlmlMetric metric = GlmlMetricFor(state, *generation, direction, t);
      PredictFromSearch(state, i, *generation, z, WidestFor(state, i, t),
                        &metric, t, query, out);
    }
  }
}

}  // namespace

void PredictWithModel(const ModelState& state, std::span<const double> x,
                      Prediction* out, const PredictOptions& options) {
  ResetPrediction(state, options, out);
  thread_local std::vector<double> base;
  thread_local std::vector<std::size_t> chosen;
  while (true) {
    {
      SharedLock lock(state.lock);
      // Between a sample's storage and its refresh schedule the model is
      // not the model of any whole number of samples: wait that out.
      if (!state.settling.load(std::memory_order_acquire)) {
        out->learned = state.store.seen();
        BaseValues(state, x, &base, &out->base_variance);
        ChosenIndexes(state, &chosen);
        PredictEveryTarget(state, x,
                           {.chosen = chosen,
                            .base = base,
                            .base_variance = out->base_variance,
                            .options = options,
                            .older = nullptr},
                           out);
        SetIntervals(state, options, out);
        return;
      }
    }
    state.WaitUntilSettled();
  }
}

void PredictLeavingOut(const ModelState& state, std::span<const double> x,
                       std::span<const double> base,
                       std::span<const double> base_variance,
                       OlderNeighbors* older, Prediction* out) {
  const PredictOptions options;  // a query's, without its neighbours
  ResetPrediction(state, options, out);
  thread_local std::vector<std::size_t> chosen;
  out->learned = state.store.seen();
  ChosenIndexes(state, &chosen);
  PredictEveryTarget(state, x,
                     {.chosen = chosen,
                      .base = base,
                      .base_variance = base_variance,
                      .options = options,
                      .older = older},
                     out);
}

void GlmlDensityDirection(const ModelState& state, std::span<const double> x,
                          std::vector<double>* out) {
  out->resize(state.config.input_dim);
  state.base->DensityDirection(x, *out);
}

GlmlMetric GlmlMetricFor(const ModelState& state,
                         const MetricIndex::Generation& generation,
                         std::span<const double> density_direction,
                         std::size_t target) {
  return GlmlMetricScaled(*state.base, density_direction,
                          generation.transform.scale(), target,
                          state.config.glml_gamma_ratio);
}

void RecordUsedNeighbors(const ModelState& state, std::size_t index,
                         std::span<const std::size_t> chosen,
                         std::span<const Neighbor> found, Prediction* out,
                         std::optional<std::size_t> only_target) {
  const SampleStore& store = state.store;
  for (std::size_t t : state.predictions[index].targets) {
    if (!PredictsFrom(chosen, index, t, only_target)) {
      continue;
    }
    // A kernel's neighbours within its bandwidth are a prefix of the search
    // in ShellOrder, a k-NN's the first k: either way the first
    // out->neighbors[t] (NeighborTargets).
    const std::span<const Neighbor> used = found.first(out->neighbors[t]);
    std::vector<UsedNeighbor>& listed = out->used[t];
    listed.clear();
    for (const Neighbor& neighbor : used) {
      const double* x = store.x(neighbor.id);
      listed.push_back({store.sample_id(neighbor.id), neighbor.distance,
                        std::vector<double>(x, x + store.dim()),
                        store.y(neighbor.id)[t]});
    }
    std::stable_sort(listed.begin(), listed.end(),
                     [](const UsedNeighbor& a, const UsedNeighbor& b) {
                       return a.distance < b.distance;
                     });
  }
}

double IntervalScale(const ModelState& state, std::size_t t,
                     IntervalCalibration calibration) {
  const PrequentialScore& errors = calibration == IntervalCalibration::kQuery
                                       ? state.honest_score
                                       : state.score;
  const double rms = std::sqrt(errors.MeanSquaredError(t));
  return rms > 0.0 ? rms : 1.0;
}

double QueryIntervalScore(const ModelState& state, std::size_t t, double y,
                          const Prediction& prediction) {
  const double error = std::abs(y - prediction.value[t]);
  return error / (IntervalScale(state, t, IntervalCalibration::kQuery) *
                  RelativeDifficulty(state, t, IntervalCalibration::kQuery,
                                     prediction));
}

double RelativeDifficulty(const ModelState& state, std::size_t t,
                          IntervalCalibration calibration,
                          const Prediction& prediction) {
  if (calibration != IntervalCalibration::kQuery ||
      !state.config.interval_difficulty) {
    return 1.0;
  }
  return state.difficulty.Relative(
      t, std::span(prediction.difficulty)
             .subspan(t * kDifficultyFeatures, kDifficultyFeatures));
}

void SetDifficulty(const ModelState& state, std::size_t index,
                   std::span<const std::size_t> chosen,
                   const NeighborTargets& near,
                   std::span<const double> base_variance,
                   std::span<const double> candidates,
                   std::optional<std::size_t> only_target, Prediction* out) {
  const ModelConfig& config = state.config;
  if (!config.interval_difficulty) return;
  const std::size_t n = NumCandidates(config);
  for (std::size_t t : state.predictions[index].targets) {
    if (!PredictsFrom(chosen, index, t, only_target)) continue;
    double* features = out->difficulty.data() + t * kDifficultyFeatures;
    // The neighbours the target's choice averages over: its k nearest, or
    // those within its bandwidth (in ShellOrder, a prefix all the same).
    const RegressorChoice choice = ChoiceOf(state, index, t);
    const std::size_t used =
        ChoosesK(choice.regressor)
            ? std::min(config.KAt(choice.grid), near.size())
            : near.PrefixWithin(config.bandwidth_grid[choice.grid]);
    features[0] = near.MeanDistance(used);
    features[1] = base_variance.empty() ? 1.0 : base_variance[t];
    features[2] = 1.0;
    if (!candidates.empty()) {
      double squares = 0.0;
      for (double value : candidates.subspan(t * n, n)) {
        squares += (value - out->value[t]) * (value - out->value[t]);
      }
      features[2] = std::sqrt(squares / static_cast<double>(n));
    }
  }
}

const AdaptiveConformal& IntervalCalibrationOf(
    const ModelState& state, IntervalCalibration calibration) {
  if (calibration == IntervalCalibration::kNextSample) {
    return state.answer_intervals;
  }
  return state.recalibration.exchangeable() ? state.recalibration.intervals()
                                            : state.intervals;
}

void SetIntervals(const ModelState& state, const PredictOptions& options,
                  Prediction* out) {
  const AdaptiveConformal& calibrated =
      IntervalCalibrationOf(state, options.calibration);
  const std::size_t m = out->value.size();
  out->lower.resize(m);
  out->upper.resize(m);
  for (std::size_t t = 0; t < m; ++t) {
    const double half = calibrated.Multiplier(t, options.interval_level) *
                        IntervalScale(state, t, options.calibration) *
                        RelativeDifficulty(state, t, options.calibration, *out);
    out->lower[t] = out->value[t] - half;
    out->upper[t] = out->value[t] + half;
  }
}

void BaseValues(const ModelState& state, std::span<const double> x,
                std::vector<double>* out, std::vector<double>* variance) {
  if (variance != nullptr) variance->clear();
  if (!state.config.linear_base) {
    out->clear();
    return;
  }
  out->resize(state.config.num_targets());
  if (state.random_base.has_value()) {
    if (variance != nullptr) variance->resize(out->size());
    state.random_base->Predict(x, *out,
                               variance != nullptr
                                   ? std::span<double>(*variance)
                                   : std::span<double>());
  } else {
    state.base->Predict(x, *out);
  }
}

RegressorChoice ChoiceOf(const ModelState& state, std::size_t index,
                         std::size_t target) {
  const PrequentialSelector& selector = state.selectors[index];
  const ModelConfig& config = state.config;
  const std::size_t m = config.num_targets();
  RegressorChoice choice;
  for (std::size_t s = 0; s < NumScoredVariants(config); ++s) {
    const std::size_t scored = s * m + target;
    const std::size_t best = selector.Best(scored);
    const double error = selector.MeanSquaredError(best, scored);
    if (s == 0 || error < choice.error) {
      const ScoredVariant variant = ScoredVariantAt(config, s);
      choice = {variant.regressor, best, error, s, variant.with_base};
    }
  }
  return choice;
}

void ChosenIndexes(const ModelState& state, std::vector<std::size_t>* chosen) {
  const std::size_t m = state.config.num_targets();
  const std::vector<PredictionIndex>& predictions = state.predictions;
  chosen->assign(m, 0);
  if (state.config.metric != MetricKind::kAuto) {
    // Each target is scored by one index.
    for (std::size_t i = 0; i < predictions.size(); ++i) {
      for (std::size_t t : predictions[i].targets) (*chosen)[t] = i;
    }
    return;
  }
  // Every index scores every target.
  for (std::size_t t = 0; t < m; ++t) {
    double least = ChoiceOf(state, 0, t).error;
    for (std::size_t i = 1; i < predictions.size(); ++i) {
      const double error = ChoiceOf(state, i, t).error;
      if (error < least) {
        least = error;
        (*chosen)[t] = i;
      }
    }
  }
}

std::size_t WidestFor(const ModelState& state, std::size_t index,
                      std::size_t target) {
  if (!state.config.combine) return ChoiceOf(state, index, target).grid;
  // Every variant predicts.
  const std::size_t m = state.config.num_targets();
  std::size_t widest = 0;
  for (std::size_t s = 0; s < NumScoredVariants(state.config); ++s) {
    widest = std::max(widest, state.selectors[index].Best(s * m + target));
  }
  return widest;
}

std::optional<std::size_t> WidestChoice(const ModelState& state,
                                        std::size_t index,
                                        std::span<const std::size_t> chosen) {
  std::optional<std::size_t> widest;
  for (std::size_t t : state.predictions[index].targets) {
    if (chosen[t] != index) continue;
    widest = std::max(widest.value_or(0), WidestFor(state, index, t));
  }
  return widest;
}

std::size_t WidestScored(const ModelState& state, std::size_t index) {
  const std::size_t m = state.config.num_targets();
  std::size_t widest = 0;
  for (std::size_t s = 0; s < NumScoredVariants(state.config); ++s) {
    for (std::size_t t : state.predictions[index].targets) {
      widest = std::max(widest, state.selectors[index].Best(s * m + t));
    }
  }
  return widest;
}

void GatherNeighbors(const ModelState& state,
                     const MetricIndex::Generation& generation,
                     std::span<const double> z, std::size_t grid_index,
                     std::vector<Neighbor>* found, NeighborTargets* near,
                     OlderNeighbors* older, const GlmlMetric* metric) {
  const ModelConfig& config = state.config;
  // Called with the lock held shared (the analysis cannot see into a
  // lambda, hence the pointers).
  const SampleStore* store = &state.store;
  const LeftOutSlots* left_out = older != nullptr ? &older->left_out : nullptr;
  const OnlineRidge* base =
      state.base.has_value() && config.linear_base ? &*state.base : nullptr;
  const RandomFeatureBase* random_base =
      state.random_base.has_value() ? &*state.random_base : nullptr;
  const bool raw_too = config.per_target_base;
  const std::size_t m = config.num_targets();
  thread_local std::vector<double> residual;
  residual.resize(config.NeighborColumns());
  const auto targets = [store, base, random_base, raw_too,
                        m](std::uint64_t slot) -> const double* {
    if (random_base != nullptr) {
      // Cached: a random-feature evaluation per neighbour would cost more
      // than the search.
      const std::span<const double> cached = random_base->residual(slot);
      if (!raw_too) return cached.data();
      std::copy(cached.begin(), cached.end(), residual.begin());
      std::copy(store->y(slot), store->y(slot) + m, residual.begin() + m);
      return residual.data();
    }
    if (base == nullptr) return store->y(slot);
    const double* y = store->y(slot);
    base->Residual({store->x(slot), store->dim()}, {y, m},
                   std::span(residual).first(m));
    // per_target_base: the raw targets after the residuals.
    if (raw_too) std::copy(y, y + m, residual.begin() + m);
    return residual.data();
  };
  const auto is_recent = [left_out](std::uint64_t slot) {
    return left_out->Contains(slot);
  };
  if (config.regressor == RegressorKind::kKernel) {
    const double bandwidth = config.bandwidth_grid[grid_index];
    if (metric == nullptr) {
      generation.tree.RangeUnordered(z, bandwidth, found).IgnoreError();
    } else {
      generation.tree.Read([&](const CoverTree& tree) {
        GlmlRange(tree, z, *metric, bandwidth, found).IgnoreError();
      });
    }
    if (older != nullptr) {
      older->found.clear();
      for (const Neighbor& neighbor : *found) {
        if (!is_recent(neighbor.id)) older->found.push_back(neighbor);
      }
      older->near.GatherInShells(config.bandwidth_grid, &older->found, targets);
    }
    near->GatherInShells(config.bandwidth_grid, found, targets);
    return;
  }
  const std::size_t k = config.KAt(grid_index);
  generation.tree.Read([&](const CoverTree& tree) {
    if (older != nullptr) {
      SplitKnn(tree, z, k, is_recent, left_out->run(), metric, found, older);
    } else if (metric != nullptr) {
      GlmlKnn(tree, z, *metric, k, found).IgnoreError();
    } else {
      tree.Knn(z, k, found).IgnoreError();
    }
    // Local linear: the neighbours' coordinates, read from the same tree.
    thread_local std::vector<double> point;
    point.resize(z.size());
    const auto point_of = [&](std::uint64_t id) {
      return tree.PointOf(id, point.data()).data();
    };
    if (config.regressor == RegressorKind::kNearest) {
      near->Gather(*found, targets);
    } else {
      near->GatherWithOffsets(*found, z, targets, point_of);
    }
    // The older neighbours are the nearest but for the recent ones: each
    // shared neighbour's base residual and offset computed once.
    if (older != nullptr) {
      older->near.GatherSharing(older->found, *near, *found, z, targets,
                                point_of);
    }
  });
}

FallbackValue FallbackOf(const ModelState& state, std::size_t target,
                         std::span<const double> base) {
  if (base.empty()) {
    return {state.targets.mean()[target],
            std::sqrt(state.targets.Variance(target))};
  }
  return {base[target], state.random_base.has_value()
                            ? state.random_base->ResidualScale(target)
                            : state.base->ResidualScale(target)};
}

void AverageAt(const ModelConfig& config, RegressorKind regressor,
               std::size_t grid, const NeighborTargets& near, LocalAverage* out,
               std::span<const std::size_t> columns) {
  switch (regressor) {
    case RegressorKind::kKernel:
      KernelAverageAt(config.kernel, config.bandwidth_grid[grid], near, out,
                      columns);
      break;
    case RegressorKind::kNearest:
      NearestAverageAt(config.KAt(grid), near, out, columns);
      break;
    case RegressorKind::kLocalLinear:
    case RegressorKind::kAuto:  // never a target's choice (ChoiceOf)
      LocalLinearAt(config.FitAt(grid), config.local_linear_ridge, near, out,
                    columns);
      break;
  }
}

void PredictTargets(const ModelState& state, std::size_t index,
                    std::span<const std::size_t> chosen,
                    const NeighborTargets& near, std::span<const double> base,
                    Prediction* out, std::optional<std::size_t> only_target,
                    const CombinedOptions& combined) {
  const ModelConfig& config = state.config;
  if (config.combine) {
    PredictCombined(state, index, chosen, near, base, out, only_target,
                    combined);
    return;
  }
  // Targets grouped by their choice: one average (or fit) per distinct
  // regressor, grid value and variant, each over its own columns only (a
  // target without the base reads its raw column, m further).
  const std::size_t m = config.num_targets();
  thread_local std::vector<
      std::tuple<RegressorKind, std::size_t, bool, std::size_t>>
      by_choice;
  thread_local std::vector<std::size_t> group;
  by_choice.clear();
  for (std::size_t t : state.predictions[index].targets) {
    if (!PredictsFrom(chosen, index, t, only_target)) {
      continue;
    }
    const RegressorChoice choice = ChoiceOf(state, index, t);
    by_choice.push_back(
        {choice.regressor, choice.grid, choice.with_base,
         ScoredVariantAt(config, choice.variant).first_column + t});
  }
  std::sort(by_choice.begin(), by_choice.end());
  LocalAverage average;
  for (std::size_t begin = 0; begin < by_choice.size();) {
    const RegressorKind regressor = std::get<0>(by_choice[begin]);
    const std::size_t best = std::get<1>(by_choice[begin]);
    const bool with_base = std::get<2>(by_choice[begin]);
    group.clear();
    std::size_t end = begin;
    for (; end < by_choice.size() && std::get<0>(by_choice[end]) == regressor &&
           std::get<1>(by_choice[end]) == best &&
           std::get<2>(by_choice[end]) == with_base;
         ++end) {
      group.push_back(std::get<3>(by_choice[end]));
    }
    AverageAt(config, regressor, best, near, &average, group);
    const std::span<const double> added =
        with_base ? base : std::span<const double>();
    for (std::size_t column : group) {
      const std::size_t t = column % m;
      if (average.neighbors == 0) {
        const FallbackValue fallback = FallbackOf(state, t, added);
        out->value[t] = fallback.value;
        out->spread[t] = fallback.spread;
        out->neighbors[t] = 0;
        continue;
      }
      out->value[t] = average.value[column] + (added.empty() ? 0.0 : added[t]);
      out->spread[t] = average.spread[column];
      out->neighbors[t] = static_cast<std::uint32_t>(average.neighbors);
    }
    begin = end;
  }
}

}  // namespace streamreg
