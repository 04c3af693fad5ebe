#include "client/cli/tuning_flag.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "google/protobuf/descriptor.h"

namespace streamreg {
namespace {

using google::protobuf::FieldDescriptor;

std::string KnownSettings() {
  std::string names;
  const google::protobuf::Descriptor& tuning = *v1::Tuning::descriptor();
  for (int f = 0; f < tuning.field_count(); ++f) {
    absl::StrAppend(&names, f == 0 ? "" : ", ", tuning.field(f)->name());
  }
  return names;
}

// The prefix of an enum's value names in lower case: GradientEstimator's
// values are GRADIENT_ESTIMATOR_*, so "gradient_estimator_".
std::string ValuePrefix(const google::protobuf::EnumDescriptor& type) {
  std::string prefix;
  for (char c : type.name()) {
    if (absl::ascii_isupper(c) && !prefix.empty()) prefix += '_';
    prefix += absl::ascii_tolower(c);
  }
  return prefix + "_";
}

// The enum value named `text`: its full name, or the rest of it in lower
// case (GRADIENT_ESTIMATOR_LOCAL_LINEAR, local_linear).
const google::protobuf::EnumValueDescriptor* EnumValueNamed(
    const FieldDescriptor& field, const std::string& text) {
  const google::protobuf::EnumDescriptor& type = *field.enum_type();
  const std::string short_name = ValuePrefix(type) + text;
  for (int v = 0; v < type.value_count(); ++v) {
    const std::string& full = type.value(v)->name();
    if (text == full || absl::AsciiStrToLower(full) == short_name) {
      return type.value(v);
    }
  }
  return nullptr;
}

absl::Status SetField(const FieldDescriptor& field, const std::string& text,
                      v1::Tuning* tuning) {
  const google::protobuf::Reflection& wire = *tuning->GetReflection();
  const auto bad_value = [&](absl::string_view expected) {
    return UsageError(absl::StrCat("--tuning: ", field.name(), "='", text,
                                   "' is not ", expected));
  };
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double number = 0;
      if (!absl::SimpleAtod(text, &number)) return bad_value("a number");
      wire.SetDouble(tuning, &field, number);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      std::uint32_t count = 0;
      if (!absl::SimpleAtoi(text, &count)) {
        return bad_value("a count (0 to 4294967295)");
      }
      wire.SetUInt32(tuning, &field, count);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool flag = false;
      if (!absl::SimpleAtob(text, &flag)) return bad_value("true or false");
      wire.SetBool(tuning, &field, flag);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const google::protobuf::EnumValueDescriptor* value =
          EnumValueNamed(field, text);
      if (value == nullptr) {
        return bad_value(
            absl::StrCat("one of ", field.enum_type()->name(), "'s values"));
      }
      wire.SetEnum(tuning, &field, value);
      return absl::OkStatus();
    }
    default:
      return bad_value("settable from the command line");
  }
}

}  // namespace

absl::Status ParseTuning(const std::vector<std::string>& settings,
                         v1::Tuning* tuning) {
  for (const std::string& setting : settings) {
    const std::pair<std::string, std::string> name_value =
        absl::StrSplit(setting, absl::MaxSplits('=', 1));
    const auto& [name, value] = name_value;
    if (setting.find('=') == std::string::npos || value.empty()) {
      return UsageError(
          absl::StrCat("--tuning: '", setting, "' is not name=value"));
    }
    const FieldDescriptor* field =
        v1::Tuning::descriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return UsageError(absl::StrCat("--tuning: no setting '", name,
                                     "' (the settings: ", KnownSettings(),
                                     ")"));
    }
    if (absl::Status status = SetField(*field, value, tuning); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
