#ifndef STREAMREG_CLIENT_LOADGEN_PANDA_PLANT_H_
#define STREAMREG_CLIENT_LOADGEN_PANDA_PLANT_H_

#include "client/loadgen/panda_dynamics.h"
#include "kdl/chainfdsolver_recursive_newton_euler.hpp"
#include "kdl/jntarray.hpp"

namespace streamreg {

// The simulated Panda as a plant a controller drives: its joint state
// (q, q̇) moved by the torques commanded, through forward dynamics
// q̈ = M(q)⁻¹(τ − τ_f(q̇) − C(q, q̇)q̇ − g(q)) (Orocos KDL's
// ChainFdSolver_RNE on PandaDynamics' chain, with its payload and Gaz et
// al.'s friction), integrated at a fixed step semi-implicitly (q̇ first,
// then q with the new q̇). The payload is the plant's truth, which a
// controller's own model may not know. Not thread-safe.
class PandaPlant {
 public:
  PandaPlant(const Payload& payload, const JointVector& q,
             const JointVector& qd = {});

  // The accelerations the torques `tau` give at the current state.
  JointVector Accelerations(const JointVector& tau);
  // Holds `tau` for `dt` seconds.
  void Step(const JointVector& tau, double dt);

  const JointVector& q() const { return q_; }
  const JointVector& qd() const { return qd_; }
  // The accelerations of the last step (zero before one).
  const JointVector& qdd() const { return qdd_; }

 private:
  PandaDynamics dynamics_;  // its chain, and the friction model
  KDL::ChainFdSolver_RNE solver_;
  KDL::JntArray q_kdl_, qd_kdl_, tau_kdl_, qdd_kdl_;
  KDL::Wrenches no_external_forces_;
  JointVector q_, qd_, qdd_{};
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LOADGEN_PANDA_PLANT_H_
