#ifndef STREAMREG_TESTS_SUPPORT_SERVICE_TEST_SUPPORT_H_
#define STREAMREG_TESTS_SUPPORT_SERVICE_TEST_SUPPORT_H_

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "streamreg/v1/model.pb.h"
#include "tests/support/fresh_directory.h"

namespace streamreg {

// d = 3 inputs, m = 2 targets: y0 = sin(2 x0) + x1 / 2, y1 = x2^2, with x
// uniform in [-1, 1]^3.
struct Rows {
  static constexpr std::size_t kDim = 3;
  static constexpr std::size_t kTargets = 2;
  std::vector<double> x, y;

  Rows(std::size_t n, unsigned seed) : x(n * kDim), y(n * kTargets) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (double& value : x) value = uniform(random);
    for (std::size_t i = 0; i < n; ++i) {
      const double* p = &x[i * kDim];
      y[i * kTargets] = std::sin(2 * p[0]) + p[1] / 2;
      y[i * kTargets + 1] = p[2] * p[2];
    }
  }
  std::size_t size() const { return y.size() / kTargets; }
  std::span<const double> input(std::size_t i) const {
    return {x.data() + i * kDim, kDim};
  }
  std::span<const double> target(std::size_t i) const {
    return {y.data() + i * kTargets, kTargets};
  }
  std::span<const double> inputs(std::size_t begin, std::size_t end) const {
    return {x.data() + begin * kDim, (end - begin) * kDim};
  }
};

inline v1::ModelSpec RowsSpec(v1::Metric metric = v1::METRIC_GRADIENT_WEIGHTS) {
  v1::ModelSpec spec;
  spec.set_input_dim(Rows::kDim);
  spec.add_target_names("wave");
  spec.add_target_names("square");
  spec.set_metric(metric);
  return spec;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SERVICE_TEST_SUPPORT_H_
