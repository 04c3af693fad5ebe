// `streamreg bench learn`'s run: what it was asked for (LearnPlan), every
// simulated arm and predicting client on a thread of its own (RunLearn),
// and what each of them measured (LearnRuns). bench_learn_report.h reports
// it; bench_learn_command.cc plans, runs and reports.
#ifndef STREAMREG_CLIENT_CLI_BENCH_LEARN_RUN_H_
#define STREAMREG_CLIENT_CLI_BENCH_LEARN_RUN_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/cli/ahead_answers.h"
#include "client/cli/cli_options.h"
#include "client/cli/interval_coverage.h"
#include "client/lib/client.h"
#include "client/lib/realtime_channel.h"
#include "client/loadgen/robot_stream.h"
#include "client/tools/latency_recorder.h"
#include "common/normalized_error.h"

namespace streamreg {

// A stream that started a message more than this many periods late could
// not keep its robot's pace.
constexpr int kFellBehindPeriods = 10;
// The running coverage is also reported over windows of this many samples
// of a stream (a drifting stream's coverage should hold in each).
constexpr std::uint64_t kCoverageWindowSamples = 10'000;

// One answered message: when it was sent (seconds after the start), its
// round trip, and how stale its prediction was.
struct AnsweredMessage {
  double t_s = 0.0;
  double latency_us = 0.0;
  double lag_samples = 0.0;
  double lag_us = 0.0;
};

struct RobotRun {
  std::vector<AnsweredMessage> ticks;
  // Per sample, microseconds from its send to the watermark covering it.
  std::vector<double> durability_lag_us;
  std::uint64_t sent = 0;
  std::uint64_t late_ticks = 0;
  absl::Duration max_lag;
  double seconds = 0.0;
  LatencyRecorder latencies;
  double nmse = 0.0;
  std::vector<double> nmse_by_second;
  IntervalCoverage coverage{kRobotTargets, kCoverageWindowSamples};
  // With --batch_ticks: what the loop got from its predictions ahead, how
  // long its calls to the channel took, and the channel's counts.
  std::optional<AheadAnswers> ahead;
  LatencyRecorder read_calls, hand_calls;
  RealtimeChannelStats channel;
  absl::Status status;
};

struct PredictorRun {
  std::uint64_t predictions = 0;
  std::uint64_t late_ticks = 0;
  absl::Duration max_lag;
  LatencyRecorder latencies;
  IntervalCoverage coverage{kRobotTargets, kCoverageWindowSamples};
  absl::Status status;
};

// The answers of every robot on one model, pooled as the server counts
// them (ModelStats.answer_nmse): each answer against its own sample.
struct PooledAnswers {
  explicit PooledAnswers(std::size_t targets) : error(targets) {}
  std::mutex mutex;
  NormalizedError error;
};

// What a run was asked for, checked against the server: its models (one,
// or one per robot), the first model as it was before the run, the ticks
// each robot sends and where in the task they start.
struct LearnPlan {
  std::vector<std::string> models;
  int robots = 0;
  int predictors = 0;
  double rate = 0.0;
  double predict_rate = 0.0;
  double seconds = 0.0;
  v1::Model before;
  std::uint64_t ticks = 0;
  double start_s = 0.0;
  // An arm that predicts ahead sees neither its answers nor their lags:
  // its channel's courier has its messages' answers.
  bool answered_directly = true;
};

// What the arms and the predictors measured, and the answers to the
// robots of the first model as it counts them.
struct LearnRuns {
  explicit LearnRuns(const LearnPlan& plan)
      : robots(plan.robots), predictors(plan.predictors) {}
  std::vector<RobotRun> robots;
  std::vector<PredictorRun> predictors;
  PooledAnswers first_models_answers{kRobotTargets};
};

// A --realtime_priority the system refused, and why.
absl::Status RealtimeRefused(const absl::Status& status);

// Every arm and predictor on a thread of its own, all starting on the same
// tick; the first failure, if any.
absl::Status RunLearn(const Client& client, const CliOptions& options,
                      const LearnPlan& plan, LearnRuns* runs);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_BENCH_LEARN_RUN_H_
