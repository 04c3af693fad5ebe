// The simulated arm: its inverse dynamics against physics computed
// independently (statics from our own forward kinematics, the power balance
// q̇ᵀτ = d/dt (kinetic + potential energy)), its forward dynamics (the
// plant a controller drives) against the inverse, its trajectories against
// the joint limits and their own derivatives, and the stream's noise,
// payload change and column convention.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <string>

#include "Eigen/Dense"
#include "absl/strings/str_join.h"
#include "client/loadgen/computed_torque.h"
#include "client/loadgen/joint_trajectory.h"
#include "client/loadgen/panda_dynamics.h"
#include "client/loadgen/panda_plant.h"
#include "client/loadgen/robot_stream.h"
#include "gtest/gtest.h"
#include "kdl/chaindynparam.hpp"

namespace streamreg {
namespace {

constexpr double kGravity = 9.81;

// Franka's published modified DH table and link centres of mass, written
// out again here (not read from the code under test).
struct Dh {
  double a, alpha, d;
};
const Dh kDh[8] = {{0, 0, 0.333},
                   {0, -M_PI / 2, 0},
                   {0, M_PI / 2, 0.316},
                   {0.0825, M_PI / 2, 0},
                   {-0.0825, -M_PI / 2, 0.384},
                   {0, M_PI / 2, 0},
                   {0.088, M_PI / 2, 0},
                   {0, 0, 0.107}};
const double kMass[7] = {4.970684, 0.646926, 3.228604, 3.587895,
                         1.225946, 1.666555, 0.735522};
const double kCom[7][3] = {
    {3.875e-3, 2.081e-3, -4.762e-2},     {-3.141e-3, -2.872e-2, 3.495e-3},
    {2.7518e-2, 3.9252e-2, -6.6502e-2},  {-5.317e-2, 1.04419e-1, 2.7454e-2},
    {-1.1953e-2, 4.1065e-2, -3.8437e-2}, {6.0149e-2, -1.4117e-2, -1.0517e-2},
    {1.0517e-2, -4.252e-3, 6.1597e-2}};

Eigen::Matrix4d CraigTransform(const Dh& p, double theta) {
  Eigen::Matrix4d rot_x = Eigen::Matrix4d::Identity();
  rot_x.block<3, 3>(0, 0) =
      Eigen::AngleAxisd(p.alpha, Eigen::Vector3d::UnitX()).toRotationMatrix();
  Eigen::Matrix4d trans_x = Eigen::Matrix4d::Identity();
  trans_x(0, 3) = p.a;
  Eigen::Matrix4d rot_z = Eigen::Matrix4d::Identity();
  rot_z.block<3, 3>(0, 0) =
      Eigen::AngleAxisd(theta, Eigen::Vector3d::UnitZ()).toRotationMatrix();
  Eigen::Matrix4d trans_z = Eigen::Matrix4d::Identity();
  trans_z(2, 3) = p.d;
  return rot_x * trans_x * rot_z * trans_z;
}

// Frames of links 1..7 and the flange (index 7) in the base frame.
std::vector<Eigen::Matrix4d> LinkFrames(const JointVector& q) {
  std::vector<Eigen::Matrix4d> frames;
  Eigen::Matrix4d pose = Eigen::Matrix4d::Identity();
  for (int i = 0; i < 8; ++i) {
    pose = pose * CraigTransform(kDh[i], i < 7 ? q[i] : 0.0);
    frames.push_back(pose);
  }
  return frames;
}

Eigen::Vector3d InBase(const Eigen::Matrix4d& frame, const double* local) {
  return (frame * Eigen::Vector4d(local[0], local[1], local[2], 1)).head<3>();
}

// Torques that hold the arm still: τ_j = z_j · Σ_{k ≥ j} (c_k − o_j) × m_k g
// with g pointing up (the joint pushes against gravity).
JointVector StaticTorques(const JointVector& q, const Payload& payload) {
  const std::vector<Eigen::Matrix4d> frames = LinkFrames(q);
  std::vector<std::pair<double, Eigen::Vector3d>> masses;
  for (int k = 0; k < 7; ++k) {
    masses.emplace_back(kMass[k], InBase(frames[k], kCom[k]));
  }
  masses.emplace_back(payload.mass_kg,
                      InBase(frames[7], payload.center_of_mass_m.data()));
  JointVector tau{};
  for (int j = 0; j < 7; ++j) {
    const Eigen::Vector3d axis = frames[j].block<3, 1>(0, 2);
    const Eigen::Vector3d origin = frames[j].block<3, 1>(0, 3);
    Eigen::Vector3d moment = Eigen::Vector3d::Zero();
    for (std::size_t k = j; k < masses.size(); ++k) {
      moment += (masses[k].second - origin)
                    .cross(Eigen::Vector3d(0, 0, masses[k].first * kGravity));
    }
    tau[j] = axis.dot(moment);
  }
  return tau;
}

double PotentialEnergy(const JointVector& q) {
  const std::vector<Eigen::Matrix4d> frames = LinkFrames(q);
  double energy = 0.0;
  for (int k = 0; k < 7; ++k) {
    energy += kMass[k] * kGravity * InBase(frames[k], kCom[k]).z();
  }
  return energy;
}

JointVector RandomConfiguration(std::mt19937_64& random) {
  JointVector q;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    q[j] = std::uniform_real_distribution<double>(
        PandaLimits::kPositionMin[j], PandaLimits::kPositionMax[j])(random);
  }
  return q;
}

TEST(PandaDynamicsTest,
     HoldingStillTakesTheIndependentlyComputedGravityTorques) {
  std::mt19937_64 random(7);
  const Payload payload{1.5, {0.01, -0.02, 0.08}};
  PandaDynamics unloaded;
  PandaDynamics loaded(payload);
  const JointVector zero{};
  for (int trial = 0; trial < 50; ++trial) {
    const JointVector q = RandomConfiguration(random);
    const JointVector expected = StaticTorques(q, Payload{0.0});
    const JointVector expected_loaded = StaticTorques(q, payload);
    const JointVector tau = unloaded.RigidBodyTorques(q, zero, zero);
    const JointVector tau_loaded = loaded.RigidBodyTorques(q, zero, zero);
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      EXPECT_NEAR(tau[j], expected[j], 1e-9) << "joint " << j + 1;
      EXPECT_NEAR(tau_loaded[j], expected_loaded[j], 1e-9) << "joint " << j + 1;
    }
    // Joint 1's axis is vertical: gravity never loads it.
    EXPECT_NEAR(tau[0], 0.0, 1e-9);
  }
}

