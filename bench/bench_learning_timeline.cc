// streamreg-bench-timeline: learning at full speed, chunk by chunk — what
// a bulk ingest asks of one model's core. Learns --samples samples of the
// simulated arm (d = 21, m = 7) into one model with the defaults, in
// batches of --batch as the CLI's ingest sends them, and prints a line per
// --chunk samples: the chunk's learning rate, its slowest batch, and the
// background work behind it (index builds and their seconds, the
// learner's waits at take-overs for rebuilds and refreshes). A take-over
// the stream outran shows as a slow batch with a wait beside it.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "bench/bench_support.h"
#include "core/model/model_config.h"

ABSL_FLAG(int, samples, 1000000, "Samples learned");
ABSL_FLAG(int, batch, 1000, "Samples per Learn call");
ABSL_FLAG(int, chunk, 20000, "Samples per printed line");
ABSL_FLAG(std::string, metric, "mlkr",
          "The model's metric: euclidean, gw, egop, mlkr or auto");

namespace streamreg {
namespace {

absl::StatusOr<MetricKind> ParseMetric(const std::string& name) {
  if (name == "euclidean") return MetricKind::kEuclidean;
  if (name == "gw") return MetricKind::kGradientWeights;
  if (name == "egop") return MetricKind::kEgop;
  if (name == "mlkr") return MetricKind::kMlkr;
  if (name == "auto") return MetricKind::kAuto;
  return absl::InvalidArgumentError("--metric: " + name + " is not known");
}

// The figures of one printed chunk.
struct Chunk {
  double seconds = 0.0;
  double slowest_batch = 0.0;
};

void PrintLine(std::size_t learned, const Chunk& chunk, std::size_t size,
               const ModelStats& stats) {
  std::printf("%9zu %9.0f %9.3f %6llu %6llu %8.1f %6llu %8.1f %5s\n", learned,
              static_cast<double>(size) / chunk.seconds, chunk.slowest_batch,
              static_cast<unsigned long long>(stats.index_rebuilds),
              static_cast<unsigned long long>(stats.rebuild_waits),
              stats.index_build_seconds,
              static_cast<unsigned long long>(stats.refresh_waits),
              stats.refresh_wait_seconds,
              stats.rebuild_in_progress ? "yes" : "no");
  std::fflush(stdout);
}

int Run() {
  const auto samples = static_cast<std::size_t>(absl::GetFlag(FLAGS_samples));
  const auto batch = static_cast<std::size_t>(absl::GetFlag(FLAGS_batch));
  const auto chunk = static_cast<std::size_t>(absl::GetFlag(FLAGS_chunk));
  absl::StatusOr<MetricKind> metric = ParseMetric(absl::GetFlag(FLAGS_metric));
  if (!metric.ok() || batch == 0 || chunk == 0) {
    std::fprintf(stderr, "%s\n",
                 metric.ok() ? "--batch and --chunk must be positive"
                             : std::string(metric.status().message()).c_str());
    return 2;
  }
  const ArmStream arm(samples);
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create(ArmConfig(*metric));
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  std::printf("%9s %9s %9s %6s %6s %8s %6s %8s %5s\n", "learned", "samples/s",
              "slowest_s", "builds", "waits", "build_s", "r_wait", "r_wait_s",
              "bg");
  Chunk current;
  std::size_t chunk_start = 0;
  for (std::size_t begin = 0; begin < samples; begin += batch) {
    const std::size_t end = std::min(samples, begin + batch);
    const std::vector<Sample> samples_in = arm.batch(begin, end);
    const BenchClock::time_point start = BenchClock::now();
    if (absl::Status status = (*model)->Learn(samples_in); !status.ok()) {
      std::fprintf(stderr, "learning samples %zu to %zu: %s\n", begin, end,
                   std::string(status.message()).c_str());
      return 1;
    }
    const double seconds = Seconds(BenchClock::now() - start);
    current.seconds += seconds;
    current.slowest_batch = std::max(current.slowest_batch, seconds);
    if (end - chunk_start >= chunk || end == samples) {
      PrintLine(end, current, end - chunk_start, (*model)->stats());
      current = Chunk{};
      chunk_start = end;
    }
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Learns the simulated arm's stream at full speed into one model and "
      "prints, per chunk, the learning rate, the slowest batch and the "
      "background work (builds, waits at take-overs).\n"
      "usage: streamreg-bench-timeline [--samples N] [--metric mlkr]");
  absl::ParseCommandLine(argc, argv);
  return streamreg::Run();
}
