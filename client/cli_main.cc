// streamreg: the command-line client of a streamreg server.
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "client/bench_commands.h"
#include "client/cli_commands.h"
#include "client/security_flags.h"
#include "common/command_line.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "server address host:port");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(60), "deadline of each call");
ABSL_FLAG(std::size_t, batch, 1000, "samples or queries per message");
ABSL_FLAG(std::string, name, "", "model name (create)");
ABSL_FLAG(std::string, model, "", "model name");
ABSL_FLAG(std::uint32_t, inputs, 0,
          "create: number of inputs (default: the --csv's input columns)");
ABSL_FLAG(std::string, targets, "",
          "create: number of targets M or their names a,b,c (default: the "
          "--csv's target_* columns)");
ABSL_FLAG(std::string, metric, "gw", "create: euclidean, gw or egop");
ABSL_FLAG(std::string, regressor, "kernel", "create: knn or kernel");
ABSL_FLAG(std::string, kernel, "box",
          "create: box, triangular, epanechnikov or gaussian");
ABSL_FLAG(std::string, capacity, "unbounded",
          "create: unbounded, window:N or reservoir:N");
ABSL_FLAG(bool, per_target, false, "create: one metric per target");
ABSL_FLAG(std::uint64_t, seed, 0, "create: random seed");
ABSL_FLAG(std::string, csv, "", "CSV file (data/README.md convention)");
ABSL_FLAG(std::string, out, "-", "predict: output CSV (- = stdout)");
ABSL_FLAG(double, rate, 1000,
          "replay, bench learn: samples per second (per robot)");
ABSL_FLAG(std::uint64_t, limit, 0, "ingest/predict/replay: first N rows only");
ABSL_FLAG(bool, create, false,
          "ingest/replay: create the model from the CSV if it does not exist");
ABSL_FLAG(std::string, json, "",
          "info/metric: print JSON (a bare --json); bench: write the report "
          "to FILE (- = stdout); bench plot: the report to plot");
ABSL_FLAG(std::uint32_t, concurrency, 4, "bench predict: clients");
ABSL_FLAG(double, duration, 10, "bench: seconds to measure (each phase)");
ABSL_FLAG(bool, unary, false, "bench predict: Predict and Ping (default)");
ABSL_FLAG(bool, stream, false, "bench predict: PredictStream and PingStream");
ABSL_FLAG(std::uint32_t, queries, 1, "bench predict: queries per request");
ABSL_FLAG(std::uint32_t, robots, 1, "bench learn: simulated arms");
ABSL_FLAG(std::uint32_t, predictors, 0,
          "bench learn: clients predicting meanwhile (PredictStream)");
ABSL_FLAG(double, predict_rate, 1000,
          "bench learn: predictions per second per predictor");
ABSL_FLAG(std::uint64_t, robot_seed, 1,
          "bench: the simulated arms' task (streamreg-robot-sim --seed)");
ABSL_FLAG(double, start_s, -1,
          "bench: seconds into the task the robots start (robot r 37 r s "
          "later; predict's queries 3000 s later); negative: 1000 s plus "
          "the model's samples / rate, so each run streams new states");
ABSL_FLAG(double, payload_kg, 2.0, "bench learn: the payload's mass");
ABSL_FLAG(double, payload_at, -1,
          "bench learn: seconds in when every arm picks up the payload "
          "(negative: never)");
ABSL_FLAG(std::string, plots, "", "bench: draw PNG plots into DIR (gnuplot)");

namespace streamreg {
namespace {

constexpr char kUsage[] =
    R"(streamreg [--server HOST:PORT] COMMAND [flags]

Commands:
  create  --name NAME --inputs D --targets M|a,b,.. [--metric euclidean|gw|egop]
          [--regressor knn|kernel] [--kernel box|...] [--capacity window:N]
          (or --csv FILE to take inputs and targets from its header)
  list
  info    --model NAME [--json]
  delete  --model NAME
  ingest  --model NAME --csv FILE [--create] [--limit N] [--batch B]
  predict --model NAME --csv IN [--out OUT]
  metric  --model NAME [--json]      gradient weights / EGOP spectrum as bars
  refit   --model NAME
  replay  --model NAME --csv FILE --rate HZ [--create] [--limit N]
  health
  bench predict --model NAME [--concurrency C] [--duration S]
          [--unary|--stream] [--queries Q] [--csv FILE] [--json FILE]
          [--plots DIR]     load on Predict beside the empty Ping RPC
  bench learn --model NAME [--create] [--robots R] [--rate HZ] [--duration S]
          [--predictors P] [--predict_rate HZ] [--payload_at S]
          [--payload_kg KG] [--json FILE] [--plots DIR]
                            simulated robot arms streaming through Learn
  bench plot --json FILE --plots DIR)";

// A bare --json (the last argument, or followed by another flag) means
// --json=- (print JSON), so `info --json` keeps working beside
// `bench ... --json FILE`.
std::vector<char*> WithBareJsonFlag(int argc, char** argv) {
  static char kJsonToStdout[] = "--json=-";
  std::vector<char*> args(argv, argv + argc);
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string arg = args[i];
    const bool last = i + 1 == args.size();
    if (arg == "--json" &&
        (last || std::string(args[i + 1]).starts_with("-"))) {
      args[i] = kJsonToStdout;
    }
  }
  return args;
}

int Run(const std::vector<std::string>& positional) {
  const std::map<std::string, absl::Status (*)(Client&)> commands = {
      {"create", CreateCommand}, {"list", ListCommand},
      {"info", InfoCommand},     {"delete", DeleteCommand},
      {"ingest", IngestCommand}, {"predict", PredictCommand},
      {"metric", MetricCommand}, {"refit", RefitCommand},
      {"replay", ReplayCommand}, {"health", HealthCommand}};
  const std::map<std::string, absl::Status (*)(Client&)> bench_commands = {
      {"predict", BenchPredictCommand},
      {"learn", BenchLearnCommand},
      {"plot", BenchPlotCommand}};
  const bool bench = positional.size() == 2 && positional[0] == "bench" &&
                     bench_commands.contains(positional[1]);
  if (!bench && (positional.size() != 1 || !commands.contains(positional[0]))) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  ClientOptions options;
  options.address = absl::GetFlag(FLAGS_server);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.batch_size = std::max<std::size_t>(1, absl::GetFlag(FLAGS_batch));
  if (absl::Status status = ApplySecurityFlags(&options); !status.ok()) {
    return ReportFailure("streamreg", status);
  }
  Client client(options);
  const absl::Status status = bench ? bench_commands.at(positional[1])(client)
                                    : commands.at(positional[0])(client);
  if (!status.ok()) {
    return ReportFailure(
        "streamreg " + (bench ? "bench " + positional[1] : positional[0]),
        status);
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(streamreg::kUsage);
  std::vector<char*> args = streamreg::WithBareJsonFlag(argc, argv);
  return streamreg::Run(
      streamreg::ParseCommandLine(static_cast<int>(args.size()), args.data()));
}
