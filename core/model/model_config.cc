#include "core/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/enum_names.h"
#include "core/model/model_settings.h"

namespace streamreg {
namespace {

// Bounds that keep a model's work and memory sane.
constexpr std::size_t kMaxInputDim = 4096;
constexpr std::size_t kMaxTargets = 256;
constexpr std::size_t kMaxGridSize = 64;

template <class T>
absl::Status ValidateGrid(const std::vector<T>& grid, absl::string_view name) {
  if (grid.size() > kMaxGridSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", grid.size(), " values; at most ", kMaxGridSize));
  }
  for (std::size_t g = 0; g < grid.size(); ++g) {
    const double value = static_cast<double>(grid[g]);
    if (!(value > 0.0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, "[", g, "]: must be positive and finite, got ", value));
    }
    if (g > 0 && !(grid[g - 1] < grid[g])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", g, "]: the grid must be strictly ascending"));
    }
  }
  return absl::OkStatus();
}

// A finite value > 0 (or >= 0 with allow_zero).
absl::Status ValidateFinite(double value, absl::string_view name,
                            bool allow_zero) {
  const bool in_range = allow_zero ? value >= 0.0 : value > 0.0;
  if (!in_range || !std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": must be finite and ", allow_zero ? ">= 0" : "> 0",
                     ", got ", value));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<MetricKind> ModelConfig::Candidates() const {
  std::vector<MetricKind> candidates = CandidateMetrics(metric);
  if (metric == MetricKind::kAuto && !auto_includes_mlkr) {
    std::erase(candidates, MetricKind::kMlkr);
  }
  if (metric == MetricKind::kAuto && (!auto_includes_glml || linear_base)) {
    std::erase(candidates, MetricKind::kGlml);
  }
  return candidates;
}

bool ModelConfig::SearchesGlml() const {
  const std::vector<MetricKind> candidates = Candidates();
  return std::find(candidates.begin(), candidates.end(), MetricKind::kGlml) !=
         candidates.end();
}

bool ModelConfig::LearnsMlkr() const {
  return metric == MetricKind::kMlkr ||
         (metric == MetricKind::kAuto && auto_includes_mlkr);
}

std::size_t NumScoredVariants(const ModelConfig& config) {
  return NumScoredRegressors(config.regressor) *
         (config.per_target_base ? 2 : 1);
}

ScoredVariant ScoredVariantAt(const ModelConfig& config, std::size_t s) {
  const std::size_t regressors = NumScoredRegressors(config.regressor);
  const bool own_targets = s < regressors;
  return {ScoredRegressor(config.regressor, s % regressors),
          config.linear_base && own_targets,
          own_targets ? 0 : config.num_targets()};
}

std::size_t NumCandidates(const ModelConfig& config) {
  return NumScoredVariants(config) + (config.linear_base ? 1 : 0);
}

std::string CandidateName(const ModelConfig& config, std::size_t c) {
  if (c == NumScoredVariants(config)) return "base";
  const ScoredVariant variant = ScoredVariantAt(config, c);
  return absl::StrCat(RegressorKindName(variant.regressor),
                      variant.with_base ? "+base" : "");
}

std::size_t ModelConfig::CoordinateChoices() const {
  const bool fits_local_linear = regressor == RegressorKind::kLocalLinear ||
                                 regressor == RegressorKind::kAuto;
  const bool ordered_by_weight =
      metric == MetricKind::kMlkr || metric == MetricKind::kEgop;
  return fits_local_linear && ordered_by_weight && local_linear_leading > 0 &&
                 local_linear_leading < input_dim
             ? 2
             : 1;
}

LocalLinearFit ModelConfig::FitAt(std::size_t g) const {
  const std::size_t choices = CoordinateChoices();
  const bool leading = choices == 2 && g % choices == 0;
  return {.k = k_grid[g / choices],
          .coordinates = leading ? local_linear_leading : 0};
}

std::size_t ModelConfig::GridSize() const {
  return ChoosesK(regressor) ? k_grid.size() * CoordinateChoices()
                             : bandwidth_grid.size();
}

std::size_t ModelConfig::MlkrFitSteps(std::size_t samples_read) const {
  if (mlkr_fit_budget == 0 || samples_read == 0) return mlkr_fit_steps;
  const std::size_t floor = std::min(mlkr_fit_steps, kMinBudgetedMlkrSteps);
  return std::clamp(mlkr_fit_budget / samples_read, floor, mlkr_fit_steps);
}

