#ifndef STREAMREG_TESTS_SUPPORT_SYNTHETIC_POINTS_H_
#define STREAMREG_TESTS_SUPPORT_SYNTHETIC_POINTS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace streamreg {

// A set of points stored row-major, made by one of the generators below.
// Shared by the property tests and the benchmarks so both speak of the same
// data sets. Every generator is deterministic for a given seed.
struct PointSet {
  std::size_t dim = 0;
  std::vector<double> coordinates;

  std::size_t size() const { return dim == 0 ? 0 : coordinates.size() / dim; }
  std::span<const double> point(std::size_t i) const {
    return {coordinates.data() + i * dim, dim};
  }
};

// n points uniform in [0, 1]^dim.
PointSet UniformPoints(std::size_t n, std::size_t dim, std::uint64_t seed);

// n points in `clusters` tight Gaussian blobs (sd 0.01) around uniform
// centres in [0, 1]^dim.
PointSet ClusteredPoints(std::size_t n, std::size_t dim, std::size_t clusters,
                         std::uint64_t seed);

// The simulated arm's joint states (client/loadgen/joint_trajectory.h: the
// Panda of streamreg-robot-sim repeating a task with slow variations, task
// `seed`), without sensor noise: for its first `joints` joints (at most 7)
// the positions, then the velocities, then the accelerations (dim =
// 3 * joints). n states at 1 kHz (t = i / 1000 s), standardized to zero
// mean and unit variance per coordinate.
PointSet ArmPoints(std::size_t n, std::size_t joints, std::uint64_t seed);

// Held-out states of the same arm: `count` random times within the first
// n / 1000 seconds (off the sample grid), standardized with the statistics
// of ArmPoints(n, joints, seed).
PointSet ArmQueries(std::size_t n, std::size_t joints, std::size_t count,
                    std::uint64_t seed);

// The arm's next `count` states after ArmPoints(n, joints, seed), in order
// (t = (n + i) / 1000 s): a controller's ticks, each query near the last.
// Standardized with the statistics of ArmPoints(n, joints, seed).
PointSet ArmTicks(std::size_t n, std::size_t joints, std::size_t count,
                  std::uint64_t seed);

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SYNTHETIC_POINTS_H_
