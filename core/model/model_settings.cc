#include "core/model/model_settings.h"

#include <array>
#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/model/recent_slots.h"

namespace streamreg {
namespace {

// The setting kept in the member `Member` of ModelConfig.
template <auto Member>
constexpr auto Field() {
  using T =
      std::remove_reference_t<decltype(std::declval<ModelConfig&>().*Member)>;
  return SettingRef<T>{[](ModelConfig& c) -> T& { return c.*Member; }};
}

using enum SettingWire;
using C = ModelConfig;

// The enum setting kept in `Member`, whose last value is `Last`.
template <auto Member, auto Last>
constexpr ChoiceRef Choice() {
  return {
      [](const ModelConfig& c) { return static_cast<std::uint8_t>(c.*Member); },
      [](ModelConfig& c, std::uint8_t value) {
        c.*Member = static_cast<decltype(Last)>(value);
      },
      static_cast<std::uint8_t>(Last)};
}

constexpr ChoiceRef kCapacityPolicy = {
    [](const ModelConfig& c) {
      return static_cast<std::uint8_t>(c.capacity.policy);
    },
    [](ModelConfig& c, std::uint8_t value) {
      c.capacity.policy = static_cast<CapacityPolicy>(value);
    },
    static_cast<std::uint8_t>(CapacityPolicy::kReservoir)};

constexpr SettingRef<std::size_t> kCapacityLimit = [](C& c) -> std::size_t& {
  return c.capacity.limit;
};

// An enum's number, for a legacy value.
template <class Enum>
constexpr double Number(Enum value) {
  return static_cast<double>(value);
}

// (0, 1]: a forgetting factor or a fraction.
constexpr SettingBounds kFactor = {.low = 0, .high = 1, .low_open = true};
// A finite real > 0, and >= 0.
constexpr SettingBounds kPositive = {.low = 0, .low_open = true};
constexpr SettingBounds kNonNegative = {.low = 0};
// A lag, in samples: at most 2^20.
constexpr SettingBounds kLag = {.low = 0, .high = 1 << 20};

// Where a model saved before mlkr_settled_after settled its maps: once
// their last fit read a full budget of samples (never without a budget).
std::size_t FullMlkrBudget(const ModelConfig& c) {
  if (c.mlkr_fit_budget == 0 || c.mlkr_fit_steps == 0) return 0;
  return c.mlkr_fit_budget / c.mlkr_fit_steps;
}

// In the order of the encoding. The versions: 2 added local_linear_ridge
// and honest_lag (0: the error that chose h or k then); 3 the linear base
// (off before); 4 the gradient estimator (finite differences before, so
// that a model written then restores exactly); 5 MLKR's settings (kAuto
// models saved before keep their three candidates); 6 GLML's (likewise); 7
// metric_refresh_samples (earlier models refreshed at every sample); 8
// mlkr_fit_budget (none before); 9 per_target_base; 10 the random-feature
// base (a linear base before); 11 the intervals (earlier models take the
// defaults); 12 the take-over rule (fixed counts before, and their logs
// record no take-over); 13 max_scoring_stride (every sample scored
// before); 14 base_relative_ridge; 15 mlkr_settled_after; 16 combine
// (each target chose one candidate before); 17 interval_difficulty (the
// same width at every input before); 18 interval_lag (the honest
// predictions calibrated queries before); 19 interval_lag_divisor (a tenth
// before); 20 interval_recalibration (the streamed scores alone before);
// 21 local_linear_leading (every local linear fit over all coordinates
// before); 22 combination_recency (every sample weighed the same in the
// aggregation before); 23 random_base_follows_choice (the random-feature
// base in the first index's coordinates before).
const std::array kSettings = {
    ModelSetting{
        .name = "input_dim", .access = Field<&C::input_dim>(), .wire = kSpec},
    ModelSetting{.name = "target_names",
                 .access = Field<&C::target_names>(),
                 .wire = kSpec},
    ModelSetting{.name = "regressor",
                 .access = Choice<&C::regressor, RegressorKind::kAuto>(),
                 .wire = kSpec},
    ModelSetting{.name = "kernel",
                 .access = Choice<&C::kernel, Kernel::kTruncatedGaussian>(),
                 .wire = kSpec},
    ModelSetting{.name = "metric",
                 .access = Choice<&C::metric, MetricKind::kGlml>(),
                 .wire = kSpec},
    ModelSetting{.name = "per_target_metric",
                 .access = Field<&C::per_target_metric>(),
                 .wire = kSpec},
    ModelSetting{.name = "bandwidth_grid",
                 .access = Field<&C::bandwidth_grid>(),
                 .wire = kSpec},
    ModelSetting{
        .name = "k_grid", .access = Field<&C::k_grid>(), .wire = kSpec},
    ModelSetting{.name = "gradient_bandwidth_grid",
                 .access = Field<&C::gradient_bandwidth_grid>()},
    ModelSetting{
        .name = "step_ratio",
        .access = Field<&C::step_ratio>(),
        .wire = kTuning,
        .bounds = SettingBounds{.low = 0, .high = 4, .low_open = true}},
    ModelSetting{.name = "selection_forgetting",
                 .access = Field<&C::selection_forgetting>(),
                 .wire = kTuning,
                 .bounds = kFactor},
    ModelSetting{.name = "selection_window",
                 .access = Field<&C::selection_window>(),
                 .wire = kTuning},
    ModelSetting{.name = "full_grid_every",
                 .access = Field<&C::full_grid_every>()},
    ModelSetting{.name = "full_grid_below",
                 .access = Field<&C::full_grid_below>()},
    ModelSetting{.name = "metric_forgetting",
                 .access = Field<&C::metric_forgetting>(),
                 .wire = kTuning,
                 .bounds = kFactor},
    ModelSetting{.name = "metric_refresh_growth",
                 .access = Field<&C::metric_refresh_growth>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 1,
                                         .low_open = true,
                                         .or_zero = true,
                                         .zero_means = "never"}},
    ModelSetting{.name = "egop_ridge",
                 .access = Field<&C::egop_ridge>(),
                 .wire = kTuning,
                 .bounds = kNonNegative},
    ModelSetting{.name = "drift_tolerance",
                 .access = Field<&C::drift_tolerance>(),
                 .wire = kTuning,
                 .bounds = kNonNegative},
    ModelSetting{.name = "drift_check_every",
                 .access = Field<&C::drift_check_every>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 1}},
    ModelSetting{.name = "small_store_below",
                 .access = Field<&C::small_store_below>()},
    ModelSetting{.name = "rebuild_lag", .access = Field<&C::rebuild_lag>()},
    ModelSetting{.name = "rebuild_lag_fraction",
                 .access = Field<&C::rebuild_lag_fraction>(),
                 .bounds = kFactor},
    ModelSetting{
        .name = "capacity.policy", .access = kCapacityPolicy, .wire = kSpec},
    ModelSetting{
        .name = "capacity.limit", .access = kCapacityLimit, .wire = kSpec},
    ModelSetting{.name = "seed", .access = Field<&C::seed>(), .wire = kSpec},
    ModelSetting{.name = "local_linear_ridge",
                 .access = Field<&C::local_linear_ridge>(),
                 .wire = kTuning,
                 .bounds = kPositive,
                 .since_version = 2},
    ModelSetting{.name = "honest_lag",
                 .access = Field<&C::honest_lag>(),
                 .wire = kTuning,
                 .bounds = kLag,
                 .since_version = 2,
                 .legacy = 0},
    ModelSetting{.name = "linear_base",
                 .access = Field<&C::linear_base>(),
                 .wire = kSpec,
                 .since_version = 3,
                 .legacy = 0},
    ModelSetting{.name = "base_ridge",
                 .access = Field<&C::base_ridge>(),
                 .wire = kTuning,
                 .bounds = kPositive,
                 .since_version = 3},
    ModelSetting{.name = "base_forgetting",
                 .access = Field<&C::base_forgetting>(),
                 .wire = kTuning,
                 .bounds = kFactor,
                 .since_version = 3},
    ModelSetting{.name = "gradient_estimator",
                 .access = Choice<&C::gradient_estimator,
                                  GradientEstimatorKind::kLocalLinear>(),
                 .wire = kSpec,
                 .since_version = 4,
                 .legacy = Number(GradientEstimatorKind::kFiniteDifferences)},
    ModelSetting{.name = "mlkr_rank",
                 .access = Field<&C::mlkr_rank>(),
                 .wire = kTuning,
                 .since_version = 5},
    ModelSetting{.name = "mlkr_neighbors",
                 .access = Field<&C::mlkr_neighbors>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 1, .high = kMaxNeighbors},
                 .since_version = 5},
    ModelSetting{.name = "mlkr_fit_samples",
                 .access = Field<&C::mlkr_fit_samples>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 2},
                 .since_version = 5},
    ModelSetting{.name = "mlkr_fit_steps",
                 .access = Field<&C::mlkr_fit_steps>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 1, .high = 10000},
                 .since_version = 5},
    ModelSetting{.name = "auto_includes_mlkr",
                 .access = Field<&C::auto_includes_mlkr>(),
                 .since_version = 5,
                 .legacy = 0},
    ModelSetting{.name = "glml_gamma_ratio",
                 .access = Field<&C::glml_gamma_ratio>(),
                 .wire = kTuning,
                 .bounds = kPositive,
                 .since_version = 6},
    ModelSetting{.name = "auto_includes_glml",
                 .access = Field<&C::auto_includes_glml>(),
                 .since_version = 6,
                 .legacy = 0},
    // A refresh's mean over fewer points than the first refresh's 64 would
    // be noisier than the online sums it replaces.
    ModelSetting{.name = "metric_refresh_samples",
                 .access = Field<&C::metric_refresh_samples>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 64,
                                         .or_zero = true,
                                         .zero_means = "every stored sample"},
                 .since_version = 7,
                 .legacy = 0},
    ModelSetting{.name = "mlkr_fit_budget",
                 .access = Field<&C::mlkr_fit_budget>(),
                 .wire = kTuning,
                 .since_version = 8,
                 .legacy = 0},
    ModelSetting{.name = "per_target_base",
                 .access = Field<&C::per_target_base>(),
                 .wire = kSpec,
                 .since_version = 9,
                 .legacy = 0},
    ModelSetting{.name = "random_feature_base",
                 .access = Field<&C::random_feature_base>(),
                 .wire = kSpec,
                 .since_version = 10,
                 .legacy = 0},
    ModelSetting{.name = "random_feature_base.frequencies",
                 .access = Field<&C::random_feature_frequencies>(),
                 .wire = kSpec,
                 .since_version = 10},
    ModelSetting{.name = "random_feature_base.lengthscales",
                 .access = Field<&C::random_feature_lengthscales>(),
                 .wire = kSpec,
                 .since_version = 10},
    ModelSetting{.name = "random_feature_base.ridges",
                 .access = Field<&C::random_feature_ridges>(),
                 .wire = kSpec,
                 .since_version = 10},
    ModelSetting{.name = "interval_level",
                 .access = Field<&C::interval_level>(),
                 .wire = kSpec,
                 .bounds = SettingBounds{.low = 0,
                                         .high = 1,
                                         .low_open = true,
                                         .high_open = true},
                 .since_version = 11},
    ModelSetting{.name = "interval_window",
                 .access = Field<&C::interval_window>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 1, .high = kMaxIntervalWindow},
                 .since_version = 11},
    ModelSetting{
        .name = "interval_step",
        .access = Field<&C::interval_step>(),
        .wire = kTuning,
        .bounds = SettingBounds{.low = 0, .high = 1, .high_open = true},
        .since_version = 11},
    ModelSetting{.name = "take_over",
                 .access = Choice<&C::take_over, TakeOverRule::kLogged>(),
                 .since_version = 12,
                 .legacy = Number(TakeOverRule::kFixedCount)},
    ModelSetting{.name = "max_scoring_stride",
                 .access = Field<&C::max_scoring_stride>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 1, .high = 1024},
                 .since_version = 13,
                 .legacy = 1},
    ModelSetting{.name = "base_relative_ridge",
                 .access = Field<&C::base_relative_ridge>(),
                 .wire = kTuning,
                 .bounds = kNonNegative,
                 .since_version = 14,
                 .legacy = 0},
    ModelSetting{.name = "mlkr_settled_after",
                 .access = Field<&C::mlkr_settled_after>(),
                 .since_version = 15,
                 .legacy_from = &FullMlkrBudget},
    ModelSetting{.name = "combine",
                 .access = Field<&C::combine>(),
                 .wire = kSpec,
                 .since_version = 16,
                 .legacy = 0},
    ModelSetting{.name = "interval_difficulty",
                 .access = Field<&C::interval_difficulty>(),
                 .wire = kTuning,
                 .since_version = 17,
                 .legacy = 0},
    ModelSetting{.name = "interval_lag",
                 .access = Field<&C::interval_lag>(),
                 .wire = kTuning,
                 .bounds = kLag,
                 .since_version = 18,
                 .legacy = 0},
    ModelSetting{.name = "interval_lag_divisor",
                 .access = Field<&C::interval_lag_divisor>(),
                 .bounds = SettingBounds{.low = 1, .high = kLag.high},
                 .since_version = 19,
                 .legacy = RecentSlots::kSeenPerLaggedSample},
    ModelSetting{.name = "interval_recalibration",
                 .access = Field<&C::interval_recalibration>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 0, .high = 1024},
                 .since_version = 20,
                 .legacy = 0},
    ModelSetting{.name = "local_linear_leading",
                 .access = Field<&C::local_linear_leading>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 0, .high = 1 << 16},
                 .since_version = 21,
                 .legacy = 0},
    ModelSetting{.name = "combination_recency",
                 .access = Field<&C::combination_recency>(),
                 .wire = kTuning,
                 .bounds = SettingBounds{.low = 0, .high = 16},
                 .since_version = 22,
                 .legacy = 0},
    ModelSetting{.name = "random_base_follows_choice",
                 .access = Field<&C::random_base_follows_choice>(),
                 .since_version = 23,
                 .legacy = 0},
};

