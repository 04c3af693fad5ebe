#include "client/loadgen/joint_trajectory.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

namespace streamreg {

JointTrajectory::JointTrajectory(std::uint64_t seed, const Options& options) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int harmonics = std::max(1, options.harmonics);
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    const double low = PandaLimits::kPositionMin[j];
    const double high = PandaLimits::kPositionMax[j];
    const double half_range = options.range_fraction * (high - low) / 2;
    // The centre anywhere in the middle half of the usable range; the
    // amplitudes then fit in what is left on its nearer side.
    center_[j] = (low + high) / 2 + (unit(random) - 0.5) * half_range;
    const double room = half_range - std::abs(center_[j] - (low + high) / 2);
    std::vector<Harmonic>& joint = harmonics_[j];
    const double fundamental = 2 * std::numbers::pi * options.fundamental_hz;
    double weight_sum = 0.0;
    for (int l = 1; l <= harmonics; ++l) {
      // Higher harmonics get less of the budget, as in a smooth motion.
      const double weight = (0.3 + unit(random)) / l;
      joint.push_back(
          {weight, l * fundamental, 2 * std::numbers::pi * unit(random)});
      weight_sum += weight;
    }
    const double share = std::clamp(options.variation_share, 0.0, 1.0);
    for (Harmonic& h : joint) h.amplitude *= (1 - share) / weight_sum;
    joint.push_back({share, 2 * std::numbers::pi * options.variation_hz,
                     2 * std::numbers::pi * unit(random)});
    for (Harmonic& h : joint) h.amplitude *= room;
    double speed = 0.0;
    double acceleration = 0.0;
    for (const Harmonic& h : joint) {
      speed += h.amplitude * h.omega;
      acceleration += h.amplitude * h.omega * h.omega;
    }
    const double scale = std::min(
        {1.0, options.rate_fraction * PandaLimits::kVelocityMax[j] / speed,
         options.rate_fraction * PandaLimits::kAccelerationMax[j] /
             acceleration});
    for (Harmonic& h : joint) h.amplitude *= scale;
  }
}

JointState JointTrajectory::At(double t) const {
  JointState state;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    double q = center_[j];
    double qd = 0.0;
    double qdd = 0.0;
    for (const Harmonic& h : harmonics_[j]) {
      const double angle = h.omega * t + h.phase;
      const double s = std::sin(angle);
      q += h.amplitude * s;
      qd += h.amplitude * h.omega * std::cos(angle);
      qdd -= h.amplitude * h.omega * h.omega * s;
    }
    state.q[j] = q;
    state.qd[j] = qd;
    state.qdd[j] = qdd;
  }
  return state;
}

}  // namespace streamreg
