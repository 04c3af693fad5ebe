#ifndef STREAMREG_CLIENT_LOADGEN_ROBOT_STREAM_H_
#define STREAMREG_CLIENT_LOADGEN_ROBOT_STREAM_H_

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "client/loadgen/joint_trajectory.h"
#include "client/loadgen/panda_dynamics.h"

namespace streamreg {

inline constexpr std::size_t kRobotInputs = 3 * kPandaJoints;  // q, q̇, q̈
inline constexpr std::size_t kRobotTargets = kPandaJoints;     // τ

// One tick of the arm: x = (q1..q7, q̇1..q̇7, q̈1..q̈7) as measured, y = the
// seven joint torques as measured.
struct RobotSample {
  std::array<double, kRobotInputs> x;
  std::array<double, kRobotTargets> y;
};

// Standard deviations of the Gaussian noise on each measured signal (the
// encoders, the differentiated velocities and accelerations, the joint
// torque sensors).
struct SensorNoise {
  double position_rad = 1e-4;
  double velocity_rad_s = 2e-3;
  double acceleration_rad_s2 = 0.05;
  double torque_nm = 0.05;
};

struct RobotStreamOptions {
  // The task: which trajectory the arm repeats.
  std::uint64_t seed = 1;
  // The sensor noise's draws (robots doing the same task differ here).
  std::uint64_t noise_seed = 1;
  // The first tick: a stream can start later in the same motion.
  std::uint64_t start_tick = 0;
  double sample_rate_hz = 1000.0;
  SensorNoise noise;
  JointTrajectory::Options trajectory;
  // From this tick on (if set) the arm carries `payload`: a drift the
  // model has to adapt to.
  std::optional<std::uint64_t> payload_from_tick;
  Payload payload{2.0};
};

// The endless sensor stream of a simulated Panda arm following a smooth
// random trajectory at a fixed sample rate: inverse dynamics (with
// friction) give the torques, sensor noise is added to every channel. The
// same options give the same stream.
class RobotStream {
 public:
  explicit RobotStream(const RobotStreamOptions& options);

  RobotSample Next();
  // The next tick (start_tick + samples produced so far).
  std::uint64_t tick() const { return tick_; }
  bool carrying_payload() const;

  // The column names of data/README.md's convention (SARCOS's): q1..q7,
  // qd1..qd7, qdd1..qdd7, target_tau1..target_tau7.
  static std::vector<std::string> ColumnNames();
  static std::vector<std::string> TargetNames();  // tau1..tau7

 private:
  RobotStreamOptions options_;
  JointTrajectory trajectory_;
  PandaDynamics unloaded_;
  PandaDynamics loaded_;
  std::mt19937_64 random_;
  std::uint64_t tick_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LOADGEN_ROBOT_STREAM_H_