// Along any motion, the power the joints deliver equals the rate of change
// of the arm's kinetic plus potential energy: q̇ᵀτ = d/dt(½q̇ᵀM(q)q̇ + V(q)).
TEST(PandaDynamicsTest, JointPowerEqualsTheRateOfChangeOfEnergy) {
  PandaDynamics dynamics;
  KDL::ChainDynParam parameters(dynamics.chain(), KDL::Vector(0, 0, -kGravity));
  const auto energy = [&](const JointState& s) {
    KDL::JntArray q(kPandaJoints);
    for (std::size_t j = 0; j < kPandaJoints; ++j) q(j) = s.q[j];
    KDL::JntSpaceInertiaMatrix mass(kPandaJoints);
    EXPECT_GE(parameters.JntToMass(q, mass), 0);
    Eigen::Map<const Eigen::Matrix<double, 7, 1>> qd(s.qd.data());
    return 0.5 * qd.dot(mass.data * qd) + PotentialEnergy(s.q);
  };
  const JointTrajectory trajectory(3);
  constexpr double kDt = 1e-5;
  for (double t = 0.5; t < 20.0; t += 1.7) {
    const JointState now = trajectory.At(t);
    const JointVector tau = dynamics.RigidBodyTorques(now.q, now.qd, now.qdd);
    double power = 0.0;
    for (std::size_t j = 0; j < kPandaJoints; ++j) power += now.qd[j] * tau[j];
    const double rate =
        (energy(trajectory.At(t + kDt)) - energy(trajectory.At(t - kDt))) /
        (2 * kDt);
    EXPECT_NEAR(power, rate, 1e-4 * (1.0 + std::abs(power))) << "t = " << t;
  }
}

