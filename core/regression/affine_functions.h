#ifndef STREAMREG_CORE_REGRESSION_AFFINE_FUNCTIONS_H_
#define STREAMREG_CORE_REGRESSION_AFFINE_FUNCTIONS_H_

#include <cstddef>
#include <span>
#include <vector>

namespace streamreg {

// m affine functions of the same d inputs, f_t(x) = a_t + sum_j b_jt x_j,
// laid out to be evaluated together: the linear base's value at a point,
// which a prediction takes at each of its neighbours (OnlineRidge).
//
// Each value is a_t + ((s_0 + s_1) + (s_2 + s_3)), where s_r sums b_jt x_j
// over the j = r mod 4 in the inputs' order, one product rounded and then
// added at a time: the targets are a vector's lanes, so the bits are the
// same on every x86-64 CPU, with AVX2 or without.
class AffineFunctions {
 public:
  AffineFunctions() = default;

  // a_t = intercepts[t], b_jt = slopes[t * d + j] (function-major: f_t's
  // slopes together), m = intercepts.size() and d = slopes.size() / m.
  void Assign(std::span<const double> intercepts,
              std::span<const double> slopes);

  std::size_t num_functions() const { return num_functions_; }

  // out[t] = f_t(x) for t < m, with the widest vectors the CPU runs; x has
  // d coordinates and out at least m entries.
  void Evaluate(std::span<const double> x, std::span<double> out) const;

  // The same with SSE2's vectors (every x86-64 CPU's), and with AVX2's
  // (only where RunsAvx2(), core/base/vector_lanes.h): for tests that the
  // two give the same bits.
  void EvaluatePortable(std::span<const double> x, std::span<double> out) const;
  void EvaluateAvx2(std::span<const double> x, std::span<double> out) const;

 private:
  std::size_t num_functions_ = 0;
  std::size_t dim_ = 0;
  // m rounded up to whole vectors.
  std::size_t stride_ = 0;
  // Row j < d holds b_jt for every t, row d the intercepts; each row padded
  // with zeros to `stride_`.
  std::vector<double> rows_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_AFFINE_FUNCTIONS_H_
