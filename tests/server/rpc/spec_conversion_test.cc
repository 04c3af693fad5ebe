// The wire's ModelSpec and the engine's ModelConfig
// (server/rpc/spec_conversion.h): every setting of v1::Tuning converted by
// the settings table, both ways, with errors named by their wire path.
#include "server/rpc/spec_conversion.h"

#include <cmath>
#include <set>
#include <string>
#include <variant>

#include "core/model/model_settings.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using google::protobuf::FieldDescriptor;
using ::testing::StartsWith;

v1::ModelSpec SmallSpec() {
  v1::ModelSpec spec;
  spec.set_input_dim(8);
  spec.add_target_names("torque");
  return spec;
}

const FieldDescriptor* TuningField(const ModelSetting& setting) {
  return v1::Tuning::descriptor()->FindFieldByName(std::string(setting.name));
}

// SmallSpec with the Tuning field of `setting` set to `value`.
v1::ModelSpec SpecWith(const ModelSetting& setting, double value) {
  v1::ModelSpec spec = SmallSpec();
  const FieldDescriptor* field = TuningField(setting);
  v1::Tuning& tuning = *spec.mutable_tuning();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      tuning.GetReflection()->SetDouble(&tuning, field, value);
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      tuning.GetReflection()->SetBool(&tuning, field, value != 0.0);
      break;
    default:
      tuning.GetReflection()->SetUInt32(&tuning, field,
                                        static_cast<std::uint32_t>(value));
  }
  return spec;
}

// The Tuning field of `setting` in `spec`, as a number (a flag: 1 or 0).
double WireNumber(const v1::ModelSpec& spec, const ModelSetting& setting) {
  const FieldDescriptor* field = TuningField(setting);
  const v1::Tuning& tuning = spec.tuning();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return tuning.GetReflection()->GetDouble(tuning, field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return tuning.GetReflection()->GetBool(tuning, field) ? 1.0 : 0.0;
    default:
      return tuning.GetReflection()->GetUInt32(tuning, field);
  }
}

// The wire type a setting of the table is sent as: a double, a flag or a
// count.
FieldDescriptor::CppType WireType(const ModelSetting& setting) {
  if (std::holds_alternative<SettingRef<double>>(setting.access)) {
    return FieldDescriptor::CPPTYPE_DOUBLE;
  }
  if (std::holds_alternative<SettingRef<bool>>(setting.access)) {
    return FieldDescriptor::CPPTYPE_BOOL;
  }
  return FieldDescriptor::CPPTYPE_UINT32;
}

TEST(SpecConversionTest, EveryTuningFieldIsASettingOfTheTableAndBack) {
  const google::protobuf::Descriptor& tuning = *v1::Tuning::descriptor();
  std::set<std::string> fields;
  for (int f = 0; f < tuning.field_count(); ++f) {
    const FieldDescriptor& field = *tuning.field(f);
    if (field.name() == "gradient_estimator") continue;  // an enum, by hand
    fields.insert(field.name());
    const ModelSetting* setting = FindModelSetting(field.name());
    ASSERT_NE(setting, nullptr) << field.name();
    EXPECT_EQ(setting->wire, SettingWire::kTuning) << field.name();
    // Presence, so that unset means the default; a number the table
    // converts.
    EXPECT_TRUE(field.has_presence()) << field.name();
    EXPECT_EQ(field.cpp_type(), WireType(*setting)) << field.name();
  }
  for (const ModelSetting& setting : ModelSettings()) {
    if (setting.wire == SettingWire::kTuning) {
      EXPECT_TRUE(fields.contains(std::string(setting.name))) << setting.name;
    }
  }
}

// A value of `setting` other than the default that a model takes: the
// other one for a flag, the default +1 for a count, half or 1.5 times it
// for a real.
double AnotherValidValue(const ModelSetting& setting, double default_value) {
  if (std::holds_alternative<SettingRef<bool>>(setting.access)) {
    return default_value == 0.0 ? 1.0 : 0.0;
  }
  if (!std::holds_alternative<SettingRef<double>>(setting.access)) {
    return default_value + 1;
  }
  for (const double candidate : {default_value * 0.5, default_value * 1.5}) {
    if (candidate != default_value &&
        ValidateSettingValue(setting, candidate).ok()) {
      return candidate;
    }
  }
  return default_value + 0.5;
}

TEST(SpecConversionTest, EachTuningSettingReachesTheConfigAndComesBack) {
  const absl::StatusOr<ModelConfig> defaults = ConfigFromSpec(SmallSpec());
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  // Unset, the spec in effect says the defaults.
  const v1::ModelSpec in_effect = SpecFromConfig(*defaults);
  const absl::StatusOr<ModelConfig> again = ConfigFromSpec(in_effect);
  ASSERT_TRUE(again.ok()) << again.status();
  for (const ModelSetting& setting : ModelSettings()) {
    EXPECT_EQ(SettingNumber(setting, *again), SettingNumber(setting, *defaults))
        << setting.name;
  }
  for (const ModelSetting& setting : ModelSettings()) {
    if (setting.wire != SettingWire::kTuning) continue;
    const double value =
        AnotherValidValue(setting, SettingNumber(setting, *defaults));
    const absl::StatusOr<ModelConfig> config =
        ConfigFromSpec(SpecWith(setting, value));
    ASSERT_TRUE(config.ok()) << setting.name << ": " << config.status();
    EXPECT_EQ(SettingNumber(setting, *config), value) << setting.name;
    EXPECT_EQ(WireNumber(SpecFromConfig(*config), setting), value)
        << setting.name;
  }
}

TEST(SpecConversionTest, AValueOutOfBoundsIsNamedByItsWirePath) {
  for (const ModelSetting& setting : ModelSettings()) {
    if (setting.wire != SettingWire::kTuning || !setting.bounds) continue;
    const SettingBounds& bounds = *setting.bounds;
    const double outside = std::isfinite(bounds.high) ? bounds.high + 1
                           : bounds.low_open          ? bounds.low
                                                      : bounds.low - 1;
    const absl::StatusOr<ModelConfig> config =
        ConfigFromSpec(SpecWith(setting, outside));
    ASSERT_FALSE(config.ok()) << setting.name;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(config.status().message()),
                StartsWith(absl::StrCat("spec.tuning.", setting.name, ": ")));
  }
  // Settings elsewhere in the spec keep their own paths.
  v1::ModelSpec spec = SmallSpec();
  spec.set_interval_level(1.5);
  EXPECT_THAT(std::string(ConfigFromSpec(spec).status().message()),
              StartsWith("spec.interval_level: must be in (0, 1)"));
  spec = SmallSpec();
  spec.mutable_random_feature_base()->add_ridges(-1);
  EXPECT_THAT(std::string(ConfigFromSpec(spec).status().message()),
              StartsWith("spec.random_feature_base.ridges[0]: "));
}

}  // namespace
}  // namespace streamreg
