#include "core/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/enum_names.h"

namespace streamreg {
namespace {

// Bounds that keep a model's work and memory sane.
constexpr std::size_t kMaxInputDim = 4096;
constexpr std::size_t kMaxTargets = 256;
constexpr std::size_t kMaxGridSize = 64;
constexpr std::size_t kMaxK = 4096;
constexpr std::size_t kMaxHonestLag = 1 << 20;
constexpr std::size_t kMaxMlkrSteps = 10000;
constexpr std::size_t kMaxScoringStride = 1024;
// A refresh's mean over fewer points than the first refresh's 64 would be
// noisier than the online sums it replaces.
constexpr std::size_t kMinMetricRefreshSamples = 64;

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

absl::Status ValidateFraction(double value, absl::string_view name,
                              bool allow_one) {
  if (!(value > 0.0 && (value < 1.0 || (allow_one && value == 1.0)))) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": must be in (0, 1", allow_one ? "]" : ")", ", got ", value));
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
  if (level > 0.0 && level < 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("interval_level: must be in (0, 1), got ", level));
}

absl::Status CompleteAndValidate(ModelConfig* config) {
  if (config->input_dim == 0 || config->input_dim > kMaxInputDim) {
    return absl::InvalidArgumentError(absl::StrCat("input_dim: must be in [1, ",
                                                   kMaxInputDim, "], got ",
                                                   config->input_dim));
  }
  if (config->target_names.empty() ||
      config->target_names.size() > kMaxTargets) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_names: need 1 to ", kMaxTargets, " targets, got ",
                     config->target_names.size()));
  }
  absl::flat_hash_set<std::string> seen;
  for (std::size_t t = 0; t < config->target_names.size(); ++t) {
    const std::string& name = config->target_names[t];
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
  if (config->bandwidth_grid.empty()) {
    config->bandwidth_grid =
        DefaultBandwidthGrid(config->input_dim, config->metric);
  }
  if (config->k_grid.empty())
    config->k_grid = DefaultKGridFor(config->regressor);
  if (config->gradient_bandwidth_grid.empty()) {
    config->gradient_bandwidth_grid = config->bandwidth_grid;
  }
  if (absl::Status s = ValidateGrid(config->bandwidth_grid, "bandwidth_grid");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateGrid(config->k_grid, "k_grid"); !s.ok()) {
    return s;
  }
  if (config->k_grid.back() > kMaxK) {
    return absl::InvalidArgumentError(
        absl::StrCat("k_grid: k at most ", kMaxK));
  }
  if (absl::Status s = ValidateGrid(config->gradient_bandwidth_grid,
                                    "gradient_bandwidth_grid");
      !s.ok()) {
    return s;
  }
  if (!(config->step_ratio > 0.0) || !(config->step_ratio <= 4.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step_ratio: must be in (0, 4], got ", config->step_ratio));
  }
  if (absl::Status s = ValidateFraction(config->selection_forgetting,
                                        "selection_forgetting", true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateFraction(config->metric_forgetting,
                                        "metric_forgetting", true);
      !s.ok()) {
    return s;
  }
  if (!(config->metric_refresh_growth == 0.0 ||
        (config->metric_refresh_growth > 1.0 &&
         std::isfinite(config->metric_refresh_growth)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric_refresh_growth: 0 or a factor above 1, got ",
                     config->metric_refresh_growth));
  }
  if (config->honest_lag > kMaxHonestLag) {
    return absl::InvalidArgumentError(absl::StrCat(
        "honest_lag: at most ", kMaxHonestLag, ", got ", config->honest_lag));
  }
  for (const auto& [value, name, allow_zero] :
       {std::tuple{config->local_linear_ridge, "local_linear_ridge", false},
        std::tuple{config->base_ridge, "base_ridge", false},
        std::tuple{config->base_relative_ridge, "base_relative_ridge", true},
        std::tuple{config->egop_ridge, "egop_ridge", true},
        std::tuple{config->glml_gamma_ratio, "glml_gamma_ratio", false},
        std::tuple{config->drift_tolerance, "drift_tolerance", true}}) {
    if (absl::Status s = ValidateFinite(value, name, allow_zero); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          ValidateFraction(config->base_forgetting, "base_forgetting", true);
      !s.ok()) {
    return s;
  }
  if (config->linear_base && config->input_dim > kMaxLinearBaseDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear_base: needs input_dim <= ", kMaxLinearBaseDim,
                     " (a d x d solve per sample), got ", config->input_dim));
  }
  if (config->SearchesGlml() && config->input_dim > kMaxLinearBaseDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric: GLML needs input_dim <= ", kMaxLinearBaseDim,
        " (its Gaussian's d x d solve per sample), got ", config->input_dim));
  }
  if (config->mlkr_rank > config->input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlkr_rank: at most input_dim = ", config->input_dim,
                     " (0: full rank), got ", config->mlkr_rank));
  }
  if (config->mlkr_neighbors < 1 || config->mlkr_neighbors > kMaxK) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mlkr_neighbors: 1 to ", kMaxK, ", got ", config->mlkr_neighbors));
  }
  if (config->mlkr_fit_samples < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mlkr_fit_samples: at least 2, got ", config->mlkr_fit_samples));
  }
  if (config->metric_refresh_samples != 0 &&
      config->metric_refresh_samples < kMinMetricRefreshSamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric_refresh_samples: 0 (every stored sample) or at least ",
        kMinMetricRefreshSamples, ", got ", config->metric_refresh_samples));
  }
  if (config->mlkr_fit_steps < 1 || config->mlkr_fit_steps > kMaxMlkrSteps) {
    return absl::InvalidArgumentError(absl::StrCat("mlkr_fit_steps: 1 to ",
                                                   kMaxMlkrSteps, ", got ",
                                                   config->mlkr_fit_steps));
  }
  if (absl::Status status = ValidateIntervalLevel(config->interval_level);
      !status.ok()) {
    return status;
  }
  if (config->interval_window < 1 ||
      config->interval_window > kMaxIntervalWindow) {
    return absl::InvalidArgumentError(absl::StrCat("interval_window: 1 to ",
                                                   kMaxIntervalWindow, ", got ",
                                                   config->interval_window));
  }
  if (config->max_scoring_stride < 1 ||
      config->max_scoring_stride > kMaxScoringStride) {
    return absl::InvalidArgumentError(absl::StrCat("max_scoring_stride: 1 to ",
                                                   kMaxScoringStride, ", got ",
                                                   config->max_scoring_stride));
  }
  if (!(config->interval_step >= 0.0 && config->interval_step < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interval_step: must be in [0, 1), got ", config->interval_step));
  }
  if (config->random_feature_base) {
    if (!config->linear_base) {
      return absl::InvalidArgumentError(
          "random_feature_base: needs the base on (linear_base)");
    }
    const std::size_t features =
        1 + config->input_dim + 2 * config->random_feature_frequencies;
    if (config->random_feature_frequencies < 1 ||
        features > kMaxRandomFeatures) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_feature_base.frequencies: at least 1, and 1 + input_dim + "
          "2 x it at most ",
          kMaxRandomFeatures, " (its features), got ",
          config->random_feature_frequencies, " (", features, " features)"));
    }
    for (const auto& [grid, name] :
         {std::pair{&config->random_feature_lengthscales,
                    "random_feature_base.lengthscales"},
          std::pair{&config->random_feature_ridges,
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
  }
  if (config->per_target_base && !config->linear_base) {
    return absl::InvalidArgumentError(
        "per_target_base: needs linear_base (the choice is between the base "
        "and no base)");
  }
  if (config->metric == MetricKind::kGlml && config->linear_base) {
    return absl::InvalidArgumentError(
        "linear_base: not with the metric glml, whose metric follows the "
        "gradient of the targets under a global Gaussian of (x, y): the "
        "residuals of a linear base have none, and the metric would be "
        "Euclidean");
  }
  if (config->metric == MetricKind::kGlml && config->per_target_metric) {
    return absl::InvalidArgumentError(
        "per_target_metric: not with the metric glml, whose metric is per "
        "target and per query already (one index, one search per target)");
  }
  if (config->metric == MetricKind::kAuto && config->per_target_metric) {
    return absl::InvalidArgumentError(
        "per_target_metric: not with the metric auto, which chooses among "
        "shared metrics per target");
  }
  if (config->drift_check_every == 0) {
    return absl::InvalidArgumentError("drift_check_every: must be positive");
  }
  if (absl::Status s = ValidateFraction(config->rebuild_lag_fraction,
                                        "rebuild_lag_fraction", true);
      !s.ok()) {
    return s;
  }
  if (config->capacity.policy != CapacityPolicy::kUnbounded &&
      config->capacity.limit == 0) {
    return absl::InvalidArgumentError(
        "capacity.limit: a window or reservoir needs a positive limit");
  }
  return absl::OkStatus();
}

}  // namespace streamreg

