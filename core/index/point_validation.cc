#include "core/index/point_validation.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace streamreg {

absl::Status ValidatePoint(std::span<const double> point, std::size_t dim,
                           absl::string_view what) {
  if (point.size() != dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": has ", point.size(), " coordinates, the index has ", dim));
  }
  for (std::size_t i = 0; i < dim; ++i) {
    const double v = point[i];
    if (std::isnan(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": coordinate ", i, " is NaN"));
    }
    if (!(std::fabs(v) <= kMaxCoordinateMagnitude)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": coordinate ", i, " is ", v, ", outside [-2^500, 2^500]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
