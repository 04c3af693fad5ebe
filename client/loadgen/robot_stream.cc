#include "client/loadgen/robot_stream.h"

#include "absl/strings/str_cat.h"

namespace streamreg {
namespace {

// Noise draws of their own for each (noise seed, start tick).
std::mt19937_64 NoiseEngine(std::uint64_t seed, std::uint64_t start_tick) {
  std::seed_seq sequence{static_cast<std::uint32_t>(seed),
                         static_cast<std::uint32_t>(seed >> 32),
                         static_cast<std::uint32_t>(start_tick),
                         static_cast<std::uint32_t>(start_tick >> 32)};
  return std::mt19937_64(sequence);
}

}  // namespace

RobotStream::RobotStream(const RobotStreamOptions& options)
    : options_(options),
      trajectory_(options.seed, options.trajectory),
      unloaded_(Payload{0.0}),
      loaded_(options.payload),
      random_(NoiseEngine(options.noise_seed, options.start_tick)),
      tick_(options.start_tick) {}

bool RobotStream::carrying_payload() const {
  return options_.payload_from_tick.has_value() &&
         tick_ >= *options_.payload_from_tick;
}

RobotSample RobotStream::Next() {
  const JointState state =
      trajectory_.At(static_cast<double>(tick_) / options_.sample_rate_hz);
  const JointVector tau = carrying_payload()
                              ? loaded_.Torques(state.q, state.qd, state.qdd)
                              : unloaded_.Torques(state.q, state.qd, state.qdd);
  ++tick_;
  std::normal_distribution<double> gaussian(0.0, 1.0);
  const SensorNoise& noise = options_.noise;
  RobotSample sample;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    sample.x[j] = state.q[j] + noise.position_rad * gaussian(random_);
    sample.x[kPandaJoints + j] =
        state.qd[j] + noise.velocity_rad_s * gaussian(random_);
    sample.x[2 * kPandaJoints + j] =
        state.qdd[j] + noise.acceleration_rad_s2 * gaussian(random_);
    sample.y[j] = tau[j] + noise.torque_nm * gaussian(random_);
  }
  return sample;
}

std::vector<std::string> RobotStream::TargetNames() {
  std::vector<std::string> names;
  for (std::size_t j = 1; j <= kPandaJoints; ++j) {
    names.push_back(absl::StrCat("tau", j));
  }
  return names;
}

std::vector<std::string> RobotStream::ColumnNames() {
  std::vector<std::string> names;
  for (const char* signal : {"q", "qd", "qdd"}) {
    for (std::size_t j = 1; j <= kPandaJoints; ++j) {
      names.push_back(absl::StrCat(signal, j));
    }
  }
  for (const std::string& target : TargetNames()) {
    names.push_back(absl::StrCat("target_", target));
  }
  return names;
}

}  // namespace streamreg
