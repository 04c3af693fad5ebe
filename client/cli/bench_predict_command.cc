// streamreg bench predict: closed-loop load on Predict (or PredictStream)
// from --concurrency clients, each on its own connection, and the same load
// on the no-op Ping (PingStream) in the same run, so the report can say how
// much of a prediction's round trip is the model and how much the
// transport.
#include <cstdio>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_report.h"
#include "client/cli/cli_commands.h"
#include "client/cli/csv_columns.h"
#include "client/lib/internal/client_routes.h"
#include "client/loadgen/robot_stream.h"
#include "client/tools/latency_recorder.h"
#include "common/command_line.h"

namespace streamreg {
namespace {

// One way of making a call, used by one thread.
class Caller {
 public:
  virtual ~Caller() = default;
  virtual absl::Status Call() = 0;
};

class UnaryPredictCaller final : public Caller {
 public:
  UnaryPredictCaller(Client* client,
                     const std::vector<v1::PredictRequest>* requests)
      : client_(client), requests_(requests) {}
  absl::Status Call() override {
    const v1::PredictRequest& request =
        (*requests_)[next_++ % requests_->size()];
    response_.Clear();
    return FromGrpcStatus(client_->regression().Predict(
        client_->NewContext().get(), request, &response_));
  }

 private:
  Client* client_;
  const std::vector<v1::PredictRequest>* requests_;
  std::size_t next_ = 0;
  v1::PredictResponse response_;
};

class UnaryPingCaller final : public Caller {
 public:
  explicit UnaryPingCaller(Client* client) : client_(client) {}
  absl::Status Call() override {
    return FromGrpcStatus(client_->regression().Ping(
        client_->NewContext().get(), request_, &response_));
  }