// The field `ref` returns, read only.
template <class T>
const T& Read(SettingRef<T> ref, const ModelConfig& config) {
  return ref(const_cast<ModelConfig&>(config));
}

bool IsCount(const ModelSetting& setting) {
  return std::holds_alternative<SettingRef<std::size_t>>(setting.access);
}

// "in (0, 4]", "finite and > 0", "1 to 1024", "at least 2".
std::string RangeText(const SettingBounds& b, bool count) {
  const bool has_low = std::isfinite(b.low);
  const bool has_high = std::isfinite(b.high);
  if (count) {
    const auto low = static_cast<std::size_t>(b.low);
    const auto high = has_high ? static_cast<std::size_t>(b.high) : 0;
    if (has_high && low > 0) return absl::StrCat(low, " to ", high);
    if (has_high) return absl::StrCat("at most ", high);
    return absl::StrCat("at least ", low);
  }
  if (has_high) {
    return absl::StrCat("in ", b.low_open ? "(" : "[", b.low, ", ", b.high,
                        b.high_open ? ")" : "]");
  }
  return absl::StrCat("finite and ",
                      b.low_open ? "> " : ">= ", has_low ? b.low : 0);
}

bool WithinBounds(const SettingBounds& b, double value) {
  if (b.or_zero && value == 0) return true;
  const bool above_low = b.low_open ? value > b.low : value >= b.low;
  const bool below_high = b.high_open ? value < b.high : value <= b.high;
  return above_low && below_high && std::isfinite(value);
}

