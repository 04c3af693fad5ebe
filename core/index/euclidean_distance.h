#ifndef STREAMREG_CORE_INDEX_EUCLIDEAN_DISTANCE_H_
#define STREAMREG_CORE_INDEX_EUCLIDEAN_DISTANCE_H_

#include <cmath>
#include <cstddef>
#include <limits>

#include "core/index/diagonal_map.h"

namespace streamreg {
namespace internal {

// Sum of squared differences between a and the point whose coordinate i
// is b(i), in a fixed order: four interleaved partial sums over blocks of
// four coordinates, then the tail into the first, combined as
// (s0 + s1) + (s2 + s3). With kStopAbove, returns early (with a value above
// stop_above) once the sum so far exceeds stop_above; the partial sums only
// grow, so an early return never hides a sum at or below it.
template <bool kStopAbove, class Coordinate>
[[gnu::always_inline]] inline double SquaredDistance(const double* a,
                                                     const Coordinate& b,
                                                     std::size_t dim,
                                                     double stop_above) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    const double t0 = a[i] - b(i);
    const double t1 = a[i + 1] - b(i + 1);
    const double t2 = a[i + 2] - b(i + 2);
    const double t3 = a[i + 3] - b(i + 3);
    s0 += t0 * t0;
    s1 += t1 * t1;
    s2 += t2 * t2;
    s3 += t3 * t3;
    if constexpr (kStopAbove) {
      if ((i & 4) != 0 && (s0 + s1) + (s2 + s3) > stop_above) {
        return std::numeric_limits<double>::infinity();
      }
    }
  }
  for (; i < dim; ++i) {
    const double t = a[i] - b(i);
    s0 += t * t;
  }
  return (s0 + s1) + (s2 + s3);
}

// The early-stop threshold on the squared sum for a distance limit: a
// relative margin of 1e-11 so that rounding never turns a distance equal to
// `limit` into a rejection.
inline double StopAbove(double limit) {
  const double margin = limit * (1.0 + 1e-11);
  return margin * margin;
}

}  // namespace internal

// The one Euclidean distance of the project. Every index and every reference
// (brute force) calls this function, so two of them given the same points
// report bit-identical distances: the summation order is fixed by the code,
// not left to the optimizer.
inline double EuclideanDistance(const double* a, const double* b,
                                std::size_t dim) {
  return std::sqrt(internal::SquaredDistance<false>(
      a, [b](std::size_t i) { return b[i]; }, dim, 0.0));
}

// EuclideanDistance(a, b, dim) when that is at most `limit`; otherwise any
// value above `limit` (+infinity when it stops early, having read only part
// of the coordinates). Searches use it for candidates that a bound will
// likely reject. The early stop keeps a relative margin of 1e-11 so that
// rounding never turns a distance equal to `limit` into a rejection.
inline double EuclideanDistanceUpTo(const double* a, const double* b,
                                    std::size_t dim, double limit) {
  return std::sqrt(internal::SquaredDistance<true>(
      a, [b](std::size_t i) { return b[i]; }, dim, internal::StopAbove(limit)));
}

// EuclideanDistance(a, z, dim) for z = map(x), computing each coordinate of
// z as map.Apply would: bit for bit the distance to the mapped point,
// without storing it.
inline double MappedEuclideanDistance(const double* a, const double* x,
                                      const DiagonalMap& map) {
  const double* center = map.center();
  const double* factor = map.factor();
  return std::sqrt(internal::SquaredDistance<false>(
      a,
      [=](std::size_t i) {
        return DiagonalMap::Map(x[i], center[i], factor[i]);
      },
      map.dim(), 0.0));
}
// EuclideanDistanceUpTo for the mapped point, likewise.
inline double MappedEuclideanDistanceUpTo(const double* a, const double* x,
                                          const DiagonalMap& map,
                                          double limit) {
  const double* center = map.center();
  const double* factor = map.factor();
  return std::sqrt(internal::SquaredDistance<true>(
      a,
      [=](std::size_t i) {
        return DiagonalMap::Map(x[i], center[i], factor[i]);
      },
      map.dim(), internal::StopAbove(limit)));
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_EUCLIDEAN_DISTANCE_H_
