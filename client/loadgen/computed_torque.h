#ifndef STREAMREG_CLIENT_LOADGEN_COMPUTED_TORQUE_H_
#define STREAMREG_CLIENT_LOADGEN_COMPUTED_TORQUE_H_

#include "client/loadgen/joint_trajectory.h"
#include "client/loadgen/panda_dynamics.h"
#include "kdl/chaindynparam.hpp"
#include "kdl/jntarray.hpp"
#include "kdl/jntspaceinertiamatrix.hpp"

namespace streamreg {

// A computed-torque controller for the Panda, from its own rigid-body model
// of the arm (whose payload may not be the arm's): the torque for a tick is
// a feedforward for the desired state plus feedback through the model's
// mass matrix, τ = τ_ff + M̂(q)(Kp (q_d − q) + Kd (q̇_d − q̇)), with Kd =
// 2√Kp (each joint's error critically damped where the model is right).
// The feedforward is the model's own inverse dynamics of the desired state
// (RigidBodyFeedforward), or one the caller has (a learned model's
// prediction). Not thread-safe.
class ComputedTorqueController {
 public:
  // `stiffness`: Kp in 1/s² (400: a 20 rad/s loop).
  explicit ComputedTorqueController(const Payload& assumed,
                                    double stiffness = 400.0);

  // The model's inverse dynamics of `desired` (friction included).
  JointVector RigidBodyFeedforward(const JointState& desired);
  // τ_ff + M̂(q)(Kp e + Kd ė).
  JointVector Torques(const JointVector& feedforward, const JointState& desired,
                      const JointVector& q, const JointVector& qd);

 private:
  PandaDynamics model_;
  KDL::ChainDynParam parameters_;
  KDL::JntArray q_kdl_;
  KDL::JntSpaceInertiaMatrix mass_;
  const double kp_, kd_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LOADGEN_COMPUTED_TORQUE_H_
