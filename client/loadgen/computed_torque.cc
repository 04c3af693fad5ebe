#include "client/loadgen/computed_torque.h"

#include <cmath>
#include <stdexcept>

namespace streamreg {

ComputedTorqueController::ComputedTorqueController(const Payload& assumed,
                                                   double stiffness)
    : model_(assumed),
      parameters_(model_.chain(), KDL::Vector(0.0, 0.0, -kStandardGravity)),
      q_kdl_(kPandaJoints),
      mass_(kPandaJoints),
      kp_(stiffness),
      kd_(2.0 * std::sqrt(stiffness)) {}

JointVector ComputedTorqueController::RigidBodyFeedforward(
    const JointState& desired) {
  return model_.Torques(desired.q, desired.qd, desired.qdd);
}

JointVector ComputedTorqueController::Torques(const JointVector& feedforward,
                                              const JointState& desired,
                                              const JointVector& q,
                                              const JointVector& qd) {
  for (std::size_t j = 0; j < kPandaJoints; ++j) q_kdl_(j) = q[j];
  // Fails only for arrays of the wrong size, which these never are.
  if (parameters_.JntToMass(q_kdl_, mass_) < 0) {
    throw std::logic_error("ChainDynParam failed on the Panda chain");
  }
  JointVector command;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    command[j] = kp_ * (desired.q[j] - q[j]) + kd_ * (desired.qd[j] - qd[j]);
  }
  JointVector tau = feedforward;
  for (std::size_t i = 0; i < kPandaJoints; ++i) {
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      tau[i] += mass_(i, j) * command[j];
    }
  }
  return tau;
}

}  // namespace streamreg
