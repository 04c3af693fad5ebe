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

// A robot arm's joint trajectory, as SARCOS-style inputs: for each of
// `joints` joints a sum of three sinusoids q(t) with random amplitudes,
// frequencies (0.2–2 rad/s) and phases, giving position q, velocity q' and
// acceleration q'' (dim = 3 * joints; intrinsic dimension ~ joints).
// Sampled at `times` and standardized to zero mean, unit variance per
// coordinate using the statistics of the first `standardize_on` samples
// (all if 0), so held-out queries share the training scale.
class ArmTrajectory {
 public:
  ArmTrajectory(std::size_t joints, std::uint64_t seed);

  std::size_t dim() const { return 3 * joints_; }

  // Raw (unstandardized) inputs at time t.
  void Evaluate(double t, double* out) const;

  // Samples at the given times, standardized with `reference`'s statistics
  // (or their own if `reference` is empty).
  PointSet Sample(std::span<const double> times,
                  const PointSet* reference_raw = nullptr) const;

 private:
  struct Wave {
    double amplitude, frequency, phase;
  };
  std::size_t joints_;
  std::vector<Wave> waves_;  // 3 per joint
};

// n trajectory points at 1 kHz (t = i / 1000 s), standardized.
PointSet TrajectoryPoints(std::size_t n, std::size_t joints,
                          std::uint64_t seed);

// Held-out trajectory queries: the same arm at `count` random times within
// the first n / 1000 seconds (off the sample grid), standardized with the
// statistics of the n training samples.
PointSet TrajectoryQueries(std::size_t n, std::size_t joints, std::size_t count,
                           std::uint64_t seed);

// Torque-like targets for trajectory inputs (q, q', q'' per joint, as
// TrajectoryPoints lays them out): for each joint j
//   tau_j = sum_k m_jk cos(q_j - q_k) q''_k + g_j sin(q_j + phi_j)
//           + c_j q'_j |q'_j|
// with fixed coefficients — the shape of rigid-body inverse dynamics
// (configuration-dependent inertia, gravity, drag), not a real arm.
// Returns n x joints values, row-major.
std::vector<double> ArmTorques(const PointSet& inputs, std::size_t joints);

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SYNTHETIC_POINTS_H_