// " (never)": what 0 means, for the error.
std::string ZeroMeans(const SettingBounds& b) {
  return b.zero_means.empty() ? "" : absl::StrCat(" (", b.zero_means, ")");
}

// A count read into a double: exactly while a double holds every integer
// (to 2^53), as a double past that (a damaged 2^64 - 1 is "1.84467e+19").
std::string CountText(double value) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  return value <= kExactIntegers
             ? absl::StrCat(static_cast<std::uint64_t>(value))
             : absl::StrCat(value);
}

// The rule `value` breaks, with it ("1 to 1024, got 0"), if it does.
std::optional<std::string> BoundsBroken(const ModelSetting& setting,
                                        double value) {
  if (!setting.bounds.has_value() || WithinBounds(*setting.bounds, value)) {
    return std::nullopt;
  }
  const bool count = IsCount(setting);
  const std::string range = RangeText(*setting.bounds, count);
  const std::string got = count ? CountText(value) : absl::StrCat(value);
  const std::string rule =
      setting.bounds->or_zero
          ? absl::StrCat("0", ZeroMeans(*setting.bounds), " or ", range)
      : count ? range
              : absl::StrCat("must be ", range);
  return absl::StrCat(rule, ", got ", got);
}

absl::Status DataLoss(const ModelSetting& setting, std::size_t offset,
                      absl::string_view problem) {
  return absl::DataLossError(absl::StrCat("model config: ", setting.name,
                                          " at byte ", offset, ": ", problem));
}

