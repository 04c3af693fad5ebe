#ifndef STREAMREG_CORE_INDEX_POINT_VALIDATION_H_
#define STREAMREG_CORE_INDEX_POINT_VALIDATION_H_

#include <cstddef>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// The largest coordinate magnitude an index accepts. Squared differences of
// coordinates below it cannot overflow a double for any dimension up to 2^20,
// so every distance stays finite.
inline constexpr double kMaxCoordinateMagnitude = 0x1p500;

// Checks that `point` has `dim` coordinates, each finite and within
// kMaxCoordinateMagnitude. `what` names the point in the error message, e.g.
// "point id 17" or "query".
absl::Status ValidatePoint(std::span<const double> point, std::size_t dim,
                           absl::string_view what);

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_POINT_VALIDATION_H_
