#ifndef STREAMREG_TESTS_SUPPORT_MLKR_DATA_H_
#define STREAMREG_TESTS_SUPPORT_MLKR_DATA_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/metric/mlkr_objective.h"

namespace streamreg {

// Samples for MLKR's tests, as MlkrSamples views them.
struct Data {
  std::size_t n, d, m;
  std::vector<double> x, y;
  MlkrSamples samples() const { return {n, d, m, x, y}; }
};

// n points uniform in [-1.7, 1.7]^d (about unit variance); targets
// y_0 = sin(2 x_0) + x_1^2 and, if m > 1, y_1 = x_0 x_1, plus noise.
inline Data MakeData(std::size_t n, std::size_t d, std::size_t m,
                     std::uint64_t seed, double noise = 0.01) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.7, 1.7);
  std::normal_distribution<double> normal(0.0, noise);
  Data data{n, d, m, {}, {}};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) data.x.push_back(uniform(random));
    const double* x = data.x.data() + i * d;
    data.y.push_back(std::sin(2.0 * x[0]) + x[1] * x[1] + normal(random));
    if (m > 1) data.y.push_back(x[0] * x[1] + normal(random));
  }
  return data;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_MLKR_DATA_H_
