// streamreg bench control: a computed-torque controller on the simulated
// Panda, whose own model misses the payload the arm holds, run at a fixed
// rate with the model's learned correction through a RealtimeChannel, and
// offline without it on the same motion; the joint tracking error of both
// by second, the ticks that fell back, and a server paused meanwhile.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_report.h"
#include "client/cli/cli_commands.h"
#include "client/lib/rate_ticker.h"
#include "client/lib/realtime_channel.h"
#include "client/loadgen/computed_torque.h"
#include "client/loadgen/joint_trajectory.h"
#include "client/loadgen/panda_plant.h"
#include "client/loadgen/robot_model.h"
#include "common/command_line.h"
#include "core/base/realtime_priority.h"

namespace streamreg {
namespace {

constexpr std::size_t kHorizon = 20;
constexpr std::size_t kInputs = 3 * kPandaJoints;

// x = (q, q̇, q̈) of a state, as the robot model's inputs.
void StateRow(const JointVector& q, const JointVector& qd,
              const JointVector& qdd, double* row) {
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    row[j] = q[j];
    row[kPandaJoints + j] = qd[j];
    row[2 * kPandaJoints + j] = qdd[j];
  }
}

// The squared distance of two joint vectors, summed over the joints.
double SquaredDistance(const JointVector& a, const JointVector& b) {
  double sum = 0;
  for (std::size_t j = 0; j < kPandaJoints; ++j) {
    sum += (a[j] - b[j]) * (a[j] - b[j]);
  }
  return sum;
}

// Per second: the RMS joint tracking error, the ticks that fell back, the
// RMS error of the feedforward the controller used against the torque the
// desired state truly needs (the payload's included), and the ticks that
// started over a period late.
struct Seconds {
  std::vector<double> rms;
  std::vector<std::uint64_t> fallbacks;
  std::vector<double> feedforward_rms;
  std::vector<std::uint64_t> late;
};

// Accumulates a loop's ticks into seconds of `per_second` ticks.
class SecondsRecorder {
 public:
  explicit SecondsRecorder(std::uint64_t per_second)
      : per_second_(per_second) {}
  void Add(double squared_error, bool fell_back,
           double squared_feedforward_error, bool late = false) {
    squares_ += squared_error;
    fallbacks_ += fell_back;
    feedforward_squares_ += squared_feedforward_error;
    late_ += late;
    if (++ticks_ % per_second_ == 0) {
      const auto count = static_cast<double>(per_second_ * kPandaJoints);
      seconds_.rms.push_back(std::sqrt(squares_ / count));
      seconds_.fallbacks.push_back(fallbacks_);
      seconds_.feedforward_rms.push_back(
          std::sqrt(feedforward_squares_ / count));
      seconds_.late.push_back(late_);
      squares_ = 0;
      fallbacks_ = 0;
      feedforward_squares_ = 0;
      late_ = 0;
    }
  }
  const Seconds& seconds() const { return seconds_; }

 private:
  const std::uint64_t per_second_;
  std::uint64_t ticks_ = 0;
  double squares_ = 0;
  std::uint64_t fallbacks_ = 0;
  double feedforward_squares_ = 0;
  std::uint64_t late_ = 0;
  Seconds seconds_;
};

// The same motion and plant under the controller's own model alone.
Seconds RigidBodyLoop(const JointTrajectory& trajectory, const Payload& carried,
                      double rate, std::uint64_t ticks) {
  ComputedTorqueController controller(Payload{});
  PandaDynamics truth(carried);
  const JointState start = trajectory.At(0.0);
  PandaPlant plant(carried, start.q, start.qd);
  SecondsRecorder recorder(static_cast<std::uint64_t>(rate));
  for (std::uint64_t tick = 0; tick < ticks; ++tick) {
    const JointState desired = trajectory.At(static_cast<double>(tick) / rate);
    const JointVector feedforward = controller.RigidBodyFeedforward(desired);
    recorder.Add(
        SquaredDistance(desired.q, plant.q()), true,
        SquaredDistance(feedforward,
                        truth.Torques(desired.q, desired.qd, desired.qdd)));
    plant.Step(controller.Torques(feedforward, desired, plant.q(), plant.qd()),
               1.0 / rate);
  }
  return recorder.seconds();
}

// Stops the server `pid` at `start` + `at` for `length` (SIGSTOP, then
// SIGCONT), on a thread of its own.
std::thread PauseServer(int pid, absl::Time start, double at, double length) {
  return std::thread([=] {
    absl::SleepFor(start + absl::Seconds(at) - absl::Now());
    kill(pid, SIGSTOP);
    absl::SleepFor(absl::Seconds(length));
    kill(pid, SIGCONT);
  });
}

double MeanOf(const std::vector<double>& values, std::size_t from,
              std::size_t to) {
  to = std::min(to, values.size());
  if (from >= to) return NAN;
  double sum = 0;
  for (std::size_t i = from; i < to; ++i) sum += values[i];
  return sum / static_cast<double>(to - from);
}

}  // namespace

