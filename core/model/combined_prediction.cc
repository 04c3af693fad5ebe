#include "core/model/combined_prediction.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "core/model/model_reader.h"
#include "core/regression/local_linear.h"

namespace streamreg {
namespace {

// One candidate's evaluation: regressor and grid value (what one average
// serves), the neighbour column it reads, and where its value goes.
struct CandidateEvaluation {
  RegressorKind regressor;
  std::size_t grid;
  std::size_t column;
  std::size_t target;
  std::size_t candidate;
  bool with_base;
};

// The evaluations of the targets of index `index` that predict from it.
void ListEvaluations(const ModelState& state, std::size_t index,
                     std::span<const std::size_t> chosen,
                     std::optional<std::size_t> only_target,
                     std::vector<CandidateEvaluation>* evaluations)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock) {
  const ModelConfig& config = state.config;
  evaluations->clear();
  for (std::size_t t : state.predictions[index].targets) {
    if (!PredictsFrom(chosen, index, t, only_target)) {
      continue;
    }
    for (std::size_t s = 0; s < NumScoredVariants(config); ++s) {
      const ScoredVariant variant = ScoredVariantAt(config, s);
      evaluations->push_back(
          {variant.regressor,
           CandidateGridValue(config, state.selectors[index], s, t),
           variant.first_column + t, t, s, variant.with_base});
    }
  }
  // Those of one regressor and grid value together: one average each.
  std::sort(evaluations->begin(), evaluations->end(),
            [](const CandidateEvaluation& a, const CandidateEvaluation& b) {
              return std::tie(a.regressor, a.grid, a.column) <
                     std::tie(b.regressor, b.grid, b.column);
            });
}

// The most coordinates a local linear evaluation fits over (0: all of
// them), so that the fits' sums are made over no more.
std::size_t WidestCoordinates(
    const ModelConfig& config,
    std::span<const CandidateEvaluation> evaluations) {
  std::size_t widest = 1;
  for (const CandidateEvaluation& evaluation : evaluations) {
    if (evaluation.regressor != RegressorKind::kLocalLinear) continue;
    const std::size_t coordinates = config.FitAt(evaluation.grid).coordinates;
    if (coordinates == 0) return 0;
    widest = std::max(widest, coordinates);
  }
  return widest;
}

}  // namespace

std::size_t CandidateGridValue(const ModelConfig& config,
                               const PrequentialSelector& selector,
                               std::size_t s, std::size_t t) {
  const std::size_t scored = s * config.num_targets() + t;
  const std::size_t best = selector.Best(scored);
  if (config.CoordinateChoices() == 1 ||
      ScoredVariantAt(config, s).regressor != RegressorKind::kLocalLinear ||
      config.FitAt(best).coordinates != 0) {
    return best;
  }
  // The fit over the leading coordinates at the same k: the value before.
  const std::size_t leading = best - 1;
  return selector.MeanSquaredError(leading, scored) <=
                 (1.0 + kFullFitMargin) *
                     selector.MeanSquaredError(best, scored)
             ? leading
             : best;
}

const CandidateAggregation& CombinationFor(const ModelState& state,
                                           std::size_t index,
                                           IntervalCalibration calibration) {
  return calibration == IntervalCalibration::kQuery
             ? state.combinations[index]
             : state.answer_combinations[index];
}

void PredictCombined(const ModelState& state, std::size_t index,
                     std::span<const std::size_t> chosen,
                     const NeighborTargets& near, std::span<const double> base,
                     Prediction* out, std::optional<std::size_t> only_target,
                     const CombinedOptions& options) {
  const ModelConfig& config = state.config;
  const std::size_t n = NumCandidates(config);
  const std::size_t m = config.num_targets();
  thread_local std::vector<CandidateEvaluation> evaluations;
  thread_local std::vector<std::size_t> columns;
  // Per target, each candidate's value and spread ([t * n + c]), and the
  // most neighbours a candidate used.
  thread_local std::vector<double> values;
  thread_local std::vector<double> spreads;
  thread_local std::vector<std::uint32_t> neighbors;
  values.assign(m * n, 0.0);
  spreads.assign(m * n, 0.0);
  neighbors.assign(m, 0);
  ListEvaluations(state, index, chosen, only_target, &evaluations);
  LocalAverage average;
  // The local linear fits, in ascending k (the evaluations' order): one
  // pass over the neighbours for all of them, over the coordinates they
  // use.
  LocalLinearPrefix local_linear(near, config.local_linear_ridge,
                                 WidestCoordinates(config, evaluations));
  for (std::size_t begin = 0; begin < evaluations.size();) {
    std::size_t end = begin;
    columns.clear();
    for (; end < evaluations.size() &&
           evaluations[end].regressor == evaluations[begin].regressor &&
           evaluations[end].grid == evaluations[begin].grid;
         ++end) {
      columns.push_back(evaluations[end].column);
    }
    if (evaluations[begin].regressor == RegressorKind::kLocalLinear) {
      local_linear.FitAt(config.FitAt(evaluations[begin].grid), &average,
                         columns);
    } else {
      AverageAt(config, evaluations[begin].regressor, evaluations[begin].grid,
                near, &average, columns);
    }
    for (std::size_t e = begin; e < end; ++e) {
      const CandidateEvaluation& evaluation = evaluations[e];
      const std::size_t t = evaluation.target;
      const std::span<const double> added =
          evaluation.with_base ? base : std::span<const double>();
      double& value = values[t * n + evaluation.candidate];
      double& spread = spreads[t * n + evaluation.candidate];
      if (average.neighbors == 0) {
        const FallbackValue fallback = FallbackOf(state, t, added);
        value = fallback.value;
        spread = fallback.spread;
        continue;
      }
      value =
          average.value[evaluation.column] + (added.empty() ? 0.0 : added[t]);
      spread = average.spread[evaluation.column];
      neighbors[t] =
          std::max(neighbors[t], static_cast<std::uint32_t>(average.neighbors));
    }
    begin = end;
  }
  const std::size_t scored = NumScoredVariants(config);
  const CandidateAggregation& combination =
      CombinationFor(state, index, options.weights);
  for (std::size_t t : state.predictions[index].targets) {
    if (!PredictsFrom(chosen, index, t, only_target)) {
      continue;
    }
    if (!base.empty()) {  // the base alone
      const FallbackValue alone = FallbackOf(state, t, base);
      values[t * n + scored] = alone.value;
      spreads[t * n + scored] = alone.spread;
    }
    const std::span<const double> candidates(values.data() + t * n, n);
    if (!options.candidates.empty()) {
      std::copy(candidates.begin(), candidates.end(),
                options.candidates.begin() + t * n);
    }
    out->value[t] = combination.Combine(t, candidates);
    out->spread[t] = combination.Combine(
        t, std::span<const double>(spreads.data() + t * n, n));
    out->neighbors[t] = neighbors[t];
  }
}

void CandidatesFromGrid(const ModelState& state, std::size_t index,
                        std::size_t t, std::span<const double> grid_values,
                        std::span<const double> base,
                        std::span<double> candidates) {
  const ModelConfig& config = state.config;
  const std::size_t m = config.num_targets();
  const std::size_t scored = NumScoredVariants(config);
  for (std::size_t s = 0; s < scored; ++s) {
    const std::size_t g =
        CandidateGridValue(config, state.selectors[index], s, t);
    candidates[s] = grid_values[(g * scored + s) * m + t];
  }
  if (!base.empty()) candidates[scored] = base[t];
}

}  // namespace streamreg