TEST(PandaDynamicsTest, FrictionOpposesNothingAtRestAndGrowsWithSpeed) {
  const JointVector rest = PandaDynamics::FrictionTorques(JointVector{});
  for (double f : rest) EXPECT_NEAR(f, 0.0, 1e-15);
  JointVector slow, fast, backwards;
  slow.fill(0.1);
  fast.fill(1.0);
  backwards.fill(-1.0);
  const JointVector f_slow = PandaDynamics::FrictionTorques(slow);
  const JointVector f_fast = PandaDynamics::FrictionTorques(fast);
  const JointVector f_back = PandaDynamics::FrictionTorques(backwards);
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    EXPECT_GT(f_slow[j], 0.0);
    EXPECT_GT(f_fast[j], f_slow[j]);
    EXPECT_LT(f_back[j], 0.0);
  }
}

// Forward dynamics inverts inverse dynamics: the torques of the
// accelerations the plant gives a torque are that torque (friction and the
// payload included).
TEST(PandaPlantTest, ItsAccelerationsAreWhatInverseDynamicsInverts) {
  std::mt19937_64 random(11);
  const Payload payload{2.0, {0.0, 0.0, 0.05}};
  PandaDynamics dynamics(payload);
  for (int trial = 0; trial < 50; ++trial) {
    JointVector qd, tau;
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      qd[j] = std::uniform_real_distribution<double>(
          -PandaLimits::kVelocityMax[j], PandaLimits::kVelocityMax[j])(random);
      tau[j] = std::uniform_real_distribution<double>(-20, 20)(random);
    }
    PandaPlant plant(payload, RandomConfiguration(random), qd);
    const JointVector qdd = plant.Accelerations(tau);
    const JointVector back = dynamics.Torques(plant.q(), plant.qd(), qdd);
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      EXPECT_NEAR(back[j], tau[j], 1e-8) << "joint " << j + 1;
    }
  }
}

// Held by exactly its gravity torques, the arm stays where it is; held by
// those of an arm without its payload, it sags.
TEST(PandaPlantTest, HoldsStillUnderItsOwnGravityTorquesOnly) {
  std::mt19937_64 random(12);
  const JointVector q0 = RandomConfiguration(random);
  const JointVector zero{};
  const Payload payload{2.0, {0.0, 0.0, 0.05}};
  PandaPlant plant(payload, q0);
  PandaPlant unknowing(payload, q0);
  const JointVector holding = PandaDynamics(payload).Torques(q0, zero, zero);
  const JointVector guessed = PandaDynamics().Torques(q0, zero, zero);
  for (int step = 0; step < 1000; ++step) {  // 1 s at 1 kHz
    plant.Step(holding, 0.001);
    unknowing.Step(guessed, 0.001);
  }
  double moved = 0, sagged = 0;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    moved = std::max(moved, std::abs(plant.q()[j] - q0[j]));
    sagged = std::max(sagged, std::abs(unknowing.q()[j] - q0[j]));
  }
  EXPECT_LT(moved, 1e-9);
  EXPECT_GT(sagged, 0.01);
}

// Driven open-loop by the inverse dynamics of a motion, from its start,
// the plant follows it (within the integration's error over 0.2 s).
TEST(PandaPlantTest, FollowsAMotionItsInverseDynamicsDrive) {
  const JointTrajectory trajectory(5);
  PandaDynamics dynamics;
  const JointState start = trajectory.At(0.0);
  PandaPlant plant(Payload{}, start.q, start.qd);
  constexpr double kStep = 0.0001;
  for (int step = 0; step < 2000; ++step) {
    const JointState desired = trajectory.At(step * kStep);
    plant.Step(dynamics.Torques(desired.q, desired.qd, desired.qdd), kStep);
  }
  const JointState end = trajectory.At(2000 * kStep);
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    EXPECT_NEAR(plant.q()[j], end.q[j], 1e-3) << "joint " << j + 1;
  }
}

