#include "client/loadgen/panda_dynamics.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "kdl/frames.hpp"
#include "kdl/rigidbodyinertia.hpp"
#include "kdl/rotationalinertia.hpp"
#include "kdl/segment.hpp"

namespace streamreg {
namespace {

constexpr double kHalfPi = std::numbers::pi / 2;

// Franka's modified (Craig) Denavit–Hartenberg parameters of the joint
// frames: a_{i−1} and α_{i−1} place joint i's axis, d_i slides along it.
struct CraigParameters {
  double a, alpha, d;
};
constexpr std::array<CraigParameters, kPandaJoints> kJointFrames = {{
    {0.0, 0.0, 0.333},
    {0.0, -kHalfPi, 0.0},
    {0.0, kHalfPi, 0.316},
    {0.0825, kHalfPi, 0.0},
    {-0.0825, -kHalfPi, 0.384},
    {0.0, kHalfPi, 0.0},
    {0.088, kHalfPi, 0.0},
}};
constexpr CraigParameters kFlange = {0.0, 0.0, 0.107};

// A link's mass (kg), centre of mass (m) and inertia tensor about it
// (kg·m²), in the link's own frame: Gaz et al. 2019, as published in
// franka_description.
struct LinkInertia {
  double mass;
  std::array<double, 3> com;
  double ixx, iyy, izz, ixy, ixz, iyz;
};
constexpr std::array<LinkInertia, kPandaJoints> kLinks = {{
    {4.970684,
     {3.875e-3, 2.081e-3, -4.762e-2},
     7.0337e-1,
     7.0661e-1,
     9.1170e-3,
     -1.3900e-4,
     6.7720e-3,
     1.9169e-2},
    {0.646926,
     {-3.141e-3, -2.872e-2, 3.495e-3},
     7.9620e-3,
     2.8110e-2,
     2.5995e-2,
     -3.9250e-3,
     1.0254e-2,
     7.0400e-4},
    {3.228604,
     {2.7518e-2, 3.9252e-2, -6.6502e-2},
     3.7242e-2,
     3.6155e-2,
     1.0830e-2,
     -4.7610e-3,
     -1.1396e-2,
     -1.2805e-2},
    {3.587895,
     {-5.317e-2, 1.04419e-1, 2.7454e-2},
     2.5853e-2,
     1.9552e-2,
     2.8323e-2,
     7.7960e-3,
     -1.3320e-3,
     8.6410e-3},
    {1.225946,
     {-1.1953e-2, 4.1065e-2, -3.8437e-2},
     3.5549e-2,
     2.9474e-2,
     8.6270e-3,
     -2.1170e-3,
     -4.0370e-3,
     2.2900e-4},
    {1.666555,
     {6.0149e-2, -1.4117e-2, -1.0517e-2},
     1.9640e-3,
     4.3540e-3,
     5.4330e-3,
     1.0900e-4,
     -1.1580e-3,
     3.4100e-4},
    {0.735522,
     {1.0517e-2, -4.252e-3, 6.1597e-2},
     1.2516e-2,
     1.0027e-2,
     4.8150e-3,
     -4.2800e-4,
     -1.1960e-3,
     -7.4100e-4},
}};

// Gaz et al.'s friction parameters φ1 (N·m), φ2 (s/rad), φ3 (rad/s).
constexpr JointVector kFrictionScale = {0.54615, 0.87224, 0.64068, 1.2794,
                                        0.83904, 0.30301, 0.56489};
constexpr JointVector kFrictionSlope = {5.1181, 9.0657, 10.136, 5.5903,
                                        8.3469, 17.133, 10.336};
constexpr JointVector kFrictionOffset = {
    0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526};

KDL::Frame CraigFrame(const CraigParameters& p) {
  return KDL::Frame::DH_Craig1989(p.a, p.alpha, p.d, 0.0);
}

KDL::RigidBodyInertia InertiaOf(const LinkInertia& link) {
  return KDL::RigidBodyInertia(
      link.mass, KDL::Vector(link.com[0], link.com[1], link.com[2]),
      KDL::RotationalInertia(link.ixx, link.iyy, link.izz, link.ixy, link.ixz,
                             link.iyz));
}

// Each joint is a fixed segment to its axis followed by the rotating link
// (so each link's inertia is expressed in its own frame, as published);
// the payload rides on a last fixed segment at the flange.
KDL::Chain PandaChain(const Payload& payload) {
  KDL::Chain chain;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    chain.addSegment(KDL::Segment(KDL::Joint(KDL::Joint::None),
                                  CraigFrame(kJointFrames[j])));
    chain.addSegment(KDL::Segment(KDL::Joint(KDL::Joint::RotZ),
                                  KDL::Frame::Identity(),
                                  InertiaOf(kLinks[j])));
  }
  const auto& c = payload.center_of_mass_m;
  chain.addSegment(KDL::Segment(
      KDL::Joint(KDL::Joint::None), CraigFrame(kFlange),
      KDL::RigidBodyInertia(payload.mass_kg, KDL::Vector(c[0], c[1], c[2]))));
  return chain;
}

}  // namespace

const JointVector PandaLimits::kPositionMin = {
    -2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973};
const JointVector PandaLimits::kPositionMax = {2.8973, 1.7628, 2.8973, -0.0698,
                                               2.8973, 3.7525, 2.8973};
const JointVector PandaLimits::kVelocityMax = {2.1750, 2.1750, 2.1750, 2.1750,
                                               2.6100, 2.6100, 2.6100};
const JointVector PandaLimits::kAccelerationMax = {15.0, 7.5,  10.0, 12.5,
                                                   15.0, 20.0, 20.0};

PandaDynamics::PandaDynamics(const Payload& payload)
    : chain_(PandaChain(payload)),
      solver_(chain_, KDL::Vector(0.0, 0.0, -kStandardGravity)),
      q_(kPandaJoints),
      qd_(kPandaJoints),
      qdd_(kPandaJoints),
      tau_(kPandaJoints),
      no_external_forces_(chain_.getNrOfSegments(), KDL::Wrench::Zero()) {}

JointVector PandaDynamics::RigidBodyTorques(const JointVector& q,
                                            const JointVector& qd,
                                            const JointVector& qdd) {
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    q_(j) = q[j];
    qd_(j) = qd[j];
    qdd_(j) = qdd[j];
  }
  // Fails only for arrays of the wrong size, which these never are.
  if (solver_.CartToJnt(q_, qd_, qdd_, no_external_forces_, tau_) < 0) {
    throw std::logic_error("ChainIdSolver_RNE failed on the Panda chain");
  }
  JointVector tau;
  for (std::size_t j = 0; j < kPandaJoints; ++j) tau[j] = tau_(j);
  return tau;
}

JointVector PandaDynamics::FrictionTorques(const JointVector& qd) {
  JointVector tau;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    const double phi1 = kFrictionScale[j];
    const double phi2 = kFrictionSlope[j];
    const double phi3 = kFrictionOffset[j];
    tau[j] = phi1 / (1.0 + std::exp(-phi2 * (qd[j] + phi3))) -
             phi1 / (1.0 + std::exp(-phi2 * phi3));
  }
  return tau;
}

JointVector PandaDynamics::Torques(const JointVector& q, const JointVector& qd,
                                   const JointVector& qdd) {
  JointVector tau = RigidBodyTorques(q, qd, qdd);
  const JointVector friction = FrictionTorques(qd);
  for (std::size_t j = 0; j < kPandaJoints; ++j) tau[j] += friction[j];
  return tau;
}

}  // namespace streamreg
