#ifndef STREAMREG_TESTS_SUPPORT_RANDOM_VECTOR_H_
#define STREAMREG_TESTS_SUPPORT_RANDOM_VECTOR_H_

#include <cstddef>
#include <random>
#include <vector>

namespace streamreg {

// A vector of `d` standard normal draws.
inline std::vector<double> RandomVector(std::size_t d,
                                        std::mt19937_64& random) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(d);
  for (double& x : v) x = normal(random);
  return v;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_RANDOM_VECTOR_H_
