// The table of a ModelConfig's settings (core/model/model_settings.h): its
// rows, their bounds, and the encoding that reads them, checked against
// the table itself and against damaged bytes.
#include "core/model/model_settings.h"

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Encoded(const ModelConfig& config) {
  std::string bytes;
  ByteWriter writer(&bytes);
  SaveConfig(config, writer);
  return bytes;
}

// The bytes of one setting's value in an encoding.
std::size_t EncodedSize(const ModelSetting& setting,
                        const ModelConfig& config) {
  return std::visit(
      [&](auto access) -> std::size_t {
        if constexpr (std::is_same_v<decltype(access), ChoiceRef>) {
          return 1;
        } else {
          ModelConfig copy = config;
          const auto& value = access(copy);
          using T = std::remove_cvref_t<decltype(value)>;
          if constexpr (std::is_same_v<T, bool>) {
            return 1;
          } else if constexpr (std::is_arithmetic_v<T>) {
            return 8;
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            std::size_t size = 8;
            for (const std::string& s : value) size += 8 + s.size();
            return size;
          } else {
            return 8 + 8 * value.size();
          }
        }
      },
      setting.access);
}

// Where each setting's bytes start in `config`'s encoding (after the
// 4-byte version), then where the last ends.
std::vector<std::size_t> SettingOffsets(const ModelConfig& config) {
  std::vector<std::size_t> offsets;
  std::size_t at = sizeof(std::uint32_t);
  for (const ModelSetting& setting : ModelSettings()) {
    offsets.push_back(at);
    at += EncodedSize(setting, config);
  }
  offsets.push_back(at);
  EXPECT_EQ(at, Encoded(config).size());
  return offsets;
}

TEST(ModelSettingsTest, NamesAreUniqueAndVersionsOnlyGrowToTheCurrentOne) {
  std::set<absl::string_view> names;
  std::uint32_t version = 1;
  for (const ModelSetting& setting : ModelSettings()) {
    EXPECT_TRUE(names.insert(setting.name).second) << setting.name;
    EXPECT_GE(setting.since_version, version) << setting.name;
    version = setting.since_version;
    EXPECT_EQ(FindModelSetting(setting.name), &setting);
    // A setting added after the first version says what older models had.
    if (setting.since_version == 1) {
      EXPECT_FALSE(setting.legacy.has_value()) << setting.name;
    }
  }
  EXPECT_EQ(version, ModelConfigVersion());
  EXPECT_EQ(FindModelSetting("no_such_setting"), nullptr);
}

TEST(ModelSettingsTest, TheDefaultsAreWithinTheirBounds) {
  ModelConfig config = BaseConfig();
  EXPECT_TRUE(ValidateSettingBounds(config).ok());
  EXPECT_TRUE(CompleteAndValidate(&config).ok());
}

// A value just outside a setting's bounds: above the top, or below the
// bottom (at an open bottom), and not 0 where 0 is allowed.
double JustOutside(const SettingBounds& bounds) {
  if (std::isfinite(bounds.high)) return bounds.high + 1;
  return bounds.low_open ? bounds.low : bounds.low - 1;
}