absl::Status BenchControlCommand(Client& client, const CliOptions& options,
                                 std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  const double rate = options.rate;
  const double seconds = options.bench.duration;
  if (!(rate >= 100)) return UsageError("--rate: < 100 Hz");
  if (!(seconds >= 2)) return UsageError("--duration: < 2 s");
  const double pause_at = options.bench.pause_at;
  const double pause_for = options.bench.pause_for;
  if (pause_at >= 0 && options.bench.server_pid <= 0) {
    return UsageError("--pause_at: needs --server_pid");
  }
  if (pause_at >= 0 && !(pause_at + pause_for < seconds)) {
    return UsageError("--pause_at: the pause must end before --duration");
  }
  const int priority = options.bench.realtime_priority;
  if (priority != 0) {
    if (absl::Status status = CheckRealtimePriority(priority); !status.ok()) {
      return absl::Status(status.code(), absl::StrCat("--realtime_priority: ",
                                                      status.message()));
    }
  }
  if (absl::Status status = CreateArmModelIfAsked(client, options, *name);
      !status.ok()) {
    return status;
  }
  const Payload carried{options.bench.payload_kg, {0.0, 0.0, 0.05}};
  const JointTrajectory trajectory(options.robot_seed);
  const auto ticks = static_cast<std::uint64_t>(seconds * rate);
  const auto per_second = static_cast<std::uint64_t>(rate);
  const Seconds rigid = RigidBodyLoop(trajectory, carried, rate, ticks);

  // The learned loop: feedforward = the model's rigid-body torque of the
  // desired state plus the learned residual (what the model misses), or
  // the rigid-body torque alone when no residual came in time, or its
  // interval is not finite yet.
  RealtimeChannelOptions channel_options;
  channel_options.inputs = kInputs;
  channel_options.targets = kPandaJoints;
  channel_options.horizon = kHorizon;
  RealtimeChannel channel(&client, *name, channel_options);
  ComputedTorqueController controller(Payload{});
  PandaDynamics model(Payload{});
  PandaDynamics truth(carried);  // only to score the feedforward
  const JointState first = trajectory.At(0.0);
  PandaPlant plant(carried, first.q, first.qd);
  std::vector<double> desired_rows(kHorizon * kInputs);
  for (std::size_t k = 0; k < kHorizon; ++k) {
    const JointState state = trajectory.At(static_cast<double>(k + 1) / rate);
    StateRow(state.q, state.qd, state.qdd, &desired_rows[k * kInputs]);
  }
  const std::vector<double> no_residual(kPandaJoints, 0.0);
  // A residual whose interval is wider (or infinite: too few scored yet)
  // is not used.
  const std::vector<double> bound(kPandaJoints,
                                  options.bench.max_half_width_nm);
  std::vector<double> residual(kPandaJoints), x(kInputs), y(kPandaJoints);
  SecondsRecorder recorder(per_second);
  const absl::Time start = absl::Now() + absl::Milliseconds(100);
  std::thread pauser;
  if (pause_at >= 0) {
    pauser = PauseServer(options.bench.server_pid, start, pause_at, pause_for);
  }
  // The loop alone at --realtime_priority, as a controller's runs; the
  // channel's courier (started above) and the pauser stay normal.
  std::optional<ScopedRealtime> realtime;
  if (priority != 0) realtime.emplace(priority);
  RateTicker ticker(rate, start);
  while (ticker.ticks() < ticks) {
    const std::uint64_t late_before = ticker.late_ticks();
    ticker.Wait();
    const bool late = ticker.late_ticks() != late_before;
    const std::uint64_t tick = ticker.ticks() - 1;
    const JointState desired = trajectory.At(static_cast<double>(tick) / rate);
    const RealtimeReading reading =
        channel.Read(tick, residual, no_residual, {.max_half_width = bound});
    JointVector feedforward = model.Torques(desired.q, desired.qd, desired.qdd);
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      feedforward[j] += residual[j];
    }
    recorder.Add(
        SquaredDistance(desired.q, plant.q()), !reading.predicted(),
        SquaredDistance(feedforward,
                        truth.Torques(desired.q, desired.qd, desired.qdd)),
        late);
    const JointVector q = plant.q(), qd = plant.qd();
    const JointVector tau = controller.Torques(feedforward, desired, q, qd);
    plant.Step(tau, 1.0 / rate);
    // What the arm did: its state, the acceleration the torque gave, and
    // the part of the torque the controller's model does not explain.
    StateRow(q, qd, plant.qdd(), x.data());
    const JointVector explained = model.Torques(q, qd, plant.qdd());
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      y[j] = tau[j] - explained[j];
    }
    std::copy(desired_rows.begin() + kInputs, desired_rows.end(),
              desired_rows.begin());
    const JointState ahead =
        trajectory.At(static_cast<double>(tick + 1 + kHorizon) / rate);
    StateRow(ahead.q, ahead.qd, ahead.qdd,
             &desired_rows[(kHorizon - 1) * kInputs]);
    channel.Hand(tick, x, y, desired_rows);
  }
  realtime.reset();
  if (pauser.joinable()) pauser.join();
  const absl::Status closed = channel.Close();
  const RealtimeChannelStats stats = channel.stats();
  const Seconds& learned = recorder.seconds();

  // The last half, the pause's seconds, and the recovery after it.
  const std::size_t all = learned.rms.size();
  const double learned_late = MeanOf(learned.rms, all / 2, all);
  const double rigid_late = MeanOf(rigid.rms, all / 2, all);
  std::uint64_t fallbacks = 0;
  for (std::uint64_t n : learned.fallbacks) fallbacks += n;
  nlohmann::json pause = nullptr;
  std::string pause_text;
  if (pause_at >= 0) {
    const auto from = static_cast<std::size_t>(pause_at);
    const auto to = static_cast<std::size_t>(std::ceil(pause_at + pause_for));
    double worst_ratio = 0;
    std::uint64_t paused_fallbacks = 0;
    std::uint64_t paused_late = 0;
    for (std::size_t s = from; s < std::min(to + 1, all); ++s) {
      worst_ratio = std::max(worst_ratio, learned.rms[s] / rigid.rms[s]);
      paused_fallbacks += learned.fallbacks[s];
      paused_late += learned.late[s];
    }
    // Back: the first second after the pause within 1.5x the mean of the
    // ten before it.
    const double before = MeanOf(learned.rms, from >= 10 ? from - 10 : 0, from);
    double back_after = NAN;
    for (std::size_t s = to; s < all; ++s) {
      if (learned.rms[s] <= 1.5 * before) {
        back_after = static_cast<double>(s + 1) - (pause_at + pause_for);
        break;
      }
    }
    pause = {{"at_s", pause_at},
             {"for_s", pause_for},
             {"fallback_ticks", paused_fallbacks},
             {"late_ticks", paused_late},
             {"worst_ratio_to_rigid_body", worst_ratio},
             {"back_within_s", back_after}};
    pause_text = absl::StrFormat(
        "server paused %.0f s at %.0f s: %llu ticks fell back, %llu started "
        "late, the error at most %.2fx the rigid-body controller's that "
        "second, back within %.0f s after\n",
        pause_for, pause_at, static_cast<unsigned long long>(paused_fallbacks),
        static_cast<unsigned long long>(paused_late), worst_ratio, back_after);
  }
  std::fprintf(out,
               "%llu ticks at %.0f Hz, %llu late; RMS joint tracking error "
               "over the last half: learned correction %.3g rad, rigid-body "
               "model alone %.3g rad (%.2fx)\n",
               static_cast<unsigned long long>(ticks), rate,
               static_cast<unsigned long long>(ticker.late_ticks()),
               learned_late, rigid_late, learned_late / rigid_late);
  std::fprintf(out,
               "fallback ticks: %llu of %llu; %llu samples learned, %llu "
               "dropped, %llu messages failed\n",
               static_cast<unsigned long long>(fallbacks),
               static_cast<unsigned long long>(ticks),
               static_cast<unsigned long long>(stats.samples_durable),
               static_cast<unsigned long long>(stats.samples_dropped),
               static_cast<unsigned long long>(stats.failures));
  std::fputs(pause_text.c_str(), out);
  for (std::size_t s = 0; s < all; ++s) {
    std::fprintf(out,
                 "  second %3zu: learned %.3g rad (%llu fell back, %llu "
                 "late; feedforward off by %.3g N·m), rigid-body %.3g rad "
                 "(%.3g N·m)\n",
                 s + 1, learned.rms[s],
                 static_cast<unsigned long long>(learned.fallbacks[s]),
                 static_cast<unsigned long long>(learned.late[s]),
                 learned.feedforward_rms[s], rigid.rms[s],
                 rigid.feedforward_rms[s]);
  }
  const nlohmann::json report = {
      {"kind", "control"},
      {"model", *name},
      {"rate_hz", rate},
      {"ticks", ticks},
      {"late_ticks", ticker.late_ticks()},
      {"payload_kg", carried.mass_kg},
      {"learned_rms_last_half", learned_late},
      {"rigid_body_rms_last_half", rigid_late},
      {"fallback_ticks", fallbacks},
      {"samples_durable", stats.samples_durable},
      {"pause", pause},
      {"learned_rms_by_second", learned.rms},
      {"fallbacks_by_second", learned.fallbacks},
      {"late_ticks_by_second", learned.late},
      {"realtime_priority", priority},
      {"rigid_body_rms_by_second", rigid.rms},
      {"learned_feedforward_rms_by_second", learned.feedforward_rms},
      {"rigid_body_feedforward_rms_by_second", rigid.feedforward_rms}};
  if (!options.json.empty()) {
    if (absl::Status status = WriteJsonReport(report, options.json);
        !status.ok()) {
      return status;
    }
  }
  if (absl::Status status = PlotIfAsked(report, options.bench, out);
      !status.ok()) {
    return status;
  }
  return closed;
}

}  // namespace streamreg
