#ifndef STREAMREG_CORE_BASE_ENUM_NAMES_H_
#define STREAMREG_CORE_BASE_ENUM_NAMES_H_

#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// Parses the name of a configuration choice (a kernel, a metric, ...): the
// value among `values` whose `name_of` equals `name`, or InvalidArgument
// naming `field`, the name given and the names expected.
template <class Enum>
absl::StatusOr<Enum> ParseEnumName(absl::string_view field,
                                   absl::string_view name,
                                   std::initializer_list<Enum> values,
                                   absl::string_view (*name_of)(Enum)) {
  std::string expected;
  for (Enum value : values) {
    if (name_of(value) == name) return value;
    absl::StrAppend(&expected, expected.empty() ? "" : ", ", name_of(value));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": unknown value '", name, "' (expected one of ", expected, ")"));
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_ENUM_NAMES_H_
