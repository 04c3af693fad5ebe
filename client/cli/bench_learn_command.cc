// streamreg bench learn: --robots simulated arms, each streaming through its
// own Learn call at --rate samples/s on an absolute schedule (a robot's
// control loop), optionally beside --predictors clients predicting at
// --predict_rate; reports the rate each robot achieved, per-message latency,
// whether any stream fell behind, how far learning lagged behind the
// answers (LearnResponse.unlearned, .learn_lag_us), how long each sample
// took to be reported durable after it was sent (the durability lag: the
// server answers first, LearnSession), the prequential nMSE over time, and
// how often the truth fell within the answers' intervals (and the
// predictors', at states no robot streamed), over all and per 10,000
// samples.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_learn_report.h"
#include "client/cli/bench_learn_run.h"
#include "client/cli/cli_commands.h"
#include "client/loadgen/robot_stream.h"
#include "common/command_line.h"
#include "core/base/realtime_priority.h"

namespace streamreg {
namespace {

// The flags' checks that need no server.
absl::Status CheckLearnFlags(const CliOptions& options) {
  const BenchOptions& bench = options.bench;
  if (static_cast<int>(bench.robots) < 1) return UsageError("--robots: < 1");
  if (!(options.rate >= 1)) return UsageError("--rate: < 1 Hz");
  if (!(bench.predict_rate >= 1)) {
    return UsageError("--predict_rate: < 1 Hz");
  }
  if (!(bench.duration > 0)) return UsageError("--duration: <= 0");
  if (bench.batch_ticks > 0 &&
      bench.ahead_ticks < bench.batch_ticks + bench.lead_ticks) {
    return UsageError(
        "--ahead_ticks: below --batch_ticks + --lead_ticks (the states "
        "would be handed later than the channel asks for them)");
  }
  if (bench.batch_ticks > 0 && bench.answer_when_durable) {
    return UsageError(
        "--answer_when_durable: not with --batch_ticks (the loop reads "
        "predictions ahead, which never wait for durability)");
  }
  if (const int priority = bench.realtime_priority; priority != 0) {
    if (absl::Status status = CheckRealtimePriority(priority); !status.ok()) {
      return RealtimeRefused(status);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LearnPlan> PlanLearn(Client& client, const CliOptions& options) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  if (absl::Status status = CheckLearnFlags(options); !status.ok()) {
    return status;
  }
  LearnPlan plan;
  plan.robots = static_cast<int>(options.bench.robots);
  plan.predictors = static_cast<int>(options.bench.predictors);
  plan.rate = options.rate;
  plan.predict_rate = options.bench.predict_rate;
  plan.seconds = options.bench.duration;
  plan.answered_directly = options.bench.batch_ticks == 0;
  for (int r = 0; r < plan.robots; ++r) {
    plan.models.push_back(
        options.bench.model_per_robot ? absl::StrCat(*name, "-", r) : *name);
    if (!options.bench.model_per_robot) break;
  }
  for (std::size_t m = 0; m < plan.models.size(); ++m) {
    const std::string& model = plan.models[m];
    if (absl::Status status = CreateArmModelIfAsked(client, options, model);
        !status.ok()) {
      return status;
    }
    absl::StatusOr<v1::Model> found = client.GetModel(model);
    if (!found.ok()) return found.status();
    if (found->spec().input_dim() != kRobotInputs ||
        found->spec().target_names_size() != static_cast<int>(kRobotTargets)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model ", model, " has ", found->spec().input_dim(), " inputs and ",
          found->spec().target_names_size(), " targets, not the robot's ",
          kRobotInputs, " and ", kRobotTargets));
    }
    if (m == 0) plan.before = *std::move(found);
  }
  plan.ticks = static_cast<std::uint64_t>(plan.seconds * plan.rate);
  // Each run starts later in the task than the samples the model holds, so
  // a repeated run streams states near, but never equal to, learned ones.
  plan.start_s =
      options.bench.start_s >= 0
          ? options.bench.start_s
          : 1000.0 + static_cast<double>(plan.before.stats().num_samples()) /
                         plan.rate;
  return plan;
}

}  // namespace

absl::Status BenchLearnCommand(Client& client, const CliOptions& options,
                               std::FILE* out) {
  absl::StatusOr<LearnPlan> plan = PlanLearn(client, options);
  if (!plan.ok()) return plan.status();
  LearnRuns runs(*plan);
  if (absl::Status status = RunLearn(client, options, *plan, &runs);
      !status.ok()) {
    return status;
  }
  return ReportLearn(client, options, *plan, runs, out);
}

}  // namespace streamreg