// The RMS joint tracking error (rad, over joints) of a computed-torque
// loop at 1 kHz on a plant holding 2 kg, over seconds 2-5 of a motion:
// its controller's model holding `assumed`, and its feedforward the
// model's own or, with `oracle`, the plant's true inverse dynamics.
double TrackingError(const Payload& assumed, bool oracle) {
  const Payload carried{2.0, {0.0, 0.0, 0.05}};
  const JointTrajectory trajectory(5);
  ComputedTorqueController controller(assumed);
  PandaDynamics truth(carried);
  const JointState start = trajectory.At(0.0);
  PandaPlant plant(carried, start.q, start.qd);
  double squares = 0;
  int counted = 0;
  for (int tick = 0; tick < 5000; ++tick) {
    const JointState desired = trajectory.At(tick * 0.001);
    if (tick >= 2000) {
      for (std::size_t j = 0; j < kPandaJoints; ++j) {
        squares += std::pow(desired.q[j] - plant.q()[j], 2);
      }
      counted += kPandaJoints;
    }
    const JointVector feedforward =
        oracle ? truth.Torques(desired.q, desired.qd, desired.qdd)
               : controller.RigidBodyFeedforward(desired);
    plant.Step(controller.Torques(feedforward, desired, plant.q(), plant.qd()),
               0.001);
  }
  return std::sqrt(squares / counted);
}

// What a learned correction has to win: a controller whose model misses
// the 2 kg payload tracks far worse than one that knows it, and given the
// true feedforward, it tracks as well again (its feedback through the
// wrong mass matrix is not what costs it).
TEST(ComputedTorqueTest, AnUnknownPayloadCostsTrackingThatTheFeedforwardWins) {
  const double knowing = TrackingError({2.0, {0.0, 0.0, 0.05}}, false);
  const double unknowing = TrackingError(Payload{}, false);
  const double corrected = TrackingError(Payload{}, true);
  EXPECT_LT(knowing, 1e-3);
  EXPECT_GT(unknowing, 10 * knowing);
  EXPECT_LT(corrected, 0.3 * unknowing);
  std::printf(
      "RMS tracking error: knowing %.3g, unknowing %.3g, unknowing "
      "with the true feedforward %.3g rad\n",
      knowing, unknowing, corrected);
}

TEST(JointTrajectoryTest, StaysWithinThePandasLimits) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const JointTrajectory trajectory(seed);
    for (double t = 0; t < 600.0; t += 0.013) {
      const JointState s = trajectory.At(t);
      for (std::size_t j = 0; j < kPandaJoints; ++j) {
        ASSERT_GE(s.q[j], PandaLimits::kPositionMin[j]) << seed << " " << t;
        ASSERT_LE(s.q[j], PandaLimits::kPositionMax[j]) << seed << " " << t;
        ASSERT_LE(std::abs(s.qd[j]), PandaLimits::kVelocityMax[j]);
        ASSERT_LE(std::abs(s.qdd[j]), PandaLimits::kAccelerationMax[j]);
      }
    }
  }
}

TEST(JointTrajectoryTest, VelocitiesAndAccelerationsAreTheDerivatives) {
  const JointTrajectory trajectory(11);
  constexpr double kDt = 1e-6;
  for (double t = 0.0; t < 50.0; t += 3.1) {
    const JointState before = trajectory.At(t - kDt);
    const JointState now = trajectory.At(t);
    const JointState after = trajectory.At(t + kDt);
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      EXPECT_NEAR((after.q[j] - before.q[j]) / (2 * kDt), now.qd[j], 1e-6);
      EXPECT_NEAR((after.qd[j] - before.qd[j]) / (2 * kDt), now.qdd[j], 1e-5);
    }
  }
}

// The motion is not periodic, but it keeps coming back close to where it
// has been (what makes it learnable): some whole number of task periods
// later the slow variation is nearly in phase again.
TEST(JointTrajectoryTest, ComesBackCloseButNeverExactly) {
  const JointTrajectory trajectory(2);
  const JointState first = trajectory.At(5.0);
  double closest = INFINITY;
  for (int periods = 1; periods <= 200; ++periods) {
    const JointState again = trajectory.At(5.0 + 10.0 * periods);
    double distance = 0.0;
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      distance += std::abs(first.q[j] - again.q[j]);
    }
    EXPECT_GT(distance, 1e-6) << periods;
    closest = std::min(closest, distance);
  }
  EXPECT_LT(closest, 0.05);
}

