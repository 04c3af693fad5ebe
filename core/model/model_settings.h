#ifndef STREAMREG_CORE_MODEL_MODEL_SETTINGS_H_
#define STREAMREG_CORE_MODEL_MODEL_SETTINGS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"
#include "core/model/model_config.h"

namespace streamreg {

// The values a number setting takes: low to high, either end open, and 0
// besides with or_zero (0 switches the setting off; zero_means says how,
// for the error). A real must also be finite.
struct SettingBounds {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false;
  bool high_open = false;
  bool or_zero = false;
  absl::string_view zero_means = "";
};

// Where a setting lives in a ModelConfig. A function returning the field,
// so that a member of a member (capacity.limit) is one too; the table's
// readers never change a setting through a const config.
template <class T>
using SettingRef = T& (*)(ModelConfig&);
// An enum setting, as its number (0 to last).
struct ChoiceRef {
  std::uint8_t (*get)(const ModelConfig&);
  void (*set)(ModelConfig&, std::uint8_t);
  std::uint8_t last;
};
using SettingAccess =
    std::variant<SettingRef<std::size_t>, SettingRef<double>, SettingRef<bool>,
                 ChoiceRef, SettingRef<std::vector<double>>,
                 SettingRef<std::vector<std::size_t>>,
                 SettingRef<std::vector<std::string>>>;

// Where a client sets it: as the field of v1::Tuning of the same name
// (converted by the table alone), elsewhere in v1::ModelSpec (converted by
// hand: server/rpc/spec_conversion.cc), or nowhere (the server's choice).
enum class SettingWire : std::uint8_t { kTuning, kSpec, kNone };

// One setting of a ModelConfig as every reader of settings sees it — its
// validation, its encoding in logs and snapshots, its conversion from and
// to the wire: its name (as errors and the wire call it), where it is kept,
// its bounds (numbers; other rules are CompleteAndValidate's), the config
// version that first saved it, and what a model saved before then had
// (legacy; unset: the default; legacy_from: computed from the settings
// loaded before it). Its default is ModelConfig's initializer.
struct ModelSetting {
  absl::string_view name;
  SettingAccess access;
  SettingWire wire = SettingWire::kNone;
  std::optional<SettingBounds> bounds = std::nullopt;
  std::uint32_t since_version = 1;
  std::optional<double> legacy = std::nullopt;
  std::size_t (*legacy_from)(const ModelConfig&) = nullptr;
};

// Every saved setting of a ModelConfig, in the order of its encoding: a new
// setting goes at the end, with the next version.
std::span<const ModelSetting> ModelSettings();
// The version SaveConfig writes: the last setting's since_version.
std::uint32_t ModelConfigVersion();
// The setting named `name`, or null.
const ModelSetting* FindModelSetting(absl::string_view name);

// A number setting (count, real, flag or choice) as a double, and set from
// one (a count or choice truncated; a flag is value != 0).
double SettingNumber(const ModelSetting& setting, const ModelConfig& config);
void SetSettingNumber(const ModelSetting& setting, double value,
                      ModelConfig& config);

// Whether every number setting with bounds is within them:
// INVALID_ARGUMENT naming the first that is not ("step_ratio: must be in
// (0, 4], got 5").
absl::Status ValidateSettingBounds(const ModelConfig& config);
// `value` against one setting's bounds, with the same message.
absl::Status ValidateSettingValue(const ModelSetting& setting, double value);

// Every setting, exactly (doubles by their bits), after the version: the
// create record of a model's log and its snapshots. LoadConfig reads any
// version up to this one, giving a setting saved since a later version its
// legacy value; DATA_LOSS names the setting and its byte offset in the
// encoding ("model config: k_grid at byte 120: truncated").
void SaveConfig(const ModelConfig& config, ByteWriter& out);
absl::Status LoadConfig(ByteReader& in, ModelConfig* config);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_SETTINGS_H_
