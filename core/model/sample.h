#ifndef STREAMREG_CORE_MODEL_SAMPLE_H_
#define STREAMREG_CORE_MODEL_SAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// The largest input or target magnitude a model accepts (so that no sum or
// standardized coordinate can overflow).
inline constexpr double kMaxValueMagnitude = 0x1p200;

// One labelled sample: d inputs, m targets, and the caller's id for it.
struct Sample {
  std::span<const double> x;
  std::span<const double> y;
  std::uint64_t sample_id = 0;
};

// Checks one vector of a sample or query: `expected` values, each finite
// and within kMaxValueMagnitude. `field` (e.g. "samples[3].x") names it in
// the error: "samples[3].x[1]: NaN".
absl::Status ValidateValues(std::span<const double> values,
                            std::size_t expected, absl::string_view field);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_SAMPLE_H_
