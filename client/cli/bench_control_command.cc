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
#include "client/lib/realtime_channel.h"
#include "client/loadgen/computed_torque.h"
#include "client/loadgen/joint_trajectory.h"
#include "client/loadgen/panda_plant.h"
#include "client/loadgen/robot_model.h"
#include "client/tools/rate_ticker.h"
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

// What `bench control` was asked to run, validated.
struct ControlRun {
  std::string model;
  double rate = 0;
  std::uint64_t ticks = 0;
  double pause_at = -1;  // < 0: no pause
  double pause_for = 0;
  int server_pid = 0;
  int priority = 0;           // the loop's SCHED_FIFO priority; 0 none
  double max_half_width = 0;  // per joint, N·m
  Payload carried;
  std::uint64_t robot_seed = 0;
};

absl::StatusOr<ControlRun> ControlRunFrom(const CliOptions& options) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  const BenchOptions& bench = options.bench;
  if (!(options.rate >= 100)) return UsageError("--rate: < 100 Hz");
  if (!(bench.duration >= 2)) return UsageError("--duration: < 2 s");
  if (bench.pause_at >= 0 && bench.server_pid <= 0) {
    return UsageError("--pause_at: needs --server_pid");
  }
  if (bench.pause_at >= 0 &&
      !(bench.pause_at + bench.pause_for < bench.duration)) {
    return UsageError("--pause_at: the pause must end before --duration");
  }
  if (bench.realtime_priority != 0) {
    if (absl::Status status = CheckRealtimePriority(bench.realtime_priority);
        !status.ok()) {
      return absl::Status(status.code(), absl::StrCat("--realtime_priority: ",
                                                      status.message()));
    }
  }
  return ControlRun{
      .model = *name,
      .rate = options.rate,
      .ticks = static_cast<std::uint64_t>(bench.duration * options.rate),
      .pause_at = bench.pause_at,
      .pause_for = bench.pause_for,
      .server_pid = bench.server_pid,
      .priority = bench.realtime_priority,
      .max_half_width = bench.max_half_width_nm,
      .carried = {bench.payload_kg, {0.0, 0.0, 0.05}},
      .robot_seed = options.robot_seed};
}

// The desired states of the next kHorizon ticks as the channel takes them
// (rows of x = (q, q̇, q̈)), moved on one tick at a time.
class DesiredWindow {
 public:
  DesiredWindow(const JointTrajectory& trajectory, double rate)
      : trajectory_(trajectory), rate_(rate), rows_(kHorizon * kInputs) {
    for (std::size_t k = 0; k < kHorizon; ++k) {
      Fill(At(k + 1), &rows_[k * kInputs]);
    }
  }
  // The window after tick `tick`: ticks tick + 1 .. tick + kHorizon.
  const std::vector<double>& After(std::uint64_t tick) {
    std::copy(rows_.begin() + kInputs, rows_.end(), rows_.begin());
    Fill(At(tick + 1 + kHorizon), &rows_[(kHorizon - 1) * kInputs]);
    return rows_;
  }

 private:
  JointState At(std::uint64_t tick) const {
    return trajectory_.At(static_cast<double>(tick) / rate_);
  }
  static void Fill(const JointState& state, double* row) {
    StateRow(state.q, state.qd, state.qdd, row);
  }
  const JointTrajectory& trajectory_;
  const double rate_;
  std::vector<double> rows_;
};

// What the learned loop did, by second, and its channel's end.
struct LearnedLoopResult {
  Seconds seconds;
  std::uint64_t late_ticks = 0;
  RealtimeChannelStats stats;
  absl::Status closed;
};

