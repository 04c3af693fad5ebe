#ifndef STREAMREG_BENCH_BENCH_SUPPORT_H_
#define STREAMREG_BENCH_BENCH_SUPPORT_H_

// What the benchmark tools share: a clock, percentiles, and the stream they
// learn: the simulated Panda of streamreg-robot-sim (client/loadgen/
// robot_stream.h; d = 21 inputs q, q', q'', m = 7 joint torques, sensor
// noise on every channel).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/loadgen/robot_stream.h"
#include "common/percentile.h"
#include "core/model/model.h"
#include "tests/support/synthetic_points.h"

namespace streamreg {

using BenchClock = std::chrono::steady_clock;

inline double Seconds(BenchClock::duration d) {
  return std::chrono::duration<double>(d).count();
}

inline constexpr std::size_t kArmJoints = kPandaJoints;

// n samples of the arm's sensor stream (task 1, RobotStreamOptions{}, from
// `start_tick`); sample s has id s + 1.
struct ArmStream {
  explicit ArmStream(std::size_t n, std::uint64_t start_tick = 0,
                     std::uint64_t noise_seed = 1)
      : inputs{kRobotInputs, {}} {
    RobotStreamOptions options;
    options.start_tick = start_tick;
    options.noise_seed = noise_seed;
    RobotStream robot(options);
    for (std::size_t s = 0; s < n; ++s) {
      const RobotSample sample = robot.Next();
      inputs.coordinates.insert(inputs.coordinates.end(), sample.x.begin(),
                                sample.x.end());
      torques.insert(torques.end(), sample.y.begin(), sample.y.end());
    }
  }
  Sample sample(std::size_t s) const {
    return Sample{
        inputs.point(s), {torques.data() + s * kArmJoints, kArmJoints}, s + 1};
  }
  std::vector<Sample> batch(std::size_t begin, std::size_t end) const {
    std::vector<Sample> samples;
    for (std::size_t s = begin; s < end; ++s) samples.push_back(sample(s));
    return samples;
  }
  std::size_t size() const { return inputs.size(); }

  PointSet inputs;
  std::vector<double> torques;
};

// A model of the arm's 7 torques on its 21 inputs, defaults otherwise.
inline ModelConfig ArmConfig(MetricKind metric) {
  ModelConfig config;
  config.input_dim = 3 * kArmJoints;
  for (std::size_t j = 0; j < kArmJoints; ++j) {
    config.target_names.push_back(absl::StrFormat("tau%d", j + 1));
  }
  config.metric = metric;
  return config;
}

}  // namespace streamreg

#endif  // STREAMREG_BENCH_BENCH_SUPPORT_H_
