// streamreg: the command-line client of a streamreg server.
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "client/cli_commands.h"
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
ABSL_FLAG(std::string, csv, "", "CSV file (../shared/data convention)");
ABSL_FLAG(std::string, out, "-", "predict: output CSV (- = stdout)");
ABSL_FLAG(double, rate, 1000, "replay: samples per second");
ABSL_FLAG(std::uint64_t, limit, 0, "ingest/predict/replay: first N rows only");
ABSL_FLAG(bool, create, false,
          "ingest/replay: create the model from the CSV if it does not exist");
ABSL_FLAG(bool, json, false, "info/metric: print JSON");

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
  health)";

int Run(const std::vector<std::string>& positional) {
  const std::map<std::string, absl::Status (*)(Client&)> commands = {
      {"create", CreateCommand}, {"list", ListCommand},
      {"info", InfoCommand},     {"delete", DeleteCommand},
      {"ingest", IngestCommand}, {"predict", PredictCommand},
      {"metric", MetricCommand}, {"refit", RefitCommand},
      {"replay", ReplayCommand}, {"health", HealthCommand}};
  if (positional.size() != 1 || !commands.contains(positional[0])) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  ClientOptions options;
  options.address = absl::GetFlag(FLAGS_server);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.batch_size = std::max<std::size_t>(1, absl::GetFlag(FLAGS_batch));
  Client client(options);
  const absl::Status status = commands.at(positional[0])(client);
  if (!status.ok()) {
    std::fprintf(stderr, "streamreg %s: %s: %s\n", positional[0].c_str(),
                 absl::StatusCodeToString(status.code()).c_str(),
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(streamreg::kUsage);
  return streamreg::Run(streamreg::ParseCommandLine(argc, argv));
}
