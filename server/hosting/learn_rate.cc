#include "server/hosting/learn_rate.h"

#include <algorithm>
#include <cmath>

namespace streamreg {

void LearnRate::Record(std::uint64_t samples, absl::Duration took) {
  if (samples == 0) return;
  const double n = static_cast<double>(samples);
  // At least a nanosecond a sample: a clock that did not move is not an
  // infinite rate.
  const double per_sample =
      std::max(absl::ToDoubleSeconds(took) / n, kFastestSecondsPerSample);
  // A batch weighs as many samples as it has, against the memory's.
  const double weight = n / (n + kMemorySamples);
  seconds_per_sample_ =
      seconds_per_sample_ == 0.0
          ? per_sample
          : seconds_per_sample_ + weight * (per_sample - seconds_per_sample_);
  if (seconds_per_sample_ > 0.0) {
    samples_per_second_.store(1.0 / seconds_per_sample_,
                              std::memory_order_relaxed);
  }
}

std::uint64_t LearnRate::SamplesIn(absl::Duration wait) const {
  const double rate = samples_per_second();
  if (rate <= 0.0 || wait <= absl::ZeroDuration()) return 0;
  // Bounded, so that a long wait at a high rate is a number (and Admit's
  // sums cannot overflow).
  const double samples =
      std::min(std::floor(rate * absl::ToDoubleSeconds(wait)), 0x1p62);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(samples));
}

}  // namespace streamreg