// The controller with the learned correction, at the run's rate:
// feedforward = the model's rigid-body torque of the desired state plus
// the residual the channel predicted for it (what the model misses), or
// the torque alone when none came in time or its interval is wider than
// the bound (or infinite: too few scored yet). Each tick hands the channel
// what the arm did: its state, the acceleration the torque gave, and the
// part of the torque the model does not explain.
LearnedLoopResult LearnedLoop(Client& client, const ControlRun& run,
                              const JointTrajectory& trajectory) {
  RealtimeChannelOptions channel_options;
  channel_options.inputs = kInputs;
  channel_options.targets = kPandaJoints;
  channel_options.horizon = kHorizon;
  RealtimeChannel channel(&client, run.model, channel_options);
  ComputedTorqueController controller(Payload{});
  PandaDynamics model(Payload{});
  PandaDynamics truth(run.carried);  // only to score the feedforward
  const JointState first = trajectory.At(0.0);
  PandaPlant plant(run.carried, first.q, first.qd);
  DesiredWindow window(trajectory, run.rate);
  const std::vector<double> no_residual(kPandaJoints, 0.0);
  const std::vector<double> bound(kPandaJoints, run.max_half_width);
  std::vector<double> residual(kPandaJoints), x(kInputs), y(kPandaJoints);
  SecondsRecorder recorder(static_cast<std::uint64_t>(run.rate));
  const absl::Time start = absl::Now() + absl::Milliseconds(100);
  std::thread pauser;
  if (run.pause_at >= 0) {
    pauser = PauseServer(run.server_pid, start, run.pause_at, run.pause_for);
  }
  // The loop alone at --realtime_priority, as a controller's runs; the
  // channel's courier (started above) and the pauser stay normal.
  std::optional<ScopedRealtime> realtime;
  if (run.priority != 0) realtime.emplace(run.priority);
  RateTicker ticker(run.rate, start);
  while (ticker.ticks() < run.ticks) {
    const std::uint64_t late_before = ticker.late_ticks();
    ticker.Wait();
    const std::uint64_t tick = ticker.ticks() - 1;
    const JointState desired =
        trajectory.At(static_cast<double>(tick) / run.rate);
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
        ticker.late_ticks() != late_before);
    const JointVector q = plant.q(), qd = plant.qd();
    const JointVector tau = controller.Torques(feedforward, desired, q, qd);
    plant.Step(tau, 1.0 / run.rate);
    StateRow(q, qd, plant.qdd(), x.data());
    const JointVector explained = model.Torques(q, qd, plant.qdd());
    for (std::size_t j = 0; j < kPandaJoints; ++j) {
      y[j] = tau[j] - explained[j];
    }
    channel.Hand(tick, x, y, window.After(tick));
  }
  realtime.reset();
  if (pauser.joinable()) pauser.join();
  LearnedLoopResult result;
  result.closed = channel.Close();
  result.stats = channel.stats();
  result.seconds = recorder.seconds();
  result.late_ticks = ticker.late_ticks();
  return result;
}

// The pause's seconds against the rigid-body controller's, and the
// recovery after it: "back" is the first second after the pause within
// 1.5x the mean of the ten before it. Null without a pause.
nlohmann::json PauseReport(const ControlRun& run, const Seconds& learned,
                           const Seconds& rigid) {
  if (run.pause_at < 0) return nullptr;
  const std::size_t all = learned.rms.size();
  const auto from = static_cast<std::size_t>(run.pause_at);
  const auto to =
      static_cast<std::size_t>(std::ceil(run.pause_at + run.pause_for));
  double worst_ratio = 0;
  std::uint64_t fallbacks = 0;
  std::uint64_t late = 0;
  for (std::size_t s = from; s < std::min(to + 1, all); ++s) {
    worst_ratio = std::max(worst_ratio, learned.rms[s] / rigid.rms[s]);
    fallbacks += learned.fallbacks[s];
    late += learned.late[s];
  }
  const double before = MeanOf(learned.rms, from >= 10 ? from - 10 : 0, from);
  double back_after = NAN;
  for (std::size_t s = to; s < all; ++s) {
    if (learned.rms[s] <= 1.5 * before) {
      back_after = static_cast<double>(s + 1) - (run.pause_at + run.pause_for);
      break;
    }
  }
  return {{"at_s", run.pause_at},
          {"for_s", run.pause_for},
          {"fallback_ticks", fallbacks},
          {"late_ticks", late},
          {"worst_ratio_to_rigid_body", worst_ratio},
          {"back_within_s", back_after}};
}

