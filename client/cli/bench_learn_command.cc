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
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/cli/ahead_answers.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_report.h"
#include "client/cli/cli_commands.h"
#include "client/cli/interval_coverage.h"
#include "client/cli/target_mean.h"
#include "client/lib/latency_recorder.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "client/lib/rate_ticker.h"
#include "client/lib/realtime_channel.h"
#include "client/loadgen/robot_model.h"
#include "client/loadgen/robot_stream.h"
#include "common/command_line.h"
#include "common/normalized_error.h"
#include "common/percentile.h"
#include "core/base/realtime_priority.h"

namespace streamreg {
namespace {

// A stream that started a message more than this many periods late could
// not keep its robot's pace.
constexpr int kFellBehindPeriods = 10;
// The running coverage is also reported over windows of this many samples
// of a stream (a drifting stream's coverage should hold in each).
constexpr std::uint64_t kCoverageWindowSamples = 10'000;

// One answered message: when it was sent (seconds after the start), its
// round trip, and how stale its prediction was.
struct Tick {
  double t_s = 0.0;
  double latency_us = 0.0;
  double lag_samples = 0.0;
  double lag_us = 0.0;
};

struct RobotRun {
  std::vector<Tick> ticks;
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

// A --realtime_priority the system refused, and why.
absl::Status RealtimeRefused(const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("--realtime_priority: ", status.message()));
}

// A controller's loop (an arm's or a predictor's) at --realtime_priority,
// if asked: its connection's reads and writes run on the calling thread,
// and what it starts inherits the priority.
absl::Status EnterControllersPriority(const CliOptions& cli) {
  if (cli.bench.realtime_priority <= 0) return absl::OkStatus();
  absl::Status status = EnterRealtime(cli.bench.realtime_priority);
  return status.ok() ? status : RealtimeRefused(status);
}

// Robot r: the same task as the others (a fleet of identical arms), its own
// sensor noise, and its own place in the motion (37 s apart), from
// `start_s` seconds into the task.
RobotStreamOptions RobotOptions(const CliOptions& cli, int robot, double rate,
                                double start_s) {
  RobotStreamOptions options;
  options.seed = cli.robot_seed;
  options.noise_seed = options.seed * 1000 + robot + 1;
  options.sample_rate_hz = rate;
  options.start_tick =
      static_cast<std::uint64_t>((start_s + 37.0 * robot) * rate);
  const double payload_at = cli.bench.payload_at;
  if (payload_at >= 0) {
    options.payload_from_tick =
        options.start_tick + static_cast<std::uint64_t>(payload_at * rate);
    options.payload.mass_kg = cli.bench.payload_kg;
  }
  return options;
}

// An arm's connection of its own and its Learn session on it, recording
// each sample's durability lag into `run`.
struct ArmSession {
  ArmSession(const CliOptions& cli, const ClientOptions& base,
             const std::string& model, RobotRun* run)
      : client(OwnConnection(base)) {
    LearnSessionOptions options;
    options.answer_when_durable = cli.bench.answer_when_durable;
    options.on_durable = [run](std::uint64_t, absl::Duration lag) {
      run->durability_lag_us.push_back(absl::ToDoubleMicroseconds(lag));
    };
    session = client.StartLearn(model, options);
  }
  static ClientOptions OwnConnection(ClientOptions options) {
    options.own_connection = true;
    return options;
  }

  Client client;
  std::unique_ptr<LearnSession> session;
};

// The answers of one arm's samples, scored as they come: the run's
// prequential error by second, its intervals' coverage, and the pool of
// its model's answers.
class ArmAnswers {
 public:
  ArmAnswers(double rate, PooledAnswers* pooled, RobotRun* run)
      : per_window_(static_cast<std::uint64_t>(rate)),
        pooled_(pooled),
        run_(run) {}

  void Add(const v1::Prediction& prediction, std::span<const double> y) {
    const std::span<const double> predicted = PredictedValues(prediction);
    error_.Add(predicted, y);
    if (pooled_ != nullptr) {
      std::lock_guard<std::mutex> lock(pooled_->mutex);
      pooled_->error.Add(predicted, y);
    }
    run_->coverage.Add(prediction, y);
    ++run_->sent;
    if (run_->sent % per_window_ == 0) {
      run_->nmse_by_second.push_back(error_.WindowMeanNmse());
      error_.StartWindow();
    }
  }
  // One exchange: sent at `sent`, answered at `answered`.
  void Exchanged(const v1::LearnResponse& response, absl::Time start,
                 absl::Time sent, absl::Time answered) {
    const absl::Duration latency = answered - sent;
    run_->latencies.Add(latency);
    run_->ticks.push_back(
        {.t_s = absl::ToDoubleSeconds(sent - start),
         .latency_us = absl::ToDoubleMicroseconds(latency),
         .lag_samples = static_cast<double>(response.unlearned()),
         .lag_us = static_cast<double>(response.learn_lag_us())});
  }
  double MeanNmse() const { return error_.MeanNmse(); }

