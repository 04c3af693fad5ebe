#ifndef STREAMREG_CORE_EUCLIDEAN_DISTANCE_H_
#define STREAMREG_CORE_EUCLIDEAN_DISTANCE_H_

#include <cmath>
#include <cstddef>

namespace streamreg {

// The one Euclidean distance of the project. Every index and every reference
// (brute force) calls this function, so two of them given the same points
// report bit-identical distances: the summation order is fixed by the code
// (four interleaved partial sums), not left to the optimizer.
inline double EuclideanDistance(const double* a, const double* b,
                                std::size_t dim) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    const double t0 = a[i] - b[i];
    const double t1 = a[i + 1] - b[i + 1];
    const double t2 = a[i + 2] - b[i + 2];
    const double t3 = a[i + 3] - b[i + 3];
    s0 += t0 * t0;
    s1 += t1 * t1;
    s2 += t2 * t2;
    s3 += t3 * t3;
  }
  for (; i < dim; ++i) {
    const double t = a[i] - b[i];
    s0 += t * t;
  }
  return std::sqrt((s0 + s1) + (s2 + s3));
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_EUCLIDEAN_DISTANCE_H_
