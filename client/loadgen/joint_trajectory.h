#ifndef STREAMREG_CLIENT_LOADGEN_JOINT_TRAJECTORY_H_
#define STREAMREG_CLIENT_LOADGEN_JOINT_TRAJECTORY_H_

#include <array>
#include <cstdint>
#include <vector>

#include "client/loadgen/panda_dynamics.h"

namespace streamreg {

// Where the arm is at one instant.
struct JointState {
  JointVector q;    // rad
  JointVector qd;   // rad/s
  JointVector qdd;  // rad/s²
};

// A smooth, endless joint-space motion, like an arm repeating a task with
// slow variations: each joint follows the finite Fourier series of Swevers,
// Ganseman, Tükel, De Schutter and Van Brussel ("Optimal robot excitation and
// identification", IEEE TRA 13(5), 1997) — harmonics l·ω_f of one
// fundamental, so the task repeats every 1/f_f seconds — plus one slower
// sinusoid at an incommensurate frequency ω_v that makes each repetition a
// little different:
//   q_j(t) = c_j + Σ_l A_jl sin(l ω_f t + φ_jl) + B_j sin(ω_v t + ψ_j),
// with random centres, amplitudes and phases. The arm's states therefore
// fill a two-dimensional surface in (q, q̇, q̈) space over time: a learner
// sees nearby states again (and can learn), but never exactly the same one.
// The amplitudes are scaled so that their sums (times ω, times ω²) stay
// within each joint's position range (with a margin), velocity and
// acceleration limits: the motion never leaves them, whatever t. Positions,
// velocities and accelerations are exact derivatives of one another.
class JointTrajectory {
 public:
  struct Options {
    double fundamental_hz = 0.1;
    int harmonics = 3;
    // 0.1 / golden ratio²: never in step with the fundamental.
    double variation_hz = 0.0381966;
    // Share of each joint's amplitude budget given to the variation.
    double variation_share = 0.3;
    // Fraction of each joint's range, velocity and acceleration limit the
    // motion may use.
    double range_fraction = 0.8;
    double rate_fraction = 0.8;
  };

  JointTrajectory(std::uint64_t seed, const Options& options);
  explicit JointTrajectory(std::uint64_t seed)
      : JointTrajectory(seed, Options{}) {}

  JointState At(double t_seconds) const;

 private:
  struct Harmonic {
    double amplitude, omega, phase;
  };
  JointVector center_;
  std::array<std::vector<Harmonic>, kPandaJoints> harmonics_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LOADGEN_JOINT_TRAJECTORY_H_