void SaveSetting(const ModelSetting& setting, const ModelConfig& c,
                 ByteWriter& out) {
  std::visit(
      [&](auto access) {
        using A = decltype(access);
        if constexpr (std::is_same_v<A, ChoiceRef>) {
          out.U8(access.get(c));
        } else {
          const auto& value = Read(access, c);
          using T = std::remove_cvref_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::size_t>) {
            out.U64(value);
          } else if constexpr (std::is_same_v<T, double>) {
            out.Double(value);
          } else if constexpr (std::is_same_v<T, bool>) {
            out.U8(value ? 1 : 0);
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            out.Doubles(value);
          } else if constexpr (std::is_same_v<T, std::vector<std::size_t>>) {
            out.U64(value.size());
            for (std::size_t v : value) out.U64(v);
          } else {
            out.U64(value.size());
            for (const std::string& s : value) out.String(s);
          }
        }
      },
      setting.access);
}

// Reads one setting; the error says what was wrong with its bytes, the
// caller where they were.
absl::Status ReadSetting(const ModelSetting& setting, ByteReader& in,
                         ModelConfig& c) {
  return std::visit(
      [&](auto access) -> absl::Status {
        using A = decltype(access);
        if constexpr (std::is_same_v<A, ChoiceRef>) {
          const std::uint8_t raw = in.U8();
          if (raw > access.last) {
            return absl::DataLossError(
                absl::StrCat(raw, " is not one of its 0 to ", access.last));
          }
          access.set(c, raw);
        } else {
          auto& value = access(c);
          using T = std::remove_cvref_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::size_t>) {
            value = in.U64();
          } else if constexpr (std::is_same_v<T, double>) {
            value = in.Double();
          } else if constexpr (std::is_same_v<T, bool>) {
            const std::uint8_t raw = in.U8();
            if (raw > 1) {
              return absl::DataLossError(
                  absl::StrCat("a flag must be 0 or 1, got ", raw));
            }
            value = raw == 1;
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            value = in.Doubles();
          } else if constexpr (std::is_same_v<T, std::vector<std::size_t>>) {
            const std::uint64_t n = in.U64();
            if (n > in.remaining() / sizeof(std::uint64_t)) {
              return absl::DataLossError(
                  absl::StrCat(n, " values, more than the bytes left hold"));
            }
            value.resize(n);
            for (std::size_t& v : value) v = in.U64();
          } else {
            const std::uint64_t n = in.U64();
            if (n > in.remaining()) {
              return absl::DataLossError(
                  absl::StrCat(n, " names, more than the bytes left hold"));
            }
            value.resize(n);
            for (std::string& s : value) s = in.String();
          }
        }
        if (!in.ok()) return absl::DataLossError("truncated");
        if (std::optional<std::string> broken =
                BoundsBroken(setting, SettingNumber(setting, c))) {
          return absl::DataLossError(*broken);
        }
        return absl::OkStatus();
      },
      setting.access);
}