TEST(ModelSettingsTest, EveryBoundIsEnforcedAndTheErrorNamesTheSetting) {
  int bounded = 0;
  for (const ModelSetting& setting : ModelSettings()) {
    if (!setting.bounds.has_value()) continue;
    ++bounded;
    const double outside = JustOutside(*setting.bounds);
    ModelConfig config = BaseConfig();
    SetSettingNumber(setting, outside, config);
    const absl::Status status = CompleteAndValidate(&config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << setting.name;
    EXPECT_THAT(std::string(status.message()),
                StartsWith(absl::StrCat(setting.name, ": ")));
    EXPECT_THAT(std::string(status.message()), HasSubstr("got"));
    // NaN is outside every real's bounds.
    if (std::holds_alternative<SettingRef<double>>(setting.access)) {
      SetSettingNumber(setting, std::nan(""), config);
      EXPECT_FALSE(ValidateSettingBounds(config).ok()) << setting.name;
    }
    if (setting.bounds->or_zero) {
      EXPECT_TRUE(ValidateSettingValue(setting, 0).ok()) << setting.name;
    }
  }
  EXPECT_GE(bounded, 20);
}

TEST(ModelSettingsTest, ATruncatedEncodingNamesTheSettingAndItsByte) {
  ModelConfig config = BaseConfig();
  config.random_feature_lengthscales = {0.5, 1.5};
  ASSERT_TRUE(CompleteAndValidate(&config).ok());
  const std::string bytes = Encoded(config);
  const std::vector<std::size_t> offsets = SettingOffsets(config);
  const std::span<const ModelSetting> settings = ModelSettings();
  ASSERT_EQ(offsets.size(), settings.size() + 1);
  for (std::size_t cut = 4; cut < bytes.size(); ++cut) {
    // The setting whose bytes the cut falls in.
    std::size_t s = 0;
    while (offsets[s + 1] <= cut) ++s;
    ByteReader reader(absl::string_view(bytes).substr(0, cut));
    ModelConfig read;
    const absl::Status status = LoadConfig(reader, &read);
    ASSERT_EQ(status.code(), absl::StatusCode::kDataLoss) << cut;
    EXPECT_THAT(std::string(status.message()),
                StartsWith(absl::StrCat("model config: ", settings[s].name,
                                        " at byte ", offsets[s], ": ")))
        << cut;
  }
  ByteReader whole(bytes);
  ModelConfig read;
  EXPECT_TRUE(LoadConfig(whole, &read).ok());
  EXPECT_EQ(Encoded(read), bytes);
}

TEST(ModelSettingsTest, ADamagedValueNamesTheSettingItsByteAndTheRule) {
  ModelConfig config = BaseConfig();
  ASSERT_TRUE(CompleteAndValidate(&config).ok());
  const std::vector<std::size_t> offsets = SettingOffsets(config);
  const auto load = [](const std::string& bytes) {
    ByteReader reader(bytes);
    ModelConfig read;
    return LoadConfig(reader, &read);
  };
  const auto index = [](absl::string_view name) {
    return static_cast<std::size_t>(FindModelSetting(name) -
                                    ModelSettings().data());
  };
  std::string bytes = Encoded(config);
  // An enum past its last value.
  bytes[offsets[index("metric")]] = 9;
  EXPECT_EQ(
      load(bytes).message(),
      absl::StrCat("model config: metric at byte ", offsets[index("metric")],
                   ": 9 is not one of its 0 to 5"));
  // A flag that is neither 0 nor 1.
  bytes = Encoded(config);
  bytes[offsets[index("linear_base")]] = 2;
  EXPECT_EQ(load(bytes).message(),
            absl::StrCat("model config: linear_base at byte ",
                         offsets[index("linear_base")],
                         ": a flag must be 0 or 1, got 2"));
  // A count outside its bounds.
  bytes = Encoded(config);
  std::memset(bytes.data() + offsets[index("max_scoring_stride")], 0, 8);
  EXPECT_EQ(
      load(bytes).message(),
      absl::StrCat("model config: max_scoring_stride at byte ",
                   offsets[index("max_scoring_stride")], ": 1 to 1024, got 0"));
  // A count past every bound, past what a double holds exactly too.
  bytes = Encoded(config);
  std::memset(bytes.data() + offsets[index("max_scoring_stride")], 0xff, 8);
  EXPECT_EQ(load(bytes).message(),
            absl::StrCat("model config: max_scoring_stride at byte ",
                         offsets[index("max_scoring_stride")],
                         ": 1 to 1024, got 1.84467e+19"));
  // A version this build does not read.
  bytes = Encoded(config);
  bytes[0] = 99;
  EXPECT_THAT(std::string(load(bytes).message()),
              StartsWith("model config: version at byte 0: 99"));
}

TEST(ModelSettingsTest, AnOlderEncodingGivesEachLaterSettingItsLegacyValue) {
  ModelConfig config = BaseConfig();
  config.mlkr_fit_budget = 6000;
  config.mlkr_fit_steps = 30;
  ASSERT_TRUE(CompleteAndValidate(&config).ok());
  const std::vector<std::size_t> offsets = SettingOffsets(config);
  const std::span<const ModelSetting> settings = ModelSettings();
  for (std::uint32_t version = 1; version < ModelConfigVersion(); ++version) {
    // The encoding of `version`: the rows it had, under its number.
    std::size_t end = 0;
    while (end < settings.size() && settings[end].since_version <= version) {
      ++end;
    }
    std::string bytes = Encoded(config).substr(0, offsets[end]);
    std::memcpy(bytes.data(), &version, sizeof version);
    ByteReader reader(bytes);
    ModelConfig read;
    ASSERT_TRUE(LoadConfig(reader, &read).ok()) << version;
    EXPECT_TRUE(reader.done());
    const ModelConfig defaults;
    for (std::size_t s = end; s < settings.size(); ++s) {
      const ModelSetting& setting = settings[s];
      const double expected =
          setting.legacy_from != nullptr
              ? static_cast<double>(setting.legacy_from(read))
          : setting.legacy.has_value() ? *setting.legacy
                                       : SettingNumber(setting, defaults);
      EXPECT_EQ(SettingNumber(setting, read), expected)
          << setting.name << " in version " << version;
    }
  }
}

}  // namespace
}  // namespace streamreg
