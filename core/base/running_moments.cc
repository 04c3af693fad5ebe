#include "core/base/running_moments.h"

#include <cmath>

namespace streamreg {

void RunningMoments::Add(std::span<const double> value) {
  ++count_;
  const double inverse_count = 1.0 / static_cast<double>(count_);
  for (std::size_t i = 0; i < mean_.size(); ++i) {
    const double delta = value[i] - mean_[i];
    mean_[i] += delta * inverse_count;
    sum_squares_[i] += delta * (value[i] - mean_[i]);
  }
}

double RunningMoments::Variance(std::size_t i) const {
  if (count_ < 2) return 0.0;
  return sum_squares_[i] / static_cast<double>(count_);
}

double RunningMoments::ScaleOrOne(std::size_t i) const {
  // Scales too small to divide by safely (below 2^-200) count as unknown.
  const double scale = std::sqrt(Variance(i));
  return scale > 0x1p-200 && std::isfinite(scale) ? scale : 1.0;
}

}  // namespace streamreg

namespace streamreg {

void RunningMoments::Save(ByteWriter& out) const {
  out.U64(count_);
  out.Doubles(mean_);
  out.Doubles(sum_squares_);
}

bool RunningMoments::Load(ByteReader& in) {
  count_ = in.U64();
  return in.DoublesOfSize(&mean_) && in.DoublesOfSize(&sum_squares_);
}

}  // namespace streamreg
