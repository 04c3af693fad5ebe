#include "tests/support/synthetic_points.h"

#include <cmath>
#include <numbers>
#include <random>

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

ArmTrajectory::ArmTrajectory(std::size_t joints, std::uint64_t seed)
    : joints_(joints) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> amplitude(0.2, 1.0);
  std::uniform_real_distribution<double> frequency(0.2, 2.0);
  std::uniform_real_distribution<double> phase(0.0, 2.0 * std::numbers::pi);
  for (std::size_t w = 0; w < 3 * joints; ++w) {
    waves_.push_back({amplitude(rng), frequency(rng), phase(rng)});
  }
}

void ArmTrajectory::Evaluate(double t, double* out) const {
  for (std::size_t j = 0; j < joints_; ++j) {
    double q = 0.0, dq = 0.0, ddq = 0.0;
    for (std::size_t w = 3 * j; w < 3 * j + 3; ++w) {
      const Wave& s = waves_[w];
      const double angle = s.frequency * t + s.phase;
      q += s.amplitude * std::sin(angle);
      dq += s.amplitude * s.frequency * std::cos(angle);
      ddq -= s.amplitude * s.frequency * s.frequency * std::sin(angle);
    }
    out[j] = q;
    out[joints_ + j] = dq;
    out[2 * joints_ + j] = ddq;
  }
}

PointSet ArmTrajectory::Sample(std::span<const double> times,
                               const PointSet* reference_raw) const {
  PointSet points{dim(), std::vector<double>(times.size() * dim())};
  for (std::size_t i = 0; i < times.size(); ++i) {
    Evaluate(times[i], points.coordinates.data() + i * dim());
  }
  std::vector<double> mean, sd;
  ColumnMoments(reference_raw != nullptr ? *reference_raw : points, &mean, &sd);
  for (std::size_t i = 0; i < times.size(); ++i) {
    for (std::size_t j = 0; j < dim(); ++j) {
      double& x = points.coordinates[i * dim() + j];
      x = (x - mean[j]) / sd[j];
    }
  }
  return points;
}

PointSet TrajectoryPoints(std::size_t n, std::size_t joints,
                          std::uint64_t seed) {
  const ArmTrajectory arm(joints, seed);
  const std::vector<double> times = GridTimes(n);
  return arm.Sample(times);
}

PointSet TrajectoryQueries(std::size_t n, std::size_t joints, std::size_t count,
                           std::uint64_t seed) {
  const ArmTrajectory arm(joints, seed);
  // The raw training samples, for their statistics.
  const std::vector<double> grid = GridTimes(n);
  PointSet raw{arm.dim(), std::vector<double>(n * arm.dim())};
  for (std::size_t i = 0; i < n; ++i) {
    arm.Evaluate(grid[i], raw.coordinates.data() + i * arm.dim());
  }
  std::mt19937_64 rng(seed ^ 0x51ed270b2b1f0a3d);
  std::uniform_real_distribution<double> when(0.0, n / kSampleRateHz);
  std::vector<double> times(count);
  for (double& t : times) t = when(rng);
  return arm.Sample(times, &raw);
}

std::vector<double> ArmTorques(const PointSet& inputs, std::size_t joints) {
  const std::size_t n = inputs.size();
  std::vector<double> torques(n * joints);
  for (std::size_t s = 0; s < n; ++s) {
    const std::span<const double> x = inputs.point(s);
    const double* q = x.data();
    const double* velocity = x.data() + joints;
    const double* acceleration = x.data() + 2 * joints;
    for (std::size_t j = 0; j < joints; ++j) {
      double tau = 0.0;
      for (std::size_t k = 0; k < joints; ++k) {
        const double inertia =
            (j == k ? 2.0 : 0.6) / (1.0 + static_cast<double>(j + k) * 0.3);
        tau += inertia * std::cos(q[j] - q[k]) * acceleration[k];
      }
      const double gravity = 3.0 / (1.0 + static_cast<double>(j));
      tau += gravity * std::sin(q[j] + 0.3 * static_cast<double>(j));
      tau += 0.4 * velocity[j] * std::fabs(velocity[j]);
      torques[s * joints + j] = tau;
    }
  }
  return torques;
}

}  // namespace streamreg
