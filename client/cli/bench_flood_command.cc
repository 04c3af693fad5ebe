// streamreg bench flood: overload, measured. First the server's capacity
// (closed-loop Ingest and Predict for --calibrate seconds), then
// --concurrency clients flooding it open-loop at --overload times that
// capacity for --duration seconds — half sending Ingest batches, half
// Predict requests, each on its own connection, a call on its schedule
// whether or not the last was answered (up to kMaxOutstanding per client).
// Meanwhile a simulated arm streams Learn at --rate (an admitted stream
// whose latency must hold), the health service is checked every 100 ms,
// and with --server_pid the server's resident memory is sampled. At the
// end the model's sample count is checked against every sample the server
// acknowledged: none may be missing.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_report.h"
#include "client/cli/cli_commands.h"
#include "client/lib/learn_session.h"
#include "client/loadgen/robot_model.h"
#include "client/loadgen/robot_stream.h"
#include "client/tools/latency_recorder.h"
#include "client/tools/rate_ticker.h"
#include "common/command_line.h"

namespace streamreg {
namespace {

constexpr int kSamplesPerBatch = 64;
constexpr int kMaxOutstanding = 256;  // calls per flooding client
constexpr absl::Duration kCallDeadline = absl::Seconds(10);

// What one kind of call came to, over every client.
struct CallTally {
  mutable std::mutex mutex;
  std::uint64_t sent = 0;
  std::uint64_t skipped = 0;  // due while kMaxOutstanding were unanswered
  std::uint64_t ok = 0;
  std::uint64_t refused = 0;  // RESOURCE_EXHAUSTED
  std::uint64_t unknown = 0;  // deadline passed, cancelled, unavailable
  std::uint64_t failed = 0;   // any other status
  std::uint64_t samples_acknowledged = 0;
  std::uint64_t samples_unknown = 0;
  std::uint64_t refusals_with_pushback = 0;
  LatencyRecorder ok_latency;
  LatencyRecorder refused_latency;
  absl::Status first_failure;

  void Record(const grpc::Status& status, absl::Duration latency,
              std::uint64_t samples, bool pushback) {
    std::lock_guard lock(mutex);
    switch (status.error_code()) {
      case grpc::StatusCode::OK:
        ++ok;
        ok_latency.Add(latency);
        samples_acknowledged += samples;
        break;
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        ++refused;
        refused_latency.Add(latency);
        if (pushback) ++refusals_with_pushback;
        break;
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::CANCELLED:
      case grpc::StatusCode::UNAVAILABLE:
        ++unknown;
        samples_unknown += samples;
        break;
      default:
        ++failed;
        if (first_failure.ok()) first_failure = FromGrpcStatus(status);
    }
  }

  void Print(const char* what, std::FILE* out) const {
    std::lock_guard lock(mutex);
    std::fprintf(out,
                 "%s %llu sent (%llu skipped, client full), %llu ok, %llu "
                 "refused (%llu with pushback), %llu unknown, %llu failed\n",
                 what, static_cast<unsigned long long>(sent),
                 static_cast<unsigned long long>(skipped),
                 static_cast<unsigned long long>(ok),
                 static_cast<unsigned long long>(refused),
                 static_cast<unsigned long long>(refusals_with_pushback),
                 static_cast<unsigned long long>(unknown),
                 static_cast<unsigned long long>(failed));
  }

