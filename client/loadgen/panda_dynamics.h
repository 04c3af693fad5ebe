#ifndef STREAMREG_CLIENT_LOADGEN_PANDA_DYNAMICS_H_
#define STREAMREG_CLIENT_LOADGEN_PANDA_DYNAMICS_H_

#include <array>
#include <cstddef>

#include "kdl/chain.hpp"
#include "kdl/chainidsolver_recursive_newton_euler.hpp"
#include "kdl/jntarray.hpp"

namespace streamreg {

inline constexpr std::size_t kPandaJoints = 7;
// m/s², along −z of the arm's base frame.
inline constexpr double kStandardGravity = 9.81;
using JointVector = std::array<double, kPandaJoints>;

// The Franka Emika Panda's published joint limits (libfranka's robot
// documentation, "Robot and interface specifications").
struct PandaLimits {
  static const JointVector kPositionMin;      // rad
  static const JointVector kPositionMax;      // rad
  static const JointVector kVelocityMax;      // rad/s
  static const JointVector kAccelerationMax;  // rad/s²
};

// A load held by the gripper: its mass and its centre of mass in the flange
// frame.
struct Payload {
  double mass_kg = 0.0;
  std::array<double, 3> center_of_mass_m = {0.0, 0.0, 0.05};
};

// The joint torques a 7-DoF Franka Emika Panda arm needs to follow a motion:
// rigid-body inverse dynamics τ = M(q)q̈ + C(q, q̇)q̇ + g(q) by recursive
// Newton–Euler (Orocos KDL's ChainIdSolver_RNE) on the arm's published
// modified Denavit–Hartenberg kinematics, with the link masses, centres of
// mass and inertia tensors identified by Gaz, Cognetti, Oliva, Robuffo
// Giordano and De Luca, "Dynamic Identification of the Franka Emika Panda
// Robot With Retrieval of Feasible Parameters Using Penalty-Based
// Optimization", IEEE RA-L 4(4), 2019 (Table of feasible parameters), plus
// their sigmoid joint-friction model; and an optional payload at the
// flange. Not thread-safe (the solver has scratch space); one per thread.
class PandaDynamics {
 public:
  explicit PandaDynamics(const Payload& payload = {});

  // Rigid-body torques plus friction, in N·m.
  JointVector Torques(const JointVector& q, const JointVector& qd,
                      const JointVector& qdd);
  // Rigid-body torques only (no friction).
  JointVector RigidBodyTorques(const JointVector& q, const JointVector& qd,
                               const JointVector& qdd);
  // Gaz et al.'s friction: τ_f = φ1/(1 + e^{−φ2(q̇ + φ3)}) − φ1/(1 + e^{−φ2
  // φ3}).
  static JointVector FrictionTorques(const JointVector& qd);

  const KDL::Chain& chain() const { return chain_; }

 private:
  KDL::Chain chain_;
  KDL::ChainIdSolver_RNE solver_;
  KDL::JntArray q_, qd_, qdd_, tau_;
  KDL::Wrenches no_external_forces_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LOADGEN_PANDA_DYNAMICS_H_
