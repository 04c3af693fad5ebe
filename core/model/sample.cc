#include "core/model/sample.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace streamreg {

absl::Status ValidateValues(std::span<const double> values,
                            std::size_t expected, absl::string_view field) {
  if (values.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": has ", values.size(),
                     " values, the model expects ", expected));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isnan(v)) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]: NaN"));
    }
    if (!(std::fabs(v) <= kMaxValueMagnitude)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "]: ", v, " is not finite or beyond +-2^200"));
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