  nlohmann::json Json(double seconds) const {
    std::lock_guard lock(mutex);
    return {{"sent", sent},
            {"sent_per_s", static_cast<double>(sent) / seconds},
            {"skipped_client_full", skipped},
            {"ok", ok},
            {"ok_per_s", static_cast<double>(ok) / seconds},
            {"refused", refused},
            {"refusals_with_pushback", refusals_with_pushback},
            {"unknown_outcome", unknown},
            {"failed", failed},
            {"first_failure", first_failure.ToString()},
            {"ok_latency_us", LatencyJson(ok_latency)},
            {"refused_latency_us", LatencyJson(refused_latency)}};
  }
};

bool HasPushback(const grpc::ClientContext& context) {
  return context.GetServerTrailingMetadata().count("grpc-retry-pushback-ms") >
         0;
}

std::unique_ptr<grpc::ClientContext> DeadlinedContext(Client& client) {
  std::unique_ptr<grpc::ClientContext> context = client.NewContext();
  context->set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
  return context;
}

// One Ingest call of one batch, open-loop (deletes itself when done).
class IngestCall final : public grpc::ClientWriteReactor<v1::IngestRequest> {
 public:
  IngestCall(Client& client, const v1::IngestRequest* batch, CallTally* tally,
             std::atomic<int>* outstanding)
      : context_(DeadlinedContext(client)),
        batch_(batch),
        tally_(tally),
        outstanding_(outstanding),
        sent_(absl::Now()) {
    client.regression().async()->Ingest(context_.get(), &response_, this);
    StartWriteLast(batch_, grpc::WriteOptions());
    StartCall();
  }
  void OnDone(const grpc::Status& status) override {
    tally_->Record(status, absl::Now() - sent_,
                   static_cast<std::uint64_t>(batch_->samples_size()),
                   HasPushback(*context_));
    std::atomic<int>* outstanding = outstanding_;
    // The context holds the channel: deleted before the client may end,
    // so that the channel is never destroyed in gRPC's callback (it hangs
    // or crashes the client there).
    delete this;
    outstanding->fetch_sub(1);
  }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  const v1::IngestRequest* batch_;
  CallTally* tally_;
  std::atomic<int>* outstanding_;
  absl::Time sent_;
  v1::IngestResponse response_;
};

// One Predict call, open-loop.
void StartPredict(Client& client, const v1::PredictRequest* request,
                  CallTally* tally, std::atomic<int>* outstanding) {
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    v1::PredictResponse response;
    absl::Time sent = absl::Now();
  };
  auto* call = new Call;
  call->context = DeadlinedContext(client);
  client.regression().async()->Predict(
      call->context.get(), request, &call->response,
      [call, tally, outstanding](grpc::Status status) {
        tally->Record(status, absl::Now() - call->sent, 0,
                      HasPushback(*call->context));
        delete call;  // before the client may end, as IngestCall::OnDone
        outstanding->fetch_sub(1);
      });
}

// Samples of the simulated arm, `count` of them from `start_tick` on.
std::vector<RobotSample> ArmSamples(std::uint64_t seed, std::uint64_t noise,
                                    std::uint64_t start_tick, int count) {
  RobotStreamOptions options;
  options.seed = seed;
  options.noise_seed = noise;
  options.start_tick = start_tick;
  RobotStream stream(options);
  std::vector<RobotSample> samples;
  for (int i = 0; i < count; ++i) samples.push_back(stream.Next());
  return samples;
}

v1::IngestRequest BatchOf(const std::string& model,
                          const std::vector<RobotSample>& samples) {
  v1::IngestRequest batch;
  batch.set_model(model);
  for (const RobotSample& sample : samples) {
    v1::Sample& wire = *batch.add_samples();
    wire.mutable_x()->Assign(sample.x.begin(), sample.x.end());
    wire.mutable_y()->Assign(sample.y.begin(), sample.y.end());
  }
  return batch;
}

v1::PredictRequest QueryOf(const std::string& model, const RobotSample& at) {
  v1::PredictRequest request;
  request.set_model(model);
  request.add_queries()->mutable_x()->Assign(at.x.begin(), at.x.end());
  return request;
}

// The server's capacity: what 4 closed-loop clients of each kind get
// answered per second (samples learned, predictions).
struct Capacity {
  double samples_per_s = 0.0;
  double predictions_per_s = 0.0;
};

Capacity Calibrate(const ClientOptions& base, const v1::IngestRequest& batch,
                   const v1::PredictRequest& query, double seconds) {
  std::atomic<std::uint64_t> samples{0};
  std::atomic<std::uint64_t> predictions{0};
  const absl::Time end = absl::Now() + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < 8; ++c) {
    threads.emplace_back([&, c] {
      ClientOptions options = base;
      options.own_connection = true;
      Client client(options);
      while (absl::Now() < end) {
        std::unique_ptr<grpc::ClientContext> context = DeadlinedContext(client);
        if (c % 2 == 0) {
          v1::IngestResponse response;
          auto writer = client.regression().Ingest(context.get(), &response);
          writer->Write(batch);
          writer->WritesDone();
          if (writer->Finish().ok()) samples += response.accepted();
        } else {
          v1::PredictResponse response;
          if (client.regression()
                  .Predict(context.get(), query, &response)
                  .ok()) {
            ++predictions;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return {static_cast<double>(samples) / seconds,
          static_cast<double>(predictions) / seconds};
}

// The protected stream: the arm's Learn at `rate` for the whole flood,
// reopened (after the retry hint) if the server refuses a sample.
struct ArmRun {
  std::uint64_t acknowledged = 0;  // samples reported durable
  std::uint64_t refused = 0;
  std::uint64_t other_errors = 0;
  std::uint64_t late_ticks = 0;
  absl::Status first_error;
  LatencyRecorder latency;
};

void RunArm(const ClientOptions& base, const std::string& model,
            std::uint64_t seed, double rate, absl::Time start, absl::Time end,
            ArmRun* run) {
  ClientOptions options = base;
  options.own_connection = true;
  Client client(options);
  RobotStreamOptions stream_options;
  stream_options.seed = seed;
  stream_options.noise_seed = seed * 1000 + 7;
  stream_options.start_tick = 5'000'000;
  stream_options.sample_rate_hz = rate;
  RobotStream stream(stream_options);
  std::unique_ptr<LearnSession> session = client.StartLearn(model);
  RateTicker ticker(rate, start);
  while (absl::Now() < end) {
    ticker.Wait();
    const RobotSample sample = stream.Next();
    const absl::Time sent = absl::Now();
    absl::StatusOr<v1::LearnResponse> response =
        session->Learn(sample.x, sample.y);
    if (response.ok()) {
      run->latency.Add(absl::Now() - sent);
      continue;
    }
    if (response.status().code() == absl::StatusCode::kResourceExhausted) {
      ++run->refused;
    } else {
      ++run->other_errors;
      if (run->first_error.ok()) run->first_error = response.status();
    }
    session->Close().IgnoreError();
    run->acknowledged += session->durable_samples();
    absl::SleepFor(absl::Milliseconds(100));  // the retry hint
    session = client.StartLearn(model);
  }
  session->Close().IgnoreError();
  run->acknowledged += session->durable_samples();
  run->late_ticks = ticker.late_ticks();
}

// The health service, every 100 ms.
struct HealthRun {
  std::uint64_t checks = 0;
  std::uint64_t not_serving = 0;  // another answer, or no answer in 1 s
  LatencyRecorder latency;
};

void RunHealthChecks(const ClientOptions& base, absl::Time end,
                     HealthRun* run) {
  ClientOptions options = base;
  options.own_connection = true;
  options.timeout = absl::Seconds(1);
  Client client(options);
  while (absl::Now() < end) {
    const absl::Time sent = absl::Now();
    absl::StatusOr<std::string> health = client.Health();
    run->latency.Add(absl::Now() - sent);
    ++run->checks;
    if (!health.ok() || *health != "SERVING") ++run->not_serving;
    absl::SleepFor(absl::Milliseconds(100));
  }
}

// VmRSS of process `pid`, bytes (0 if it cannot be read).
std::uint64_t ResidentBytes(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "VmRSS:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, " kB");
    std::uint64_t kib = 0;
    return absl::SimpleAtoi(rest, &kib) ? kib * 1024 : 0;
  }
  return 0;
}

// The samples the model has learned, once it has learned everything
// acknowledged (GetModel waits for that; after a flood it may take a
// while: up to kCatchUpWait).
constexpr absl::Duration kCatchUpWait = absl::Minutes(10);

absl::StatusOr<std::uint64_t> LearnedSamples(Client& client,
                                             const std::string& model) {
  std::unique_ptr<grpc::ClientContext> context = client.NewContext();
  context->set_deadline(absl::ToChronoTime(absl::Now() + kCatchUpWait));
  v1::GetModelRequest request;
  request.set_name(model);
  v1::Model response;
  const grpc::Status status =
      client.models().GetModel(context.get(), request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.stats().num_samples();
}

// What a flood was asked for, checked: its model, clients (half write,
// half read), length, and each client's own samples and query (distinct
// places in the task).
struct FloodPlan {
  std::string model;
  int clients = 0;
  int writers = 0;
  int readers = 0;
  double seconds = 0.0;
  std::vector<v1::IngestRequest> batches;
  std::vector<v1::PredictRequest> queries;
};

absl::StatusOr<FloodPlan> PlanFlood(const CliOptions& options) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  const BenchOptions& bench = options.bench;
  FloodPlan plan;
  plan.model = *name;
  plan.clients = static_cast<int>(bench.concurrency);
  plan.seconds = bench.duration;
  if (plan.clients < 2) return UsageError("--concurrency: < 2");
  if (!(plan.seconds > 0)) return UsageError("--duration: <= 0");
  if (!(bench.overload > 0)) {
    return UsageError("--overload: <= 0");
  }
  if (!(options.rate >= 1)) return UsageError("--rate: < 1");
  plan.writers = plan.clients / 2;
  plan.readers = plan.clients - plan.writers;
  for (int c = 0; c < plan.clients; ++c) {
    const std::vector<RobotSample> samples = ArmSamples(
        options.robot_seed, 100 + c, 1'000'000 + 100'000 * c, kSamplesPerBatch);
    plan.batches.push_back(BatchOf(plan.model, samples));
    plan.queries.push_back(QueryOf(plan.model, samples.front()));
  }
  return plan;
}

// What the flood met: the flooding clients' calls, the arm's, the health
// checks', and the server's resident size before and at its peak.
struct FloodRun {
  CallTally ingests;
  CallTally predicts;
  ArmRun arm;
  HealthRun health;
  std::uint64_t rss_before = 0;
  std::uint64_t rss_peak = 0;
};

// One flooding client on a connection of its own: a call every tick of
// its rate, skipped while kMaxOutstanding are unanswered.
void Flood(const ClientOptions& base, const FloodPlan& plan, int c, double rate,
           absl::Time start, absl::Time end, FloodRun* run) {
  ClientOptions client_options = base;
  client_options.own_connection = true;
  Client flooder(client_options);
  const bool writes = c < plan.writers;
  CallTally& tally = writes ? run->ingests : run->predicts;
  std::atomic<int> outstanding{0};
  RateTicker ticker(rate, start);
  std::uint64_t sent = 0;
  std::uint64_t skipped = 0;
  while (absl::Now() < end) {
    ticker.Wait();
    if (outstanding.load() >= kMaxOutstanding) {
      ++skipped;
      continue;
    }
    outstanding.fetch_add(1);
    ++sent;
    if (writes) {
      new IngestCall(flooder, &plan.batches[c], &tally, &outstanding);
    } else {
      StartPredict(flooder, &plan.queries[c], &tally, &outstanding);
    }
  }
  while (outstanding.load() > 0) absl::SleepFor(absl::Milliseconds(5));
  std::lock_guard lock(tally.mutex);
  tally.sent += sent;
  tally.skipped += skipped;
}

// The flooders at --overload times `capacity`, the arm at --rate and the
// health checks, all for the plan's seconds, while the server's resident
// size is sampled (with --server_pid).
void RunFlood(const Client& client, const CliOptions& options,
              const FloodPlan& plan, const Capacity& capacity, FloodRun* run) {
  const BenchOptions& bench = options.bench;
  // Calls per second per client, at --overload times capacity.
  const double write_rate =
      bench.overload * capacity.samples_per_s / kSamplesPerBatch / plan.writers;
  const double read_rate =
      bench.overload * capacity.predictions_per_s / plan.readers;
  std::atomic<bool> sampling{true};
  const int pid = bench.server_pid;
  std::thread memory([&] {
    if (pid <= 0) return;
    run->rss_before = ResidentBytes(pid);
    while (sampling) {
      run->rss_peak = std::max(run->rss_peak, ResidentBytes(pid));
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  const absl::Time start = absl::Now() + absl::Milliseconds(200);
  const absl::Time end = start + absl::Seconds(plan.seconds);
  std::thread arm_thread(RunArm, client.options(), plan.model,
                         options.robot_seed, options.rate, start, end,
                         &run->arm);
  std::thread health_thread(RunHealthChecks, client.options(), end,
                            &run->health);
  std::vector<std::thread> flooders;
  for (int c = 0; c < plan.clients; ++c) {
    flooders.emplace_back(Flood, client.options(), std::cref(plan), c,
                          c < plan.writers ? write_rate : read_rate, start, end,
                          run);
  }
  for (std::thread& thread : flooders) thread.join();
  arm_thread.join();
  health_thread.join();
  sampling = false;
  memory.join();
}

// The model's samples against the acknowledgements once learning caught
// up: how many it took and how long.
struct Reckoning {
  std::uint64_t before = 0;
  std::uint64_t after = 0;
  double catch_up_s = 0.0;
  std::uint64_t acknowledged = 0;
  std::uint64_t lost = 0;
  std::uint64_t beyond = 0;
};

absl::StatusOr<Reckoning> Reckon(Client& client, const FloodPlan& plan,
                                 std::uint64_t before, const FloodRun& run) {
  Reckoning reckoning;
  reckoning.before = before;
  const absl::Time caught_up_from = absl::Now();
  absl::StatusOr<std::uint64_t> learned = LearnedSamples(client, plan.model);
  if (!learned.ok()) return learned.status();
  reckoning.after = *learned;
  reckoning.catch_up_s = absl::ToDoubleSeconds(absl::Now() - caught_up_from);
  reckoning.acknowledged =
      run.ingests.samples_acknowledged + run.arm.acknowledged;
  const std::uint64_t expected = before + reckoning.acknowledged;
  const std::uint64_t after = reckoning.after;
  reckoning.lost = expected > after ? expected - after : 0;
  reckoning.beyond = after > expected ? after - expected : 0;
  return reckoning;
}

nlohmann::json FloodReportJson(const CliOptions& options, const FloodPlan& plan,
                               const Capacity& capacity, const FloodRun& run,
                               const Reckoning& samples) {
  return {{"command", "bench flood"},
          {"model", plan.model},
          {"clients", plan.clients},
          {"seconds", plan.seconds},
          {"overload", options.bench.overload},
          {"capacity",
           {{"samples_per_s", capacity.samples_per_s},
            {"predictions_per_s", capacity.predictions_per_s}}},
          {"ingest", run.ingests.Json(plan.seconds)},
          {"predict", run.predicts.Json(plan.seconds)},
          {"arm",
           {{"rate_hz", options.rate},
            {"acknowledged", run.arm.acknowledged},
            {"refused", run.arm.refused},
            {"other_errors", run.arm.other_errors},
            {"first_error", run.arm.first_error.ToString()},
            {"late_ticks", run.arm.late_ticks},
            {"latency_us", LatencyJson(run.arm.latency)}}},
          {"health",
           {{"checks", run.health.checks},
            {"not_serving", run.health.not_serving},
            {"latency_us", LatencyJson(run.health.latency)}}},
          {"server_rss_bytes",
           {{"before", run.rss_before}, {"peak", run.rss_peak}}},
          {"catch_up_s", samples.catch_up_s},
          {"samples",
           {{"before", samples.before},
            {"after", samples.after},
            {"acknowledged", samples.acknowledged},
            {"lost", samples.lost},
            {"beyond_acknowledged", samples.beyond},
            {"unknown_outcome", run.ingests.samples_unknown}}}};
}

void PrintFlood(std::FILE* out, const CliOptions& options, const FloodRun& run,
                const Reckoning& samples) {
  auto latency_line = [out](const char* what, const LatencyRecorder& l) {
    std::fprintf(out, "  %-26s p50 %8.0f us  p99 %8.0f us  max %8.0f us\n",
                 what, l.PercentileMicros(0.5), l.PercentileMicros(0.99),
                 l.PercentileMicros(1.0));
  };
  run.ingests.Print("ingest: ", out);
  run.predicts.Print("predict:", out);
  latency_line("ingest admitted", run.ingests.ok_latency);
  latency_line("ingest refused", run.ingests.refused_latency);
  latency_line("predict admitted", run.predicts.ok_latency);
  latency_line("predict refused", run.predicts.refused_latency);
  latency_line("arm Learn (admitted)", run.arm.latency);
  latency_line("health check", run.health.latency);
  std::fprintf(out,
               "arm: %llu acknowledged, %llu refused, %llu other errors, %llu "
               "late ticks; health: %llu checks, %llu not SERVING\n",
               static_cast<unsigned long long>(run.arm.acknowledged),
               static_cast<unsigned long long>(run.arm.refused),
               static_cast<unsigned long long>(run.arm.other_errors),
               static_cast<unsigned long long>(run.arm.late_ticks),
               static_cast<unsigned long long>(run.health.checks),
               static_cast<unsigned long long>(run.health.not_serving));
  if (options.bench.server_pid > 0) {
    std::fprintf(out, "server RSS: %.1f MiB before, %.1f MiB peak\n",
                 static_cast<double>(run.rss_before) / (1 << 20),
                 static_cast<double>(run.rss_peak) / (1 << 20));
  }
  std::fprintf(out,
               "samples: %llu acknowledged, model %llu -> %llu (learned %.1f s "
               "after the flood): %llu lost, %llu beyond acknowledged (of %llu "
               "with unknown outcome)\n",
               static_cast<unsigned long long>(samples.acknowledged),
               static_cast<unsigned long long>(samples.before),
               static_cast<unsigned long long>(samples.after),
               samples.catch_up_s,
               static_cast<unsigned long long>(samples.lost),
               static_cast<unsigned long long>(samples.beyond),
               static_cast<unsigned long long>(run.ingests.samples_unknown));
}

}  // namespace

absl::Status CreateArmModelIfAsked(Client& client, const CliOptions& options,
                                   const std::string& model) {
  if (!options.create) return absl::OkStatus();
  absl::StatusOr<v1::ModelSpec> spec = SpecFromOptions(options.spec, nullptr);
  if (!spec.ok()) return spec.status();
  return CreateModelIfAbsent(client, model, RobotModelSpec(*spec));
}

absl::Status BenchFloodCommand(Client& client, const CliOptions& options,
                               std::FILE* out) {
  absl::StatusOr<FloodPlan> plan = PlanFlood(options);
  if (!plan.ok()) return plan.status();
  if (absl::Status status = CreateArmModelIfAsked(client, options, plan->model);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<v1::Model> model = client.GetModel(plan->model);
  if (!model.ok()) return model.status();
  const BenchOptions& bench = options.bench;
  std::fprintf(out, "calibrating: %g s of closed-loop Ingest and Predict\n",
               bench.calibrate);
  std::fflush(out);
  const Capacity capacity = Calibrate(client.options(), plan->batches[0],
                                      plan->queries[0], bench.calibrate);
  absl::StatusOr<std::uint64_t> before = LearnedSamples(client, plan->model);
  if (!before.ok()) return before.status();
  std::fprintf(out,
               "capacity: %.0f samples/s, %.0f predictions/s; flooding at "
               "%gx for %g s from %d clients\n",
               capacity.samples_per_s, capacity.predictions_per_s,
               bench.overload, plan->seconds, plan->clients);
  std::fflush(out);
  FloodRun run;
  RunFlood(client, options, *plan, capacity, &run);
  std::fprintf(out, "flood over; waiting for learning to catch up\n");
  std::fflush(out);
  absl::StatusOr<Reckoning> samples = Reckon(client, *plan, *before, run);
  if (!samples.ok()) return samples.status();
  PrintFlood(out, options, run, *samples);
  if (!options.json.empty()) {
    const nlohmann::json report =
        FloodReportJson(options, *plan, capacity, run, *samples);
    if (absl::Status status = WriteJsonReport(report, options.json);
        !status.ok()) {
      return status;
    }
  }
  if (samples->lost > 0 || samples->beyond > run.ingests.samples_unknown) {
    return absl::DataLossError(absl::StrCat(
        "the model's samples do not match the acknowledgements: ",
        samples->lost, " lost, ", samples->beyond, " beyond them"));
  }
  return absl::OkStatus();
}

}  // namespace streamreg
