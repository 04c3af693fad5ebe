#include "tests/support/synthetic_points.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "client/loadgen/joint_trajectory.h"

namespace streamreg {
namespace {

constexpr double kSampleRateHz = 1000.0;

// Per-coordinate mean and standard deviation of a row-major point set.
void ColumnMoments(const PointSet& points, std::vector<double>* mean,
                   std::vector<double>* sd) {
  const std::size_t n = points.size();
  mean->assign(points.dim, 0.0);
  sd->assign(points.dim, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < points.dim; ++j) {
      (*mean)[j] += points.coordinates[i * points.dim + j];
    }
  }
  for (double& m : *mean) m /= static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < points.dim; ++j) {
      const double t = points.coordinates[i * points.dim + j] - (*mean)[j];
      (*sd)[j] += t * t;
    }
  }
  for (double& s : *sd) {
    s = std::sqrt(s / static_cast<double>(n));
    if (s == 0.0) s = 1.0;
  }
}

std::vector<double> GridTimes(std::size_t n) {
  std::vector<double> times(n);
  for (std::size_t i = 0; i < n; ++i) times[i] = i / kSampleRateHz;
  return times;
}

// The arm's first `joints` joints' (q, q̇, q̈) at `times`, as measured
// without noise.
PointSet RawArmStates(const JointTrajectory& arm, std::size_t joints,
                      std::span<const double> times) {
  joints = std::min(joints, kPandaJoints);
  PointSet points{3 * joints, std::vector<double>(times.size() * 3 * joints)};
  for (std::size_t i = 0; i < times.size(); ++i) {
    const JointState state = arm.At(times[i]);
    double* row = points.coordinates.data() + i * points.dim;
    for (std::size_t j = 0; j < joints; ++j) {
      row[j] = state.q[j];
      row[joints + j] = state.qd[j];
      row[2 * joints + j] = state.qdd[j];
    }
  }
  return points;
}

// RawArmStates standardized with `reference`'s statistics (or their own).
PointSet ArmStates(const JointTrajectory& arm, std::size_t joints,
                   std::span<const double> times, const PointSet* reference) {
  PointSet points = RawArmStates(arm, joints, times);
  std::vector<double> mean, sd;
  ColumnMoments(reference != nullptr ? *reference : points, &mean, &sd);
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t j = 0; j < points.dim; ++j) {
      double& x = points.coordinates[i * points.dim + j];
      x = (x - mean[j]) / sd[j];
    }
  }
  return points;
}

}  // namespace

PointSet UniformPoints(std::size_t n, std::size_t dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PointSet points{dim, std::vector<double>(n * dim)};
  for (double& x : points.coordinates) x = u(rng);
  return points;
}

PointSet ClusteredPoints(std::size_t n, std::size_t dim, std::size_t clusters,
                         std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const PointSet centres =
      UniformPoints(clusters, dim, seed ^ 0x9e3779b97f4a7c15);
  std::uniform_int_distribution<std::size_t> pick(0, clusters - 1);
  std::normal_distribution<double> noise(0.0, 0.01);
  PointSet points{dim, std::vector<double>(n * dim)};
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const double> centre = centres.point(pick(rng));
    for (std::size_t j = 0; j < dim; ++j) {
      points.coordinates[i * dim + j] = centre[j] + noise(rng);
    }
  }
  return points;
}

PointSet ArmPoints(std::size_t n, std::size_t joints, std::uint64_t seed) {
  return ArmStates(JointTrajectory(seed), joints, GridTimes(n), nullptr);
}

PointSet ArmQueries(std::size_t n, std::size_t joints, std::size_t count,
                    std::uint64_t seed) {
  const JointTrajectory arm(seed);
  const PointSet raw = RawArmStates(arm, joints, GridTimes(n));
  std::mt19937_64 rng(seed ^ 0x51ed270b2b1f0a3d);
  std::uniform_real_distribution<double> when(0.0, n / kSampleRateHz);
  std::vector<double> times(count);
  for (double& t : times) t = when(rng);
  return ArmStates(arm, joints, times, &raw);
}

PointSet ArmTicks(std::size_t n, std::size_t joints, std::size_t count,
                  std::uint64_t seed) {
  const JointTrajectory arm(seed);
  const PointSet raw = RawArmStates(arm, joints, GridTimes(n));
  std::vector<double> times(count);
  for (std::size_t i = 0; i < count; ++i) times[i] = (n + i) / kSampleRateHz;
  return ArmStates(arm, joints, times, &raw);
}

}  // namespace streamreg