 private:
  Client* client_;
  v1::PingRequest request_;
  v1::PingResponse response_;
};

// One request, one response over a stream held open for the whole phase.
template <class Request, class Response>
class StreamCaller final : public Caller {
 public:
  using Stream = grpc::ClientReaderWriter<Request, Response>;
  StreamCaller(std::unique_ptr<grpc::ClientContext> context,
               std::unique_ptr<Stream> stream,
               const std::vector<Request>* requests)
      : context_(std::move(context)),
        stream_(std::move(stream)),
        requests_(requests) {}
  ~StreamCaller() override {
    stream_->WritesDone();
    stream_->Finish().ok();
  }
  absl::Status Call() override {
    if (stream_->Write((*requests_)[next_++ % requests_->size()]) &&
        stream_->Read(&response_)) {
      return absl::OkStatus();
    }
    stream_->WritesDone();
    grpc::Status status = stream_->Finish();
    return status.ok() ? absl::UnavailableError("the server ended the stream")
                       : FromGrpcStatus(status);
  }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<Stream> stream_;
  const std::vector<Request>* requests_;
  std::size_t next_ = 0;
  Response response_;
};

struct Phase {
  LatencyRecorder latencies;
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  absl::Status first_error;
  double seconds = 0.0;
};

using CallerFactory = std::function<std::unique_ptr<Caller>(Client*)>;

// Runs `concurrency` threads, each with its own client and connection,
// calling back to back: `warmup` unrecorded, then `duration` recorded.
Phase RunPhase(const ClientOptions& base, int concurrency,
               absl::Duration warmup, absl::Duration duration,
               const CallerFactory& make_caller) {
  Phase phase;
  std::mutex mutex;
  std::latch ready(concurrency);
  std::vector<std::thread> threads;
  for (int w = 0; w < concurrency; ++w) {
    threads.emplace_back([&] {
      ClientOptions options = base;
      options.own_connection = true;
      Client client(options);
      std::unique_ptr<Caller> caller = make_caller(&client);
      ready.arrive_and_wait();
      const absl::Time begin = absl::Now();
      LatencyRecorder latencies;
      std::uint64_t errors = 0;
      absl::Status first_error;
      for (absl::Time now = begin; now < begin + warmup + duration;) {
        const absl::Status status = caller->Call();
        const absl::Time done = absl::Now();
        if (!status.ok()) {
          ++errors;
          first_error = status;
          break;  // a broken stream stays broken; report the first error
        } else if (now >= begin + warmup) {
          latencies.Add(done - now);
        }
        now = done;
      }
      std::lock_guard lock(mutex);
      phase.latencies.Merge(latencies);
      phase.errors += errors;
      if (phase.first_error.ok()) phase.first_error = first_error;
    });
  }
  for (std::thread& thread : threads) thread.join();
  phase.calls = phase.latencies.size();
  phase.seconds = absl::ToDoubleSeconds(duration);
  return phase;
}

// The queries: rows of --csv if given, else the robot simulator's stream
// (for a model of its 21 inputs).
absl::StatusOr<std::vector<std::vector<double>>> Queries(
    const CliOptions& cli, const v1::ModelSpec& spec) {
  std::vector<std::vector<double>> queries;
  const std::string& csv = cli.csv;
  if (!csv.empty()) {
    absl::StatusOr<CsvTable> table = CsvTable::Read(csv);
    if (!table.ok()) return table.status();
    absl::StatusOr<CsvColumns> columns =
        MatchColumns(*table, spec, false, ColumnMatchingOf(cli));
    if (!columns.ok()) return columns.status();
    for (std::size_t row = 0; row < table->num_rows(); ++row) {
      queries.emplace_back();
      AppendRow(*table, row, columns->inputs, &queries.back());
    }
    return queries;
  }
  if (spec.input_dim() != kRobotInputs) {
    return UsageError(
        absl::StrCat("--csv FILE: the model has ", spec.input_dim(),
                     " inputs, not the robot simulator's ", kRobotInputs));
  }
  // The task the robots do, at states past what they stream.
  RobotStreamOptions options;
  options.seed = cli.robot_seed;
  options.noise_seed = options.seed * 1000;
  options.start_tick = static_cast<std::uint64_t>(
      (std::max(0.0, cli.bench.start_s) + 3000.0) * options.sample_rate_hz);
  RobotStream robot(options);
  for (int i = 0; i < 4096; ++i) {
    const RobotSample sample = robot.Next();
    queries.emplace_back(sample.x.begin(), sample.x.end());
  }
  return queries;
}

std::vector<v1::PredictRequest> PredictRequests(
    const std::string& model, const std::vector<std::vector<double>>& queries,
    std::size_t per_request) {
  std::vector<v1::PredictRequest> requests(
      std::max<std::size_t>(1, queries.size() / per_request));
  std::size_t next = 0;
  for (v1::PredictRequest& request : requests) {
    request.set_model(model);
    for (std::size_t q = 0; q < per_request; ++q) {
      const std::vector<double>& x = queries[next++ % queries.size()];
      *request.add_queries()->mutable_x() = {x.begin(), x.end()};
    }
  }
  return requests;
}

void PrintPhase(std::FILE* out, const char* label, const Phase& phase,
                double per_call) {
  std::fprintf(
      out,
      "%-8s %9.0f/s  latency_us p50 %7.1f p90 %7.1f p99 %7.1f p99.9 %7.1f "
      "(%llu calls, %llu errors)\n",
      label, phase.calls * per_call / phase.seconds,
      phase.latencies.PercentileMicros(0.5),
      phase.latencies.PercentileMicros(0.9),
      phase.latencies.PercentileMicros(0.99),
      phase.latencies.PercentileMicros(0.999),
      static_cast<unsigned long long>(phase.calls),
      static_cast<unsigned long long>(phase.errors));
}

}  // namespace

absl::StatusOr<BenchRpc> ChosenBenchRpc(const BenchOptions& options) {
  const bool unary = options.unary;
  const bool stream = options.stream;
  if (unary && stream) {
    return UsageError("--unary and --stream: pick one");
  }
  return stream ? BenchRpc::kStream : BenchRpc::kUnary;
}

absl::Status BenchPredictCommand(Client& client, const CliOptions& options,
                                 std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  absl::StatusOr<BenchRpc> rpc = ChosenBenchRpc(options.bench);
  if (!rpc.ok()) return rpc.status();
  const int concurrency = static_cast<int>(options.bench.concurrency);
  const double seconds = options.bench.duration;
  const std::size_t per_request = options.bench.queries;
  if (concurrency < 1) return UsageError("--concurrency: < 1");
  if (!(seconds > 0)) return UsageError("--duration: <= 0");
  if (per_request < 1) return UsageError("--queries: < 1");
  absl::StatusOr<v1::Model> model = client.GetModel(*name);
  if (!model.ok()) return model.status();
  absl::StatusOr<std::vector<std::vector<double>>> queries =
      Queries(options, model->spec());
  if (!queries.ok()) return queries.status();
  const std::vector<v1::PredictRequest> predict_requests =
      PredictRequests(*name, *queries, per_request);
  const std::vector<v1::PingRequest> ping_requests(1);

  const bool stream = *rpc == BenchRpc::kStream;
  const CallerFactory predict = [&](Client* c) -> std::unique_ptr<Caller> {
    if (!stream)
      return std::make_unique<UnaryPredictCaller>(c, &predict_requests);
    auto context = std::make_unique<grpc::ClientContext>();
    auto s = c->regression().PredictStream(context.get());
    return std::make_unique<
        StreamCaller<v1::PredictRequest, v1::PredictResponse>>(
        std::move(context), std::move(s), &predict_requests);
  };
  const CallerFactory ping = [&](Client* c) -> std::unique_ptr<Caller> {
    if (!stream) return std::make_unique<UnaryPingCaller>(c);
    auto context = std::make_unique<grpc::ClientContext>();
    auto s = c->regression().PingStream(context.get());
    return std::make_unique<StreamCaller<v1::PingRequest, v1::PingResponse>>(
        std::move(context), std::move(s), &ping_requests);
  };
  const absl::Duration duration = absl::Seconds(seconds);
  const absl::Duration warmup = std::min(absl::Seconds(1), duration / 5);
  // The load goes to the server that answered for the model: of a cluster,
  // one that serves it (a server that does not named it).
  ClientOptions served = client.options();
  served.address = ClientRoutes::Of(client).For(*name)->address;
  const Phase empty = RunPhase(served, concurrency, warmup, duration, ping);
  const Phase predicted =
      RunPhase(served, concurrency, warmup, duration, predict);
  if (!predicted.first_error.ok()) return predicted.first_error;
  if (!empty.first_error.ok()) return empty.first_error;

  const double p50 = predicted.latencies.PercentileMicros(0.5);
  const double p99 = predicted.latencies.PercentileMicros(0.99);
  const double empty_p50 = empty.latencies.PercentileMicros(0.5);
  const double empty_p99 = empty.latencies.PercentileMicros(0.99);
  std::fprintf(out,
               "%s %s, model %s (%llu samples), %d clients, %zu queries per "
               "request, %.0f s each\n",
               stream ? "PredictStream" : "Predict", "vs an empty RPC",
               name->c_str(),
               static_cast<unsigned long long>(model->stats().num_samples()),
               concurrency, per_request, seconds);
  PrintPhase(out, "empty", empty, 1);
  PrintPhase(out, "predict", predicted, static_cast<double>(per_request));
  std::fprintf(out, "predict/empty: p50 %.2fx  p99 %.2fx\n", p50 / empty_p50,
               p99 / empty_p99);

  const std::string& json_path = options.json;
  if (json_path.empty()) return absl::OkStatus();
  nlohmann::json report = {
      {"kind", "predict"},
      {"rpc", stream ? "stream" : "unary"},
      {"server", served.address},
      {"model",
       {{"name", *name},
        {"num_samples", model->stats().num_samples()},
        {"input_dim", model->spec().input_dim()}}},
      {"concurrency", concurrency},
      {"duration_s", seconds},
      {"queries_per_request", per_request},
      {"requests", predicted.calls},
      {"throughput_per_s",
       predicted.calls * static_cast<double>(per_request) / seconds},
      {"requests_per_s", predicted.calls / seconds},
      {"latency_us", LatencyJson(predicted.latencies)},
      {"latency_histogram", HistogramJson(predicted.latencies)},
      {"empty_requests", empty.calls},
      {"empty_throughput_per_s", empty.calls / seconds},
      {"empty_latency_us", LatencyJson(empty.latencies)},
      {"empty_latency_histogram", HistogramJson(empty.latencies)},
      {"ratio_p50", p50 / empty_p50},
      {"ratio_p99", p99 / empty_p99},
  };
  if (absl::Status status = WriteJsonReport(report, json_path); !status.ok()) {
    return status;
  }
  return PlotIfAsked(report, options.bench, out);
}

}  // namespace streamreg