// What a model saved before `setting` existed had.
void GiveLegacyValue(const ModelSetting& setting, ModelConfig& c) {
  if (setting.legacy_from != nullptr) {
    SetSettingNumber(setting, static_cast<double>(setting.legacy_from(c)), c);
  } else if (setting.legacy.has_value()) {
    SetSettingNumber(setting, *setting.legacy, c);
  } else {
    static const ModelConfig kDefaults;
    std::visit(
        [&](auto access) {
          if constexpr (std::is_same_v<decltype(access), ChoiceRef>) {
            access.set(c, access.get(kDefaults));
          } else {
            access(c) = Read(access, kDefaults);
          }
        },
        setting.access);
  }
}

}  // namespace

std::span<const ModelSetting> ModelSettings() { return kSettings; }

std::uint32_t ModelConfigVersion() { return kSettings.back().since_version; }

const ModelSetting* FindModelSetting(absl::string_view name) {
  for (const ModelSetting& setting : kSettings) {
    if (setting.name == name) return &setting;
  }
  return nullptr;
}

double SettingNumber(const ModelSetting& setting, const ModelConfig& config) {
  return std::visit(
      [&](auto access) -> double {
        if constexpr (std::is_same_v<decltype(access), ChoiceRef>) {
          return access.get(config);
        } else if constexpr (std::is_arithmetic_v<std::remove_cvref_t<
                                 decltype(Read(access, config))>>) {
          return static_cast<double>(Read(access, config));
        } else {
          return 0.0;  // a list: not a number
        }
      },
      setting.access);
}