RobotStreamOptions Quiet() {
  RobotStreamOptions options;
  options.noise = SensorNoise{0, 0, 0, 0};
  return options;
}

TEST(RobotStreamTest, WithoutNoiseItIsTheTrajectoryAndItsInverseDynamics) {
  RobotStream stream(Quiet());
  const JointTrajectory trajectory(1);
  PandaDynamics dynamics;
  for (int tick = 0; tick < 500; ++tick) {
    const RobotSample sample = stream.Next();
    const JointState s = trajectory.At(tick / 1000.0);
    const JointVector tau = dynamics.Torques(s.q, s.qd, s.qdd);
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      ASSERT_EQ(sample.x[j], s.q[j]);
      ASSERT_EQ(sample.x[7 + j], s.qd[j]);
      ASSERT_EQ(sample.x[14 + j], s.qdd[j]);
      ASSERT_EQ(sample.y[j], tau[j]);
    }
  }
}

TEST(RobotStreamTest, NoiseHasTheConfiguredSpreadAndIsReproducible) {
  RobotStreamOptions options;
  options.noise = SensorNoise{0.01, 0.02, 0.3, 0.5};
  RobotStream noisy(options);
  RobotStream again(options);
  RobotStream quiet(Quiet());
  constexpr int kSamples = 20000;
  double sum_squares[4] = {0, 0, 0, 0};
  for (int i = 0; i < kSamples; ++i) {
    const RobotSample a = noisy.Next();
    const RobotSample b = again.Next();
    const RobotSample truth = quiet.Next();
    ASSERT_EQ(a.x, b.x);
    ASSERT_EQ(a.y, b.y);
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      for (int channel = 0; channel < 3; ++channel) {
        const double e = a.x[channel * 7 + j] - truth.x[channel * 7 + j];
        sum_squares[channel] += e * e;
      }
      sum_squares[3] += (a.y[j] - truth.y[j]) * (a.y[j] - truth.y[j]);
    }
  }
  const double expected[4] = {0.01, 0.02, 0.3, 0.5};
  for (int channel = 0; channel < 4; ++channel) {
    EXPECT_NEAR(std::sqrt(sum_squares[channel] / (kSamples * 7)),
                expected[channel], 0.02 * expected[channel])
        << "channel " << channel;
  }
}

TEST(RobotStreamTest, PicksUpThePayloadAtItsTick) {
  RobotStreamOptions options = Quiet();
  options.payload_from_tick = 300;
  options.payload = Payload{3.0};
  RobotStream changing(options);
  RobotStream steady(Quiet());
  for (int tick = 0; tick < 600; ++tick) {
    EXPECT_EQ(changing.carrying_payload(), tick >= 300);
    const RobotSample a = changing.Next();
    const RobotSample b = steady.Next();
    EXPECT_EQ(a.x, b.x);
    if (tick < 300) {
      EXPECT_EQ(a.y, b.y) << tick;
    } else {
      // 3 kg at the flange loads the shoulder (joint 2) by newton-metres.
      EXPECT_GT(std::abs(a.y[1] - b.y[1]), 0.5) << tick;
    }
  }
}

TEST(RobotStreamTest, StartingLaterIsTheSameMotionLater) {
  RobotStreamOptions later = Quiet();
  later.start_tick = 1234;
  RobotStream from_start(Quiet());
  RobotStream from_later(later);
  for (int i = 0; i < 1234; ++i) from_start.Next();
  EXPECT_EQ(from_start.Next().x, from_later.Next().x);
}

TEST(RobotStreamTest, ColumnsFollowTheSarcosConvention) {
  std::ifstream sarcos(std::string(STREAMREG_DATA_DIR) +
                       "/sarcos/sarcos_test.csv");
  ASSERT_TRUE(sarcos.good());
  std::string header;
  std::getline(sarcos, header);
  EXPECT_EQ(absl::StrJoin(RobotStream::ColumnNames(), ","), header);
}

}  // namespace
}  // namespace streamreg