 private:
  const std::uint64_t per_window_;
  PooledAnswers* const pooled_;
  RobotRun* const run_;
  NormalizedError error_{kRobotTargets};
};

// The end of an arm's run: its session closed, its loop's timing.
void EndArmRun(LearnSession& session, const RateTicker& ticker,
               const ArmAnswers& answers, absl::Time start, RobotRun* run) {
  run->seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (absl::Status status = session.Close(); run->status.ok()) {
    run->status = status;
  }
  run->late_ticks = ticker.late_ticks();
  run->max_lag = ticker.max_lag();
  run->nmse = answers.MeanNmse();
}

void RunRobot(const CliOptions& cli, const ClientOptions& base,
              const std::string& model, int robot, double rate, double start_s,
              std::uint64_t ticks, absl::Time start, PooledAnswers* pooled,
              RobotRun* run) {
  if (absl::Status status = EnterControllersPriority(cli); !status.ok()) {
    run->status = status;
    return;
  }
  ArmSession arm(cli, base, model, run);
  LearnSession* const session = arm.session.get();
  RobotStream stream(RobotOptions(cli, robot, rate, start_s));
  ArmAnswers answers(rate, pooled, run);
  RateTicker ticker(rate, start);
  while (ticker.ticks() < ticks) {
    ticker.Wait();
    const RobotSample sample = stream.Next();
    const absl::Time sent = absl::Now();
    absl::StatusOr<v1::LearnResponse> response =
        session->Learn(sample.x, sample.y);
    if (!response.ok()) {
      run->status = response.status();
      break;
    }
    answers.Exchanged(*response, start, sent, absl::Now());
    answers.Add(response->prediction(), sample.y);
  }
  EndArmRun(*session, ticker, answers, start, run);
}

// The desired states of the ticks after an arm's current one: its
// trajectory without sensor noise, kept as a window of `horizon` rows that
// slides by one each tick.
class DesiredStates {
 public:
  DesiredStates(RobotStreamOptions options, std::size_t horizon)
      : stream_(NoiseFree(options)) {
    for (std::size_t k = 1; k <= horizon; ++k) Append();
  }
  // Tick `tick` (counted from the run's first) has come: the window holds
  // ticks tick + 1 .. tick + horizon.
  void Advance() {
    values_.erase(values_.begin(), values_.begin() + kRobotInputs);
    Append();
  }
  std::span<const double> window() const { return values_; }

 private:
  static RobotStreamOptions NoiseFree(RobotStreamOptions options) {
    options.noise = SensorNoise{0, 0, 0, 0};
    // The window's first state is the run's second tick's (the payload
    // still comes at its tick of the task).
    options.start_tick += 1;
    return options;
  }
  void Append() {
    const RobotSample state = stream_.Next();
    values_.insert(values_.end(), state.x.begin(), state.x.end());
  }