void SetSettingNumber(const ModelSetting& setting, double value,
                      ModelConfig& config) {
  std::visit(
      [&](auto access) {
        if constexpr (std::is_same_v<decltype(access), ChoiceRef>) {
          access.set(config, static_cast<std::uint8_t>(value));
        } else {
          auto& field = access(config);
          using T = std::remove_cvref_t<decltype(field)>;
          if constexpr (std::is_same_v<T, bool>) {
            field = value != 0;
          } else if constexpr (std::is_arithmetic_v<T>) {
            field = static_cast<T>(value);
          }
        }
      },
      setting.access);
}

absl::Status ValidateSettingValue(const ModelSetting& setting, double value) {
  if (std::optional<std::string> broken = BoundsBroken(setting, value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting.name, ": ", *broken));
  }
  return absl::OkStatus();
}

absl::Status ValidateSettingBounds(const ModelConfig& config) {
  for (const ModelSetting& setting : kSettings) {
    if (absl::Status status =
            ValidateSettingValue(setting, SettingNumber(setting, config));
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

void SaveConfig(const ModelConfig& config, ByteWriter& out) {
  out.U32(ModelConfigVersion());
  for (const ModelSetting& setting : kSettings) {
    SaveSetting(setting, config, out);
  }
}

absl::Status LoadConfig(ByteReader& in, ModelConfig* config) {
  const std::size_t start = in.position();
  const std::uint32_t version = in.U32();
  if (!in.ok() || version < 1 || version > ModelConfigVersion()) {
    return absl::DataLossError(absl::StrCat(
        "model config: version at byte ", start, ": ", version,
        "; this build reads versions 1 to ", ModelConfigVersion()));
  }
  for (const ModelSetting& setting : kSettings) {
    if (setting.since_version > version) {
      GiveLegacyValue(setting, *config);
      continue;
    }
    const std::size_t offset = in.position();
    if (absl::Status status = ReadSetting(setting, in, *config); !status.ok()) {
      return DataLoss(setting, offset, status.message());
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