std::size_t ModelConfig::ScoringStride(std::size_t stored) const {
  std::size_t stride = 1;
  for (std::size_t from = kScoreEverySampleBelow;
       stored >= from && stride < max_scoring_stride; from *= 2) {
    stride *= 2;
  }
  return std::min(stride, std::max<std::size_t>(max_scoring_stride, 1));
}

absl::string_view RegressorKindName(RegressorKind kind) {
  switch (kind) {
    case RegressorKind::kNearest:
      return "knn";
    case RegressorKind::kKernel:
      return "kernel";
    case RegressorKind::kLocalLinear:
      return "local_linear";
    case RegressorKind::kAuto:
      return "auto";
  }
  return "?";
}

absl::StatusOr<RegressorKind> ParseRegressorKind(absl::string_view name) {
  return ParseEnumName("regressor", name,
                       {RegressorKind::kNearest, RegressorKind::kKernel,
                        RegressorKind::kLocalLinear, RegressorKind::kAuto},
                       &RegressorKindName);
}

std::vector<double> DefaultBandwidthGrid(std::size_t input_dim,
                                         MetricKind metric) {
  std::vector<double> grid;
  const double root = std::sqrt(static_cast<double>(input_dim));
  const int top = metric == MetricKind::kGlml ? 10 : 2;
  for (int quarter_octave = -24; quarter_octave <= top; ++quarter_octave) {
    grid.push_back(root * std::exp2(0.25 * quarter_octave));
  }
  return grid;
}

std::vector<std::size_t> DefaultKGrid() {
  return {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 19, 24, 30, 38, 48, 64};
}

std::size_t ModelConfig::EffectiveHonestLag() const {
  if (capacity.policy == CapacityPolicy::kUnbounded) return honest_lag;
  return std::min(honest_lag, capacity.limit / 2);
}

std::size_t ModelConfig::EffectiveIntervalLag() const {
  const std::size_t lag = capacity.policy == CapacityPolicy::kUnbounded
                              ? interval_lag
                              : std::min(interval_lag, capacity.limit / 2);
  return lag > EffectiveHonestLag() ? lag : 0;
}

std::vector<std::size_t> DefaultLocalLinearKGrid() {
  return {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
}

std::vector<std::size_t> DefaultKGridFor(RegressorKind regressor) {
  switch (regressor) {
    case RegressorKind::kLocalLinear:
      return DefaultLocalLinearKGrid();
    case RegressorKind::kAuto: {
      std::vector<std::size_t> merged;
      const std::vector<std::size_t> nearest = DefaultKGrid();
      const std::vector<std::size_t> local_linear = DefaultLocalLinearKGrid();
      std::set_union(nearest.begin(), nearest.end(), local_linear.begin(),
                     local_linear.end(), std::back_inserter(merged));
      return merged;
    }
    case RegressorKind::kNearest:
    case RegressorKind::kKernel:
      break;
  }
  return DefaultKGrid();
}

absl::Status ValidateIntervalLevel(double level) {
  static const ModelSetting& kIntervalLevel =
      *FindModelSetting("interval_level");
  return ValidateSettingValue(kIntervalLevel, level);
}

namespace {

// The model's shape: its inputs and its targets' names.
absl::Status ValidateShape(const ModelConfig& config) {
  if (config.input_dim == 0 || config.input_dim > kMaxInputDim) {
    return absl::InvalidArgumentError(absl::StrCat("input_dim: must be in [1, ",
                                                   kMaxInputDim, "], got ",
                                                   config.input_dim));
  }
  if (config.target_names.empty() || config.target_names.size() > kMaxTargets) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_names: need 1 to ", kMaxTargets, " targets, got ",
                     config.target_names.size()));
  }
  absl::flat_hash_set<std::string> seen;
  for (std::size_t t = 0; t < config.target_names.size(); ++t) {
    const std::string& name = config.target_names[t];
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("target_names[", t, "]: empty name"));
    }
    if (name.size() > kMaxColumnNameLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("target_names[", t, "]: ", name.size(),
                       " bytes; at most ", kMaxColumnNameLength));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("target_names[", t, "]: duplicate name '", name, "'"));
    }
  }
  return absl::OkStatus();
}