namespace streamreg {
namespace {

// Version 2 added local_linear_ridge and honest_lag (a version 1 encoding
// loads with the ridge's default and honest_lag 0: the error that chose h
// or k when it was written); version 3 the linear base (off in earlier
// ones); version 4 the gradient estimator (finite differences in earlier
// ones, so that a model written then restores exactly); version 5 MLKR's
// settings (no earlier model has an MLKR map); version 6 GLML's (kAuto
// models saved before keep their candidates); version 7
// metric_refresh_samples (earlier models refreshed at every sample);
// version 8 mlkr_fit_budget (earlier models' fits had none); version 9
// per_target_base (off in earlier ones); version 10 the random-feature
// base (a linear base in earlier ones); version 11 the intervals (earlier
// models take the defaults); version 12 the take-over rule (earlier models
// took over at fixed counts, and their logs record no take-over); version
// 13 max_scoring_stride (earlier models scored every sample); version 14
// base_relative_ridge (0 in earlier models); version 15 mlkr_settled_after
// (earlier models settled at a full budget).
constexpr std::uint32_t kConfigVersion = 15;

// Where a model saved before mlkr_settled_after settled its maps: once
// their last fit read a full budget of samples (never without a budget).
std::size_t FullMlkrBudget(const ModelConfig& c) {
  if (c.mlkr_fit_budget == 0 || c.mlkr_fit_steps == 0) return 0;
  return c.mlkr_fit_budget / c.mlkr_fit_steps;
}

template <class Enum>
bool LoadEnum(ByteReader& in, Enum last, Enum* out) {
  const std::uint8_t raw = in.U8();
  if (raw > static_cast<std::uint8_t>(last)) return false;
  *out = static_cast<Enum>(raw);
  return true;
}

}  // namespace

void SaveConfig(const ModelConfig& c, ByteWriter& out) {
  out.U32(kConfigVersion);
  out.U64(c.input_dim);
  out.U64(c.target_names.size());
  for (const std::string& name : c.target_names) out.String(name);
  out.U8(static_cast<std::uint8_t>(c.regressor));
  out.U8(static_cast<std::uint8_t>(c.kernel));
  out.U8(static_cast<std::uint8_t>(c.metric));
  out.U8(c.per_target_metric ? 1 : 0);
  out.Doubles(c.bandwidth_grid);
  out.U64(c.k_grid.size());
  for (std::size_t k : c.k_grid) out.U64(k);
  out.Doubles(c.gradient_bandwidth_grid);
  out.Double(c.step_ratio);
  out.Double(c.selection_forgetting);
  out.U64(c.selection_window);
  out.U64(c.full_grid_every);
  out.U64(c.full_grid_below);
  out.Double(c.metric_forgetting);
  out.Double(c.metric_refresh_growth);
  out.Double(c.egop_ridge);
  out.Double(c.drift_tolerance);
  out.U64(c.drift_check_every);
  out.U64(c.small_store_below);
  out.U64(c.rebuild_lag);
  out.Double(c.rebuild_lag_fraction);
  out.U8(static_cast<std::uint8_t>(c.capacity.policy));
  out.U64(c.capacity.limit);
  out.U64(c.seed);
  out.Double(c.local_linear_ridge);
  out.U64(c.honest_lag);
  out.U8(c.linear_base ? 1 : 0);
  out.Double(c.base_ridge);
  out.Double(c.base_forgetting);
  out.U8(static_cast<std::uint8_t>(c.gradient_estimator));
  out.U64(c.mlkr_rank);
  out.U64(c.mlkr_neighbors);
  out.U64(c.mlkr_fit_samples);
  out.U64(c.mlkr_fit_steps);
  out.U8(c.auto_includes_mlkr ? 1 : 0);
  out.Double(c.glml_gamma_ratio);
  out.U8(c.auto_includes_glml ? 1 : 0);
  out.U64(c.metric_refresh_samples);
  out.U64(c.mlkr_fit_budget);
  out.U8(c.per_target_base ? 1 : 0);
  out.U8(c.random_feature_base ? 1 : 0);
  out.U64(c.random_feature_frequencies);
  out.Doubles(c.random_feature_lengthscales);
  out.Doubles(c.random_feature_ridges);
  out.Double(c.interval_level);
  out.U64(c.interval_window);
  out.Double(c.interval_step);
  out.U8(static_cast<std::uint8_t>(c.take_over));
  out.U64(c.max_scoring_stride);
  out.Double(c.base_relative_ridge);
  out.U64(c.mlkr_settled_after);
}

bool LoadConfig(ByteReader& in, ModelConfig* c) {
  const std::uint32_t version = in.U32();
  if (version < 1 || version > kConfigVersion) return false;
  c->input_dim = in.U64();
  const std::uint64_t num_targets = in.U64();
  if (num_targets > in.remaining()) return false;
  c->target_names.resize(num_targets);
  for (std::string& name : c->target_names) name = in.String();
  std::uint8_t per_target = 0;
  if (!LoadEnum(in, RegressorKind::kAuto, &c->regressor) ||
      !LoadEnum(in, Kernel::kTruncatedGaussian, &c->kernel) ||
      !LoadEnum(in, MetricKind::kGlml, &c->metric) ||
      (per_target = in.U8()) > 1) {
    return false;
  }
  c->per_target_metric = per_target == 1;
  c->bandwidth_grid = in.Doubles();
  const std::uint64_t num_k = in.U64();
  if (num_k > in.remaining() / sizeof(std::uint64_t)) return false;
  c->k_grid.resize(num_k);
  for (std::size_t& k : c->k_grid) k = in.U64();
  c->gradient_bandwidth_grid = in.Doubles();
  c->step_ratio = in.Double();
  c->selection_forgetting = in.Double();
  c->selection_window = in.U64();
  c->full_grid_every = in.U64();
  c->full_grid_below = in.U64();
  c->metric_forgetting = in.Double();
  c->metric_refresh_growth = in.Double();
  c->egop_ridge = in.Double();
  c->drift_tolerance = in.Double();
  c->drift_check_every = in.U64();
  c->small_store_below = in.U64();
  c->rebuild_lag = in.U64();
  c->rebuild_lag_fraction = in.Double();
  if (!LoadEnum(in, CapacityPolicy::kReservoir, &c->capacity.policy)) {
    return false;
  }
  c->capacity.limit = in.U64();
  c->seed = in.U64();
  c->local_linear_ridge =
      version >= 2 ? in.Double() : ModelConfig().local_linear_ridge;
  c->honest_lag = version >= 2 ? in.U64() : 0;
  const ModelConfig defaults;
  c->linear_base = false;
  c->base_ridge = defaults.base_ridge;
  c->base_forgetting = defaults.base_forgetting;
  if (version >= 3) {
    const std::uint8_t base = in.U8();
    if (base > 1) return false;
    c->linear_base = base == 1;
    c->base_ridge = in.Double();
    c->base_forgetting = in.Double();
  }
  c->gradient_estimator = GradientEstimatorKind::kFiniteDifferences;
  if (version >= 4 && !LoadEnum(in, GradientEstimatorKind::kLocalLinear,
                                &c->gradient_estimator)) {
    return false;
  }
  if (version >= 5) {
    c->mlkr_rank = in.U64();
    c->mlkr_neighbors = in.U64();
    c->mlkr_fit_samples = in.U64();
    c->mlkr_fit_steps = in.U64();
    const std::uint8_t with_mlkr = in.U8();
    if (with_mlkr > 1) return false;
    c->auto_includes_mlkr = with_mlkr == 1;
  } else {
    c->auto_includes_mlkr = false;  // its candidates were three
  }
  if (version >= 6) {
    c->glml_gamma_ratio = in.Double();
    const std::uint8_t with_glml = in.U8();
    if (with_glml > 1) return false;
    c->auto_includes_glml = with_glml == 1;
  } else {
    c->glml_gamma_ratio = defaults.glml_gamma_ratio;
    c->auto_includes_glml = false;
  }
  // Models written before version 7 refreshed at every stored sample.
  c->metric_refresh_samples = version >= 7 ? in.U64() : 0;
  c->mlkr_fit_budget = version >= 8 ? in.U64() : 0;
  c->per_target_base = false;
  if (version >= 9) {
    const std::uint8_t per_target_base = in.U8();
    if (per_target_base > 1) return false;
    c->per_target_base = per_target_base == 1;
  }
  c->random_feature_base = false;
  c->random_feature_frequencies = defaults.random_feature_frequencies;
  c->random_feature_lengthscales = defaults.random_feature_lengthscales;
  c->random_feature_ridges = defaults.random_feature_ridges;
  if (version >= 10) {
    const std::uint8_t random_features = in.U8();
    if (random_features > 1) return false;
    c->random_feature_base = random_features == 1;
    c->random_feature_frequencies = in.U64();
    c->random_feature_lengthscales = in.Doubles();
    c->random_feature_ridges = in.Doubles();
  }
  c->interval_level = defaults.interval_level;
  c->interval_window = defaults.interval_window;
  c->interval_step = defaults.interval_step;
  if (version >= 11) {
    c->interval_level = in.Double();
    c->interval_window = in.U64();
    c->interval_step = in.Double();
  }
  c->take_over = TakeOverRule::kFixedCount;
  if (version >= 12 && !LoadEnum(in, TakeOverRule::kLogged, &c->take_over)) {
    return false;
  }
  c->max_scoring_stride = version >= 13 ? in.U64() : 1;
  c->base_relative_ridge = version >= 14 ? in.Double() : 0.0;
  c->mlkr_settled_after = version >= 15 ? in.U64() : FullMlkrBudget(*c);
  return in.ok() && c->max_scoring_stride >= 1 &&
         c->max_scoring_stride <= kMaxScoringStride &&
         c->base_relative_ridge >= 0.0;
}

}  // namespace streamreg
