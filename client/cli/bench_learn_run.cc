#include "client/cli/bench_learn_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <span>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "client/tools/rate_ticker.h"
#include "core/base/realtime_priority.h"

namespace streamreg {

absl::Status RealtimeRefused(const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("--realtime_priority: ", status.message()));
}

namespace {

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

}  // namespace

// Every arm and predictor on a thread of its own, all starting on the same
// tick; the first failure, if any.
absl::Status RunLearn(const Client& client, const CliOptions& options,
                      const LearnPlan& plan, LearnRuns* runs) {
  // A moment from now (connections are made on the first call).
  const absl::Time start = absl::Now() + absl::Milliseconds(200);
  std::atomic<bool> stop{false};
  std::vector<std::thread> robot_threads;
  std::vector<std::thread> predictor_threads;
  // Predictors start once there is something to predict from: a second
  // after the robots when the models start empty.
  const absl::Time predictors_start =
      plan.before.stats().num_samples() == 0 ? start + absl::Seconds(1) : start;
  const std::vector<std::string>& models = plan.models;
  for (int p = 0; p < plan.predictors; ++p) {
    predictor_threads.emplace_back(
        RunPredictor, std::cref(options), client.options(),
        models[p % models.size()], p, plan.predict_rate, plan.start_s,
        predictors_start, &stop, &runs->predictors[p]);
  }
  for (int r = 0; r < plan.robots; ++r) {
    const std::size_t m = r % models.size();
    robot_threads.emplace_back(
        plan.answered_directly ? RunRobot : RunRobotAhead, std::cref(options),
        client.options(), models[m], r, plan.rate, plan.start_s, plan.ticks,
        start, m == 0 ? &runs->first_models_answers : nullptr,
        &runs->robots[r]);
  }
  for (std::thread& thread : robot_threads) thread.join();
  stop = true;
  for (std::thread& thread : predictor_threads) thread.join();
  for (const RobotRun& run : runs->robots) {
    if (!run.status.ok()) return run.status;
  }
  for (const PredictorRun& run : runs->predictors) {
    if (!run.status.ok()) return run.status;
  }
  return absl::OkStatus();
}

}  // namespace streamreg
