#include "core/regression/affine_functions.h"

#include <algorithm>

#include "core/base/vector_lanes.h"

namespace streamreg {
namespace {

// The values of a vector of functions, their rows' entries from column c
// on: four partial sums, of the inputs j = 0, 1, 2 and 3 mod 4, so that
// four chains of additions run side by side.
[[gnu::always_inline]] inline void EvaluateLanes(const double* rows,
                                                 std::size_t stride,
                                                 std::size_t c, const double* x,
                                                 std::size_t d, Lanes& value) {
  Lanes s0 = {}, s1 = {}, s2 = {}, s3 = {};
  const auto add = [&](std::size_t j, Lanes& sum) {
    Lanes slopes;
    LoadLanes(rows + j * stride + c, slopes);
    sum += x[j] * slopes;
  };
  std::size_t j = 0;
  for (; j + 4 <= d; j += 4) {
    add(j, s0);
    add(j + 1, s1);
    add(j + 2, s2);
    add(j + 3, s3);
  }
  if (j < d) add(j, s0);
  if (j + 1 < d) add(j + 1, s1);
  if (j + 2 < d) add(j + 2, s2);
  Lanes intercept;
  LoadLanes(rows + d * stride + c, intercept);
  value = intercept + ((s0 + s1) + (s2 + s3));
}

[[gnu::always_inline]] inline void EvaluateAll(const double* rows,
                                               std::size_t stride,
                                               const double* x, std::size_t d,
                                               std::span<double> out) {
  const std::size_t m = out.size();
  std::size_t c = 0;
  for (; c + kLanes <= m; c += kLanes) {
    Lanes value;
    EvaluateLanes(rows, stride, c, x, d, value);
    StoreLanes(value, out.data() + c);
  }
  if (c < m) {
    // The last vector's padding lanes are computed and dropped.
    Lanes value;
    EvaluateLanes(rows, stride, c, x, d, value);
    double lanes[kLanes];
    StoreLanes(value, lanes);
    std::copy(lanes, lanes + (m - c), out.data() + c);
  }
}

}  // namespace

void AffineFunctions::Assign(std::span<const double> intercepts,
                             std::span<const double> slopes) {
  num_functions_ = intercepts.size();
  stride_ = (num_functions_ + kLanes - 1) / kLanes * kLanes;
  dim_ = num_functions_ == 0 ? 0 : slopes.size() / num_functions_;
  const std::size_t d = dim_;
  rows_.assign((d + 1) * stride_, 0.0);
  for (std::size_t t = 0; t < num_functions_; ++t) {
    for (std::size_t j = 0; j < d; ++j) {
      rows_[j * stride_ + t] = slopes[t * d + j];
    }
  }
  std::copy(intercepts.begin(), intercepts.end(), rows_.data() + d * stride_);
}

void AffineFunctions::EvaluatePortable(std::span<const double> x,
                                       std::span<double> out) const {
  EvaluateAll(rows_.data(), stride_, x.data(), dim_, out.first(num_functions_));
}

STREAMREG_FOR_AVX2 void AffineFunctions::EvaluateAvx2(
    std::span<const double> x, std::span<double> out) const {
  EvaluateAll(rows_.data(), stride_, x.data(), dim_, out.first(num_functions_));
}

void AffineFunctions::Evaluate(std::span<const double> x,
                               std::span<double> out) const {
  if (RunsAvx2()) {
    EvaluateAvx2(x, out);
  } else {
    EvaluatePortable(x, out);
  }
}

}  // namespace streamreg
