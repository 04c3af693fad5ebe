#include "client/loadgen/panda_plant.h"

#include <stdexcept>

namespace streamreg {

PandaPlant::PandaPlant(const Payload& payload, const JointVector& q,
                       const JointVector& qd)
    : dynamics_(payload),
      solver_(dynamics_.chain(), KDL::Vector(0.0, 0.0, -kStandardGravity)),
      q_kdl_(kPandaJoints),
      qd_kdl_(kPandaJoints),
      tau_kdl_(kPandaJoints),
      qdd_kdl_(kPandaJoints),
      no_external_forces_(dynamics_.chain().getNrOfSegments(),
                          KDL::Wrench::Zero()),
      q_(q),
      qd_(qd) {}

JointVector PandaPlant::Accelerations(const JointVector& tau) {
  const JointVector friction = PandaDynamics::FrictionTorques(qd_);
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    q_kdl_(j) = q_[j];
    qd_kdl_(j) = qd_[j];
    tau_kdl_(j) = tau[j] - friction[j];
  }
  // Fails only for arrays of the wrong size, which these never are.
  if (solver_.CartToJnt(q_kdl_, qd_kdl_, tau_kdl_, no_external_forces_,
                        qdd_kdl_) < 0) {
    throw std::logic_error("ChainFdSolver_RNE failed on the Panda chain");
  }
  JointVector qdd;
  for (std::size_t j = 0; j < kPandaJoints; ++j) qdd[j] = qdd_kdl_(j);
  return qdd;
}

void PandaPlant::Step(const JointVector& tau, double dt) {
  qdd_ = Accelerations(tau);
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    qd_[j] += qdd_[j] * dt;
    q_[j] += qd_[j] * dt;
  }
}

}  // namespace streamreg