// Fills the empty grids with their defaults and checks every grid.
absl::Status CompleteGrids(ModelConfig& config) {
  if (config.bandwidth_grid.empty()) {
    config.bandwidth_grid =
        DefaultBandwidthGrid(config.input_dim, config.metric);
  }
  if (config.k_grid.empty()) config.k_grid = DefaultKGridFor(config.regressor);
  if (config.gradient_bandwidth_grid.empty()) {
    config.gradient_bandwidth_grid = config.bandwidth_grid;
  }
  if (absl::Status s = ValidateGrid(config.bandwidth_grid, "bandwidth_grid");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateGrid(config.k_grid, "k_grid"); !s.ok()) {
    return s;
  }
  if (config.k_grid.back() > kMaxNeighbors) {
    return absl::InvalidArgumentError(
        absl::StrCat("k_grid: k at most ", kMaxNeighbors));
  }
  return ValidateGrid(config.gradient_bandwidth_grid,
                      "gradient_bandwidth_grid");
}

// The random-feature base's features and candidates, when it is on.
absl::Status ValidateRandomFeatureBase(const ModelConfig& config) {
  if (!config.random_feature_base) return absl::OkStatus();
  if (!config.linear_base) {
    return absl::InvalidArgumentError(
        "random_feature_base: needs the base on (linear_base)");
  }
  const std::size_t features =
      1 + config.input_dim + 2 * config.random_feature_frequencies;
  if (config.random_feature_frequencies < 1 || features > kMaxRandomFeatures) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_feature_base.frequencies: at least 1, and 1 + input_dim + "
        "2 x it at most ",
        kMaxRandomFeatures, " (its features), got ",
        config.random_feature_frequencies, " (", features, " features)"));
  }
  for (const auto& [grid, name] :
       {std::pair{&config.random_feature_lengthscales,
                  "random_feature_base.lengthscales"},
        std::pair{&config.random_feature_ridges,
                  "random_feature_base.ridges"}}) {
    if (grid->empty() || grid->size() > kMaxGridSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": 1 to ", kMaxGridSize, " candidates, got ", grid->size()));
    }
    for (std::size_t c = 0; c < grid->size(); ++c) {
      if (absl::Status s = ValidateFinite(
              (*grid)[c], absl::StrCat(name, "[", c, "]"), false);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

// The rules between settings: what needs or excludes what.
absl::Status ValidateCombinations(const ModelConfig& config) {
  if (config.linear_base && config.input_dim > kMaxLinearBaseDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear_base: needs input_dim <= ", kMaxLinearBaseDim,
                     " (a d x d solve per sample), got ", config.input_dim));
  }
  if (config.SearchesGlml() && config.input_dim > kMaxLinearBaseDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric: GLML needs input_dim <= ", kMaxLinearBaseDim,
        " (its Gaussian's d x d solve per sample), got ", config.input_dim));
  }
  if (config.mlkr_rank > config.input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlkr_rank: at most input_dim = ", config.input_dim,
                     " (0: full rank), got ", config.mlkr_rank));
  }
  if (config.per_target_base && !config.linear_base) {
    return absl::InvalidArgumentError(
        "per_target_base: needs linear_base (the choice is between the base "
        "and no base)");
  }
  if (config.metric == MetricKind::kGlml && config.linear_base) {
    return absl::InvalidArgumentError(
        "linear_base: not with the metric glml, whose metric follows the "
        "gradient of the targets under a global Gaussian of (x, y): the "
        "residuals of a linear base have none, and the metric would be "
        "Euclidean");
  }
  if (config.metric == MetricKind::kGlml && config.per_target_metric) {
    return absl::InvalidArgumentError(
        "per_target_metric: not with the metric glml, whose metric is per "
        "target and per query already (one index, one search per target)");
  }
  if (config.metric == MetricKind::kAuto && config.per_target_metric) {
    return absl::InvalidArgumentError(
        "per_target_metric: not with the metric auto, which chooses among "
        "shared metrics per target");
  }
  if (config.combine && NumCandidates(config) < 2) {
    return absl::InvalidArgumentError(
        "combine: needs two candidates or more: a linear base, or the "
        "regressor auto");
  }
  if (config.capacity.policy != CapacityPolicy::kUnbounded &&
      config.capacity.limit == 0) {
    return absl::InvalidArgumentError(
        "capacity.limit: a window or reservoir needs a positive limit");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompleteAndValidate(ModelConfig* config) {
  if (absl::Status s = ValidateShape(*config); !s.ok()) return s;
  if (absl::Status s = CompleteGrids(*config); !s.ok()) return s;
  if (absl::Status s = ValidateSettingBounds(*config); !s.ok()) return s;
  if (absl::Status s = ValidateRandomFeatureBase(*config); !s.ok()) return s;
  return ValidateCombinations(*config);
}

}  // namespace streamreg