  RobotStream stream_;
  std::vector<double> values_;
};

// An arm that predicts ahead (--batch_ticks): its loop reads the
// prediction a RealtimeChannel holds for its tick and hands the channel
// its sample and the desired states of the next --ahead_ticks ticks; the
// channel's courier sends --batch_ticks samples a message. The loop never
// waits for the network; its two calls are timed.
void RunRobotAhead(const CliOptions& cli, const ClientOptions& base,
                   const std::string& model, int robot, double rate,
                   double start_s, std::uint64_t ticks, absl::Time start,
                   PooledAnswers* /*pooled*/, RobotRun* run) {
  if (absl::Status status = EnterControllersPriority(cli); !status.ok()) {
    run->status = status;
    return;
  }
  Client client(ArmSession::OwnConnection(base));
  const RobotStreamOptions robot_options =
      RobotOptions(cli, robot, rate, start_s);
  RobotStream stream(robot_options);
  const std::size_t horizon = std::max(cli.bench.ahead_ticks, 1u);
  DesiredStates desired(robot_options, horizon);
  RealtimeChannelOptions options;
  options.inputs = kRobotInputs;
  options.targets = kRobotTargets;
  options.horizon = horizon;
  options.batch_ticks = cli.bench.batch_ticks;
  options.lead_ticks = cli.bench.lead_ticks;
  RealtimeChannel channel(&client, model, options);
  AheadAnswers& ahead = run->ahead.emplace(
      kRobotTargets, kCoverageWindowSamples, static_cast<std::uint64_t>(rate));
  std::vector<double> predicted(kRobotTargets), lower(kRobotTargets),
      upper(kRobotTargets);
  const std::vector<double> fallback(kRobotTargets, 0.0);
  run->read_calls.Reserve(ticks);
  run->hand_calls.Reserve(ticks);
  RateTicker ticker(rate, start);
  while (ticker.ticks() < ticks) {
    ticker.Wait();
    const std::uint64_t tick = ticker.ticks() - 1;
    const RobotSample sample = stream.Next();
    auto before = std::chrono::steady_clock::now();
    const RealtimeReading reading =
        channel.Read(tick, predicted, fallback, {}, lower, upper);
    auto after = std::chrono::steady_clock::now();
    run->read_calls.Add(absl::FromChrono(after - before));
    ahead.Due(reading, predicted, lower, upper, sample.y);
    before = std::chrono::steady_clock::now();
    channel.Hand(tick, sample.x, sample.y, desired.window());
    after = std::chrono::steady_clock::now();
    run->hand_calls.Add(absl::FromChrono(after - before));
    desired.Advance();
    ++run->sent;
  }
  run->seconds = absl::ToDoubleSeconds(absl::Now() - start);
  run->status = channel.Close();
  run->channel = channel.stats();
  run->late_ticks = ticker.late_ticks();
  run->max_lag = ticker.max_lag();
  // The loop's error is that of the predictions it used.
  run->nmse = ahead.error().MeanNmse();
  run->nmse_by_second = ahead.nmse_by_window();
}

void RunPredictor(const CliOptions& cli, const ClientOptions& base,
                  const std::string& model, int predictor, double rate,
                  double start_s, absl::Time start,
                  const std::atomic<bool>* stop, PredictorRun* run) {
  if (absl::Status status = EnterControllersPriority(cli); !status.ok()) {
    run->status = status;
    return;
  }
  ClientOptions options = base;
  options.own_connection = true;
  Client client(options);
  std::unique_ptr<PredictSession> session = client.StartPredict(model);
  // Queries from the same task, at states no robot streams meanwhile (the
  // arm picking up its payload when the robots' arms do).
  RobotStreamOptions robot_options = RobotOptions(cli, 0, rate, start_s);
  robot_options.noise_seed += 500 + predictor;
  const auto ahead = static_cast<std::uint64_t>((19.0 + predictor) * rate);
  robot_options.start_tick += ahead;
  if (robot_options.payload_from_tick.has_value()) {
    *robot_options.payload_from_tick += ahead;
  }
  RobotStream robot(robot_options);
  const PredictCallOptions asked = {.min_learned = cli.min_learned};
  RateTicker ticker(rate, start);
  while (!stop->load()) {
    ticker.Wait();
    const RobotSample sample = robot.Next();
    const absl::Time sent = absl::Now();
    absl::StatusOr<v1::Prediction> prediction =
        session->Predict(sample.x, asked);
    if (!prediction.ok()) {
      run->status = prediction.status();
      break;
    }
    run->latencies.Add(absl::Now() - sent);
    run->coverage.Add(*prediction, sample.y);
    ++run->predictions;
  }
  session->Close().IgnoreError();
  run->late_ticks = ticker.late_ticks();
  run->max_lag = ticker.max_lag();
}

// {"p50", "p99", "p999", "max"} of `values` (nearest rank).
nlohmann::json QuantilesJson(const std::vector<double>& values) {
  return {{"p50", Percentile(values, 0.5)},
          {"p99", Percentile(values, 0.99)},
          {"p999", Percentile(values, 0.999)},
          {"max", Percentile(values, 1.0)}};
}

// Every robot's messages in windows of one second (by send time): latency
// and learn lag percentiles per window.
nlohmann::json OverTime(const std::vector<RobotRun>& runs) {
  std::vector<std::vector<const Tick*>> windows;
  for (const RobotRun& run : runs) {
    for (const Tick& tick : run.ticks) {
      const auto w = static_cast<std::size_t>(std::max(0.0, tick.t_s));
      if (w >= windows.size()) windows.resize(w + 1);
      windows[w].push_back(&tick);
    }
  }
  nlohmann::json series = nlohmann::json::array();
  for (std::size_t w = 0; w < windows.size(); ++w) {
    std::vector<double> latency, lag_samples, lag_us;
    for (const Tick* tick : windows[w]) {
      latency.push_back(tick->latency_us);
      lag_samples.push_back(tick->lag_samples);
      lag_us.push_back(tick->lag_us);
    }
    series.push_back({{"t_s", w + 1.0},
                      {"messages", windows[w].size()},
                      {"latency_us", QuantilesJson(latency)},
                      {"learn_lag_samples", QuantilesJson(lag_samples)},
                      {"learn_lag_us", QuantilesJson(lag_us)}});
  }
  return series;
}

// The coverage of several streams' intervals: per target over all their
// samples (streams weighted by their counts), and the range over targets
// and every stream's full windows.
struct CoverageSummary {
  std::vector<double> by_target;
  double mean = NAN;
  // Over every full window of every stream and target (NaN for none).
  double window_min = NAN;
  double window_max = NAN;
  std::uint64_t counted = 0;
  // Every stream's full windows in turn, per target.
  std::vector<std::vector<double>> window_coverage;
};

CoverageSummary Summarize(const std::vector<const IntervalCoverage*>& runs) {
  CoverageSummary summary;
  summary.by_target.assign(kRobotTargets, 0.0);
  std::vector<double> every_window;
  for (const IntervalCoverage* run : runs) {
    if (run->counted() == 0) continue;
    summary.counted += run->counted();
    const std::vector<double> coverage = run->Coverage();
    for (std::size_t t = 0; t < kRobotTargets; ++t) {
      summary.by_target[t] += coverage[t] * run->counted();
    }
    for (const std::vector<double>& window : run->window_coverage()) {
      summary.window_coverage.push_back(window);
      every_window.insert(every_window.end(), window.begin(), window.end());
    }
  }
  if (!every_window.empty()) {
    const auto [low, high] =
        std::minmax_element(every_window.begin(), every_window.end());
    summary.window_min = *low;
    summary.window_max = *high;
  }
  if (summary.counted == 0) return summary;
  double sum = 0.0;
  for (double& value : summary.by_target) {
    value /= static_cast<double>(summary.counted);
    sum += value;
  }
  summary.mean = sum / kRobotTargets;
  return summary;
}

nlohmann::json CoverageJson(const CoverageSummary& summary) {
  return {{"samples", summary.counted},
          {"coverage_mean", summary.mean},
          {"coverage_by_target", summary.by_target},
          {"windows", summary.window_coverage.size()},
          {"window_coverage_min", summary.window_min},
          {"window_coverage_max", summary.window_max},
          {"window_coverage", summary.window_coverage}};
}

// "coverage 0.903 (targets 0.891-0.915), over 3 windows of 10,000
// samples 0.872-0.931".
std::string CoverageText(const CoverageSummary& summary) {
  if (summary.counted == 0) return "no intervals";
  const auto [low, high] =
      std::minmax_element(summary.by_target.begin(), summary.by_target.end());
  std::string text = absl::StrFormat("coverage %.3f (targets %.3f-%.3f)",
                                     summary.mean, *low, *high);
  if (!summary.window_coverage.empty()) {
    absl::StrAppendFormat(&text, ", over %zu windows of %d samples %.3f-%.3f",
                          summary.window_coverage.size(),
                          kCoverageWindowSamples, summary.window_min,
                          summary.window_max);
  }
  return text;
}

// How many of `calls` took over `micros`.
std::size_t CallsOver(const LatencyRecorder& calls, double micros) {
  return static_cast<std::size_t>(
      std::count_if(calls.samples_us().begin(), calls.samples_us().end(),
                    [micros](double us) { return us > micros; }));
}

// What an arm that predicted ahead (--batch_ticks) got at its ticks, how
// long its loop's calls took, and its channel's counts.
nlohmann::json AheadJson(const RobotRun& run) {
  const AheadAnswers& ahead = *run.ahead;
  const RealtimeChannelStats& channel = run.channel;
  return {{"ticks", ahead.due()},
          {"in_time", ahead.in_time()},
          {"in_time_fraction",
           static_cast<double>(ahead.in_time()) /
               static_cast<double>(std::max<std::uint64_t>(1, ahead.due()))},
          {"nmse", ahead.error().MeanNmse()},
          {"intervals", CoverageJson(Summarize({&ahead.coverage()}))},
          {"read_call_us", QuantilesJson(run.read_calls.samples_us())},
          {"hand_call_us", QuantilesJson(run.hand_calls.samples_us())},
          {"loop_calls", run.read_calls.size() + run.hand_calls.size()},
          {"loop_calls_over_20us",
           CallsOver(run.read_calls, 20) + CallsOver(run.hand_calls, 20)},

          {"channel",
           {{"samples_handed", channel.samples_handed},
            {"samples_dropped", channel.samples_dropped},
            {"samples_durable", channel.samples_durable},
            {"messages", channel.messages},
            {"failures", channel.failures},
            {"predictions", channel.predictions}}}};
}

std::string AheadText(const RobotRun& run) {
  const AheadAnswers& ahead = *run.ahead;
  const std::vector<double>& reads = run.read_calls.samples_us();
  const std::vector<double>& hands = run.hand_calls.samples_us();
  return absl::StrFormat(
      "predictions ahead in hand at %llu of %llu ticks (%.3f%%); their nMSE "
      "%.4f against the ticks' measured torques; intervals %s; the loop's "
      "channel calls: Read p50 %.2f p99.9 %.2f max %.1f us, Hand p50 %.2f "
      "p99.9 %.2f max %.1f us, %zu of %zu over 20 us; %llu messages, %llu "
      "failed, %llu samples dropped",
      static_cast<unsigned long long>(ahead.in_time()),
      static_cast<unsigned long long>(ahead.due()),
      100.0 * static_cast<double>(ahead.in_time()) /
          static_cast<double>(std::max<std::uint64_t>(1, ahead.due())),
      ahead.error().MeanNmse(),
      CoverageText(Summarize({&ahead.coverage()})).c_str(),
      Percentile(reads, 0.5), Percentile(reads, 0.999), Percentile(reads, 1.0),
      Percentile(hands, 0.5), Percentile(hands, 0.999), Percentile(hands, 1.0),
      CallsOver(run.read_calls, 20) + CallsOver(run.hand_calls, 20),
      reads.size() + hands.size(),
      static_cast<unsigned long long>(run.channel.messages),
      static_cast<unsigned long long>(run.channel.failures),
      static_cast<unsigned long long>(run.channel.samples_dropped));
}

nlohmann::json MetricJson(Client& client, const std::string& model) {
  absl::StatusOr<v1::MetricReport> report = client.GetMetric(model);
  if (!report.ok()) return nullptr;
  nlohmann::json metrics = nlohmann::json::array();
  for (const v1::LearnedMetric& metric : report->metrics()) {
    metrics.push_back(
        {{"target", metric.target().empty() ? "all" : metric.target()},
         {"weights", std::vector<double>(metric.weights().begin(),
                                         metric.weights().end())}});
  }
  return {{"kind", v1::Metric_Name(report->kind())},
          {"inputs", std::vector<std::string>(report->input_names().begin(),
                                              report->input_names().end())},
          {"metrics", metrics}};
}

}  // namespace

absl::Status BenchLearnCommand(Client& client, const CliOptions& options,
                               std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  const int robots = static_cast<int>(options.bench.robots);
  const int predictors = static_cast<int>(options.bench.predictors);
  const double rate = options.rate;
  const double predict_rate = options.bench.predict_rate;
  const double seconds = options.bench.duration;
  if (robots < 1) return UsageError("--robots: < 1");
  if (!(rate >= 1)) return UsageError("--rate: < 1 Hz");
  if (!(predict_rate >= 1)) {
    return UsageError("--predict_rate: < 1 Hz");
  }
  if (!(seconds > 0)) return UsageError("--duration: <= 0");
  if (options.bench.batch_ticks > 0 &&
      options.bench.ahead_ticks <
          options.bench.batch_ticks + options.bench.lead_ticks) {
    return UsageError(
        "--ahead_ticks: below --batch_ticks + --lead_ticks (the states "
        "would be handed later than the channel asks for them)");
  }
  if (options.bench.batch_ticks > 0 && options.bench.answer_when_durable) {
    return UsageError(
        "--answer_when_durable: not with --batch_ticks (the loop reads "
        "predictions ahead, which never wait for durability)");
  }
  if (const int priority = options.bench.realtime_priority; priority != 0) {
    if (absl::Status status = CheckRealtimePriority(priority); !status.ok()) {
      return RealtimeRefused(status);
    }
  }
  // The model each robot streams into.
  std::vector<std::string> models;
  for (int r = 0; r < robots; ++r) {
    models.push_back(options.bench.model_per_robot ? absl::StrCat(*name, "-", r)
                                                   : *name);
    if (!options.bench.model_per_robot) break;
  }
  absl::StatusOr<v1::Model> before = absl::NotFoundError("no model");
  for (const std::string& model : models) {
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
    if (!before.ok()) before = *std::move(found);
  }
  const auto ticks = static_cast<std::uint64_t>(seconds * rate);
  // Each run starts later in the task than the samples the model holds, so
  // a repeated run streams states near, but never equal to, learned ones.
  const double start_s =
      options.bench.start_s >= 0
          ? options.bench.start_s
          : 1000.0 + static_cast<double>(before->stats().num_samples()) / rate;
  // Everyone starts on the same tick, a moment from now (connections are
  // made on the first call).
  const absl::Time start = absl::Now() + absl::Milliseconds(200);
  std::vector<RobotRun> robot_runs(robots);
  std::vector<PredictorRun> predictor_runs(predictors);
  std::atomic<bool> stop{false};
  std::vector<std::thread> robot_threads;
  std::vector<std::thread> predictor_threads;
  // Predictors start once there is something to predict from: a second
  // after the robots when the models start empty.
  const absl::Time predictors_start =
      before->stats().num_samples() == 0 ? start + absl::Seconds(1) : start;
  for (int p = 0; p < predictors; ++p) {
    predictor_threads.emplace_back(RunPredictor, std::cref(options),
                                   client.options(), models[p % models.size()],
                                   p, predict_rate, start_s, predictors_start,
                                   &stop, &predictor_runs[p]);
  }
  // The answers to the robots of the first model, as it counts them.
  PooledAnswers first_models_answers(kRobotTargets);
  for (int r = 0; r < robots; ++r) {
    const std::size_t m = r % models.size();
    robot_threads.emplace_back(
        options.bench.batch_ticks > 0 ? RunRobotAhead : RunRobot,
        std::cref(options), client.options(), models[m], r, rate, start_s,
        ticks, start, m == 0 ? &first_models_answers : nullptr, &robot_runs[r]);
  }
  for (std::thread& thread : robot_threads) thread.join();
  stop = true;
  for (std::thread& thread : predictor_threads) thread.join();
  for (const RobotRun& run : robot_runs) {
    if (!run.status.ok()) return run.status;
  }
  for (const PredictorRun& run : predictor_runs) {
    if (!run.status.ok()) return run.status;
  }

  LatencyRecorder all;
  nlohmann::json per_robot = nlohmann::json::array();
  bool any_fell_behind = false;
  std::uint64_t sent = 0;
  double elapsed = 0.0;
  std::size_t windows = 0;
  for (int r = 0; r < robots; ++r) {
    const RobotRun& run = robot_runs[r];
    all.Merge(run.latencies);
    sent += run.sent;
    elapsed = std::max(elapsed, run.seconds);
    windows = r == 0 ? run.nmse_by_second.size()
                     : std::min(windows, run.nmse_by_second.size());
    const bool fell_behind =
        run.max_lag > kFellBehindPeriods * absl::Seconds(1.0 / rate);
    any_fell_behind |= fell_behind;
    per_robot.push_back(
        {{"robot", r},
         {"sent", run.sent},
         {"achieved_rate_per_s", run.sent / run.seconds},
         {"late_ticks", run.late_ticks},
         {"max_lag_ms", absl::ToDoubleMilliseconds(run.max_lag)},
         {"fell_behind", fell_behind},
         {"prequential_nmse", run.nmse},
         {"latency_us", LatencyJson(run.latencies)}});
    std::fprintf(
        out,
        "robot %d: %llu samples at %.1f/s (target %.0f), %llu late ticks, "
        "max lag %.2f ms%s; ",
        r, static_cast<unsigned long long>(run.sent), run.sent / run.seconds,
        rate, static_cast<unsigned long long>(run.late_ticks),
        absl::ToDoubleMilliseconds(run.max_lag),
        fell_behind ? " FELL BEHIND" : "");
    if (!run.ahead.has_value()) {
      // An answer that took longer than a tick came after its tick.
      const std::size_t in_tick =
          run.latencies.size() - CallsOver(run.latencies, 1e6 / rate);
      per_robot.back()["answers_within_the_tick"] = in_tick;
      std::fprintf(out,
                   "latency_us p50 %.0f p99 %.0f p99.9 %.0f, %zu of %zu "
                   "answers within the tick (%.3f%%); ",
                   run.latencies.PercentileMicros(0.5),
                   run.latencies.PercentileMicros(0.99),
                   run.latencies.PercentileMicros(0.999), in_tick,
                   run.latencies.size(),
                   100.0 * static_cast<double>(in_tick) /
                       static_cast<double>(
                           std::max<std::size_t>(1, run.latencies.size())));
    }
    std::fprintf(out, "nMSE %.4f\n", run.nmse);
    if (run.ahead.has_value()) {
      per_robot.back()["ahead"] = AheadJson(run);
      std::fprintf(out, "robot %d: %s\n", r, AheadText(run).c_str());
    }
  }
  nlohmann::json nmse_over_time = nlohmann::json::array();
  for (std::size_t w = 0; w < windows; ++w) {
    double sum = 0.0;
    for (const RobotRun& run : robot_runs) sum += run.nmse_by_second[w];
    nmse_over_time.push_back({{"t_s", w + 1.0}, {"nmse", sum / robots}});
  }
  std::vector<double> lag_samples, lag_us, durability_lag_us;
  for (const RobotRun& run : robot_runs) {
    for (const Tick& tick : run.ticks) {
      lag_samples.push_back(tick.lag_samples);
      lag_us.push_back(tick.lag_us);
    }
    durability_lag_us.insert(durability_lag_us.end(),
                             run.durability_lag_us.begin(),
                             run.durability_lag_us.end());
  }
  // An arm that predicts ahead sees neither: its channel's courier has its
  // messages' answers.
  const bool answered_directly = options.bench.batch_ticks == 0;
  if (answered_directly) {
    std::fprintf(out,
                 "durability lag (sent to reported durable, %zu samples): us "
                 "p50 %.0f p99 %.0f p99.9 %.0f max %.0f%s\n",
                 durability_lag_us.size(), Percentile(durability_lag_us, 0.5),
                 Percentile(durability_lag_us, 0.99),
                 Percentile(durability_lag_us, 0.999),
                 Percentile(durability_lag_us, 1.0),
                 options.bench.answer_when_durable
                     ? " (answers waited for it: --answer_when_durable)"
                     : "");
    std::fprintf(out,
                 "learn lag: samples p50 %.0f p99 %.0f p99.9 %.0f max %.0f; us "
                 "p50 %.0f p99 %.0f p99.9 %.0f max %.0f\n",
                 Percentile(lag_samples, 0.5), Percentile(lag_samples, 0.99),
                 Percentile(lag_samples, 0.999), Percentile(lag_samples, 1.0),
                 Percentile(lag_us, 0.5), Percentile(lag_us, 0.99),
                 Percentile(lag_us, 0.999), Percentile(lag_us, 1.0));
  }
  LatencyRecorder predict_latencies;
  std::uint64_t predictions = 0;
  std::uint64_t predict_late_ticks = 0;
  absl::Duration predict_max_lag;
  for (const PredictorRun& run : predictor_runs) {
    predict_latencies.Merge(run.latencies);
    predictions += run.predictions;
    predict_late_ticks += run.late_ticks;
    predict_max_lag = std::max(predict_max_lag, run.max_lag);
  }
  std::fprintf(
      out,
      "all robots: %.0f samples/s, latency_us p50 %.0f p90 %.0f p99 %.0f p99.9 "
      "%.0f max %.0f; %s\n",
      sent / elapsed, all.PercentileMicros(0.5), all.PercentileMicros(0.9),
      all.PercentileMicros(0.99), all.PercentileMicros(0.999),
      all.PercentileMicros(1.0),
      any_fell_behind ? "SOME STREAM FELL BEHIND" : "no stream fell behind");
  std::fprintf(out,
               "  (a late tick: a sample sent more than one period, %.2f ms, "
               "after its tick was due; a stream fell behind: one sent more "
               "than %d periods late, the loop did not keep its rate)\n",
               1e3 / rate, kFellBehindPeriods);
  if (predictors > 0) {
    std::fprintf(out,
                 "predictors: %d at %.0f/s, %llu predictions, %llu late ticks, "
                 "max lag %.2f ms; latency_us p50 %.0f p99 %.0f p99.9 %.0f "
                 "max %.0f\n",
                 predictors, predict_rate,
                 static_cast<unsigned long long>(predictions),
                 static_cast<unsigned long long>(predict_late_ticks),
                 absl::ToDoubleMilliseconds(predict_max_lag),
                 predict_latencies.PercentileMicros(0.5),
                 predict_latencies.PercentileMicros(0.99),
                 predict_latencies.PercentileMicros(0.999),
                 predict_latencies.PercentileMicros(1.0));
  }

  std::vector<const IntervalCoverage*> answer_tallies, query_tallies;
  for (const RobotRun& run : robot_runs)
    answer_tallies.push_back(&run.coverage);
  for (const PredictorRun& run : predictor_runs) {
    query_tallies.push_back(&run.coverage);
  }
  const CoverageSummary answers = Summarize(answer_tallies);
  const CoverageSummary queries = Summarize(query_tallies);
  const double level = before->spec().interval_level();
  if (answered_directly) {
    std::fprintf(out, "intervals (%.0f%%): answers' %s\n", 100 * level,
                 CoverageText(answers).c_str());
  }
  if (predictors > 0) {
    std::fprintf(out,
                 "intervals (%.0f%%): predictors' (states no robot streamed) "
                 "%s\n",
                 100 * level, CoverageText(queries).c_str());
  }

  // The model's own figures: each sample scored before it was learned, and
  // the honest error that also left out the samples just before it (on a
  // 1 kHz arm the previous ticks are near copies of the next).
  absl::StatusOr<v1::Model> after = client.GetModel(models.front());
  if (after.ok()) {
    std::fprintf(out,
                 "model %s: prequential nMSE %.4f, honest nMSE %.4f (leaving "
                 "out the last %llu samples; means over targets)\n",
                 models.front().c_str(),
                 MeanOverTargets(after->stats().prequential_nmse()),
                 MeanOverTargets(after->stats().honest_nmse()),
                 static_cast<unsigned long long>(after->stats().honest_lag()));
    std::fprintf(out,
                 "  (prequential: each sample predicted just before it was "
                 "learned (of a store past 4096 samples, one in 2, 4, ... up "
                 "to max_scoring_stride), as the robots' nMSE above; at %.0f "
                 "Hz the ticks "
                 "before it are near copies, so it flatters. honest: also "
                 "without them, nearer the error on states not seen yet)\n",
                 rate);
    if (answered_directly) {
      std::fprintf(
          out,
          "model %s: answers' nMSE %.4f over %llu answers as the "
          "server counted them; %.4f over the %llu answers its "
          "robots received (means over targets)\n",
          models.front().c_str(), MeanOverTargets(after->stats().answer_nmse()),
          static_cast<unsigned long long>(after->stats().answers_sent()),
          first_models_answers.error.MeanNmse(),
          static_cast<unsigned long long>(first_models_answers.error.count()));
    } else {
      std::fprintf(
          out,
          "model %s: predictions ahead nMSE %.4f, %.0f%% intervals' coverage "
          "%.3f over %llu scored as the server counted them (each against "
          "its tick's sample; the robots' lines above count those in hand "
          "at their tick)\n",
          models.front().c_str(), MeanOverTargets(after->stats().ahead_nmse()),
          100 * before->spec().interval_level(),
          MeanOverTargets(after->stats().ahead_interval_coverage()),
          static_cast<unsigned long long>(after->stats().ahead_scored()));
    }
  }
  const std::string& json_path = options.json;
  if (json_path.empty()) return absl::OkStatus();
  nlohmann::json report = {
      {"kind", "learn"},
      {"rpc", "stream"},
      {"server", client.options().address},
      {"model",
       {{"name", models.front()},
        {"models", models},
        {"num_samples_before", before->stats().num_samples()},
        {"num_samples_after", after.ok() ? after->stats().num_samples() : 0},
        {"prequential_nmse_mean",
         after.ok() ? MeanOverTargets(after->stats().prequential_nmse()) : NAN},
        {"honest_nmse_mean",
         after.ok() ? MeanOverTargets(after->stats().honest_nmse()) : NAN},
        {"honest_lag", after.ok() ? after->stats().honest_lag() : 0},
        {"answers_sent", after.ok() ? after->stats().answers_sent() : 0},
        {"answer_nmse_mean",
         after.ok() ? MeanOverTargets(after->stats().answer_nmse()) : NAN},
        {"ahead_scored", after.ok() ? after->stats().ahead_scored() : 0},
        {"ahead_nmse_mean",
         after.ok() ? MeanOverTargets(after->stats().ahead_nmse()) : NAN},
        {"ahead_coverage_mean",
         after.ok() ? MeanOverTargets(after->stats().ahead_interval_coverage())
                    : NAN},
        {"answers_received", first_models_answers.error.count()},
        {"answers_received_nmse_mean", first_models_answers.error.MeanNmse()}}},
      {"robots", robots},
      {"model_per_robot", options.bench.model_per_robot},
      {"concurrency", robots},
      {"rate_hz", rate},
      {"duration_s", seconds},
      {"elapsed_s", elapsed},
      {"start_s", start_s},
      {"throughput_per_s", sent / elapsed},
      {"latency_us", LatencyJson(all)},
      {"latency_histogram", HistogramJson(all)},
      {"fell_behind", any_fell_behind},
      {"fell_behind_rule",
       absl::StrCat("a message started more than ", kFellBehindPeriods,
                    " periods after its tick")},
      {"learn_lag_samples", QuantilesJson(lag_samples)},
      {"learn_lag_us", QuantilesJson(lag_us)},
      {"answer_when_durable", options.bench.answer_when_durable},
      {"batch_ticks", options.bench.batch_ticks},
      {"ahead_ticks", options.bench.batch_ticks > 0
                          ? nlohmann::json(options.bench.ahead_ticks)
                          : nlohmann::json(nullptr)},
      {"durability_lag_us", QuantilesJson(durability_lag_us)},
      {"durable_samples", durability_lag_us.size()},
      {"over_time", OverTime(robot_runs)},
      {"per_robot", per_robot},
      {"nmse_over_time", nmse_over_time},
      {"intervals",
       {{"level", level},
        {"window_samples", kCoverageWindowSamples},
        {"answers", CoverageJson(answers)},
        {"predictions", CoverageJson(queries)}}},
      {"payload",
       {{"mass_kg", options.bench.payload_kg},
        {"from_s", options.bench.payload_at}}},
      {"predictors",
       {{"clients", predictors},
        {"rate_hz", predict_rate},
        {"predictions", predictions},
        {"min_learned", options.min_learned.has_value()
                            ? nlohmann::json(*options.min_learned)
                            : nlohmann::json(nullptr)},
        {"late_ticks", predict_late_ticks},
        {"max_lag_ms", absl::ToDoubleMilliseconds(predict_max_lag)},
        {"latency_us", LatencyJson(predict_latencies)}}},
      {"metric", MetricJson(client, models.front())},
  };
  if (absl::Status status = WriteJsonReport(report, json_path); !status.ok()) {
    return status;
  }
  return PlotIfAsked(report, options.bench, out);
}

}  // namespace streamreg
