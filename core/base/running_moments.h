#ifndef STREAMREG_CORE_BASE_RUNNING_MOMENTS_H_
#define STREAMREG_CORE_BASE_RUNNING_MOMENTS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"

namespace streamreg {

// Running mean and variance of each coordinate of a stream of vectors
// (Welford's update: one pass, numerically stable). The standardization of
// the inputs and the scale of the targets both come from here.
class RunningMoments {
 public:
  explicit RunningMoments(std::size_t dim)
      : mean_(dim, 0.0), sum_squares_(dim, 0.0) {}

  void Add(std::span<const double> value);

  std::size_t dim() const { return mean_.size(); }
  std::uint64_t count() const { return count_; }
  std::span<const double> mean() const { return mean_; }
  // The population variance of coordinate i (0 before two values).
  double Variance(std::size_t i) const;
  // sqrt(Variance(i)), or 1 where that is zero (below 2^-200) or not yet
  // known, so that dividing by it is always defined.
  double ScaleOrOne(std::size_t i) const;

  // The exact state, for snapshots; Load fails on another dimension.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  std::uint64_t count_ = 0;
  std::vector<double> mean_;
  std::vector<double> sum_squares_;  // sum of squared deviations (M2)
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_RUNNING_MOMENTS_H_