nlohmann::json ControlReport(const ControlRun& run,
                             const LearnedLoopResult& loop,
                             const Seconds& rigid) {
  const Seconds& learned = loop.seconds;
  const std::size_t all = learned.rms.size();
  std::uint64_t fallbacks = 0;
  for (std::uint64_t n : learned.fallbacks) fallbacks += n;
  return {{"kind", "control"},
          {"model", run.model},
          {"rate_hz", run.rate},
          {"ticks", run.ticks},
          {"late_ticks", loop.late_ticks},
          {"payload_kg", run.carried.mass_kg},
          {"learned_rms_last_half", MeanOf(learned.rms, all / 2, all)},
          {"rigid_body_rms_last_half", MeanOf(rigid.rms, all / 2, all)},
          {"fallback_ticks", fallbacks},
          {"samples_durable", loop.stats.samples_durable},
          {"samples_dropped", loop.stats.samples_dropped},
          {"messages_failed", loop.stats.failures},
          {"pause", PauseReport(run, learned, rigid)},
          {"learned_rms_by_second", learned.rms},
          {"fallbacks_by_second", learned.fallbacks},
          {"late_ticks_by_second", learned.late},
          {"realtime_priority", run.priority},
          {"rigid_body_rms_by_second", rigid.rms},
          {"learned_feedforward_rms_by_second", learned.feedforward_rms},
          {"rigid_body_feedforward_rms_by_second", rigid.feedforward_rms}};
}

// The report as text: the summary, the pause, then each second.
void PrintControlReport(const nlohmann::json& report, std::FILE* out) {
  const auto count = [&](const char* key) {
    return report[key].get<unsigned long long>();
  };
  const double learned = report["learned_rms_last_half"];
  const double rigid = report["rigid_body_rms_last_half"];
  std::fprintf(out,
               "%llu ticks at %.0f Hz, %llu late; RMS joint tracking error "
               "over the last half: learned correction %.3g rad, rigid-body "
               "model alone %.3g rad (%.2fx)\n",
               count("ticks"), report["rate_hz"].get<double>(),
               count("late_ticks"), learned, rigid, learned / rigid);
  std::fprintf(out,
               "fallback ticks: %llu of %llu; %llu samples learned, %llu "
               "dropped, %llu messages failed\n",
               count("fallback_ticks"), count("ticks"),
               count("samples_durable"), count("samples_dropped"),
               count("messages_failed"));
  if (const nlohmann::json& pause = report["pause"]; !pause.is_null()) {
    const double back = pause["back_within_s"].is_number()
                            ? pause["back_within_s"].get<double>()
                            : NAN;
    std::fprintf(out,
                 "server paused %.0f s at %.0f s: %llu ticks fell back, %llu "
                 "started late, the error at most %.2fx the rigid-body "
                 "controller's that second, back within %.0f s after\n",
                 pause["for_s"].get<double>(), pause["at_s"].get<double>(),
                 pause["fallback_ticks"].get<unsigned long long>(),
                 pause["late_ticks"].get<unsigned long long>(),
                 pause["worst_ratio_to_rigid_body"].get<double>(), back);
  }
  const auto& rms = report["learned_rms_by_second"];
  for (std::size_t s = 0; s < rms.size(); ++s) {
    std::fprintf(
        out,
        "  second %3zu: learned %.3g rad (%llu fell back, %llu late; "
        "feedforward off by %.3g N·m), rigid-body %.3g rad (%.3g N·m)\n",
        s + 1, rms[s].get<double>(),
        report["fallbacks_by_second"][s].get<unsigned long long>(),
        report["late_ticks_by_second"][s].get<unsigned long long>(),
        report["learned_feedforward_rms_by_second"][s].get<double>(),
        report["rigid_body_rms_by_second"][s].get<double>(),
        report["rigid_body_feedforward_rms_by_second"][s].get<double>());
  }
}

}  // namespace

absl::Status BenchControlCommand(Client& client, const CliOptions& options,
                                 std::FILE* out) {
  absl::StatusOr<ControlRun> run = ControlRunFrom(options);
  if (!run.ok()) return run.status();
  if (absl::Status status = CreateArmModelIfAsked(client, options, run->model);
      !status.ok()) {
    return status;
  }
  const JointTrajectory trajectory(run->robot_seed);
  const Seconds rigid =
      RigidBodyLoop(trajectory, run->carried, run->rate, run->ticks);
  const LearnedLoopResult learned = LearnedLoop(client, *run, trajectory);
  const nlohmann::json report = ControlReport(*run, learned, rigid);
  PrintControlReport(report, out);
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
  return learned.closed;
}

}  // namespace streamreg
