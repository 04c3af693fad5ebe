// streamreg-bench-durability: what durability costs (issue 5's benchmark).
//  1. Ingest throughput through the server's write path (HostedModel::Learn:
//     dedup, write-ahead log, learning) with no log, --sync=interval:5 and
//     --sync=always, in one run, for batches of 1 (a robot's Learn) and 100
//     (Ingest) samples.
//  2. At n samples (d = 21, m = 7; default 2 * 10^5): the learner's pause while
//     a snapshot is captured, its latency while the snapshot is written,
//     the snapshot's time and size.
//  3. Recovery time: the snapshot plus a log tail replayed, and the
//     snapshot alone.
// The model: the simulated arm's stream (bench_support.h), GW metric, k-NN.
// On that noisy stream the online bandwidths (the kernel regressor's, and
// the gradient estimates' for any regressor) are wide, so a sample's cost
// grows with n: learning 10^6 samples takes well over ten minutes, hence
// the default n of 2 * 10^5.
// Prints a table; --json writes the figures.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "bench/bench_support.h"
#include "common/command_line.h"
#include "core/base/background_priority.h"
#include "nlohmann/json.hpp"
#include "server/hosting/model_registry.h"
#include "server/hosting/model_storage.h"
#include "server/hosting/worker_pool.h"

ABSL_FLAG(std::string, dir, "", "Where to write (default: a new /tmp dir)");
ABSL_FLAG(std::size_t, ingest_samples, 20000, "Samples per ingest run");
ABSL_FLAG(std::string, modes, "none,interval:5,always", "Sync modes");
ABSL_FLAG(std::string, batches, "1,100", "Samples per Learn call");
ABSL_FLAG(std::size_t, recovery_samples, 200'000,
          "Model size for the snapshot and recovery figures (0: skip)");
ABSL_FLAG(std::size_t, tail, 20000,
          "Samples logged after the snapshot, replayed by recovery");
ABSL_FLAG(std::string, json, "", "Write the results as JSON to this file");
ABSL_FLAG(bool, keep, false,
          "Keep the recovered data directory (DIR/recovery) for a server");

namespace streamreg {
namespace {

constexpr int kRounds = 3;

// A registry over a data directory (or in memory for mode "none").
struct Host {
  Host(const std::string& directory, const std::string& mode) {
    if (mode != "none") {
      StorageOptions options;
      options.sync = *SyncPolicy::Parse(mode);
      options.snapshot_every_samples = UINT64_MAX;
      options.snapshot_interval = absl::InfiniteDuration();
      storage = std::make_unique<ModelStorage>(directory, options);
    }
    registry = std::make_unique<ModelRegistry>(
        RegistryLimits{}, HostingPools{&pool, &learning}, storage.get());
    if (!registry->Recover().ok()) std::abort();
    if (storage != nullptr) {
      ModelRegistry* r = registry.get();
      storage->Start([r] { return r->List("", 10); });
    }
  }
  ~Host() {
    if (storage != nullptr) storage->StopBackground();
  }
  WorkerPool pool{1};
  WorkerPool learning{1};
  std::unique_ptr<ModelStorage> storage;
  std::unique_ptr<ModelRegistry> registry;
};

std::uintmax_t DirectoryBytes(const std::string& directory,
                              const std::string& prefix) {
  std::uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().filename().string().starts_with(prefix)) {
      bytes += entry.file_size();
    }
  }
  return bytes;
}

// The model every figure here learns: GW metric, k-NN.
ModelConfig DurabilityConfig() {
  ModelConfig config = ArmConfig(MetricKind::kGradientWeights);
  config.regressor = RegressorKind::kNearest;
  return config;
}

// Samples per second learning `stream` in calls of `batch` samples into a
// fresh model under `mode`.
double IngestRate(const ArmStream& stream, const std::string& directory,
                  const std::string& mode, std::size_t batch) {
  std::filesystem::remove_all(directory);
  Host host(directory, mode);
  auto model = *host.registry->Create("m", DurabilityConfig(), {});
  const BenchClock::time_point start = BenchClock::now();
  for (std::size_t s = 0; s < stream.size(); s += batch) {
    const std::vector<Sample> samples =
        stream.batch(s, std::min(stream.size(), s + batch));
    if (!model->Learn(samples, nullptr).ok()) std::abort();
  }
  return stream.size() / Seconds(BenchClock::now() - start);
}

nlohmann::json IngestFigures(const std::string& root) {
  const ArmStream stream(absl::GetFlag(FLAGS_ingest_samples));
  std::vector<std::string> modes;
  for (absl::string_view mode :
       absl::StrSplit(absl::GetFlag(FLAGS_modes), ',')) {
    modes.emplace_back(mode);
  }
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-12s %6s %14s %10s   (best of %d rounds, modes rotated)\n",
              "sync", "batch", "samples/s", "vs none", kRounds);
  for (absl::string_view batch_text :
       absl::StrSplit(absl::GetFlag(FLAGS_batches), ',')) {
    const std::size_t batch = std::stoul(std::string(batch_text));
    std::vector<double> best(modes.size(), 0.0);
    for (int round = 0; round < kRounds; ++round) {
      for (std::size_t k = 0; k < modes.size(); ++k) {
        const std::size_t m = (k + round) % modes.size();
        best[m] = std::max(
            best[m], IngestRate(stream, root + "/ingest", modes[m], batch));
      }
    }
    for (std::size_t m = 0; m < modes.size(); ++m) {
      const double ratio = best[m] / best[0];
      std::printf("%-12s %6zu %14.0f %9.3fx\n", modes[m].c_str(), batch,
                  best[m], ratio);
      rows.push_back({{"sync", modes[m]},
                      {"batch", batch},
                      {"samples_per_s", best[m]},
                      {"ratio_to_first", ratio}});
    }
  }
  return rows;
}

nlohmann::json SnapshotAndRecoveryFigures(const std::string& root) {
  const std::size_t n = absl::GetFlag(FLAGS_recovery_samples);
  const std::size_t tail = absl::GetFlag(FLAGS_tail);
  const std::size_t robot_samples = 20000;
  const ArmStream stream(n + robot_samples + tail);
  const std::string directory = root + "/recovery";
  std::filesystem::remove_all(directory);
  nlohmann::json figures;
  auto host = std::make_unique<Host>(directory, "interval:5");
  auto model = *host->registry->Create("m", DurabilityConfig(), {});

  BenchClock::time_point start = BenchClock::now();
  for (std::size_t s = 0; s < n; s += 1000) {
    if (!model->Learn(stream.batch(s, std::min(n, s + 1000)), nullptr).ok()) {
      std::abort();
    }
  }
  figures["n"] = n;
  figures["learn_samples_per_s"] = n / Seconds(BenchClock::now() - start);
  std::printf("\nlearned n = %zu samples at %.0f samples/s\n", n,
              figures["learn_samples_per_s"].get<double>());

  // A robot learns one sample per call while a snapshot is taken.
  std::atomic<int> phase = 0;  // 0 before, 1 during, 2 stop
  std::vector<double> before_us, during_us;
  std::size_t next = n;
  std::thread robot([&] {
    while (phase != 2 && next < n + robot_samples) {
      const Sample one = stream.sample(next++);
      const BenchClock::time_point t = BenchClock::now();
      if (!model->Learn({&one, 1}, nullptr).ok()) std::abort();
      const double us = 1e6 * Seconds(BenchClock::now() - t);
      (phase == 0 ? before_us : during_us).push_back(us);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  phase = 1;
  // Written as the server's snapshot thread writes it (at lower priority).
  double snapshot_s = 0.0;
  std::thread([&] {
    LowerThreadPriority();
    const BenchClock::time_point t = BenchClock::now();
    if (absl::Status status = model->Snapshot(); !status.ok()) {
      std::cerr << status << "\n";
      std::abort();
    }
    snapshot_s = Seconds(BenchClock::now() - t);
  }).join();
  phase = 2;
  robot.join();
  // The pause itself: what capturing the state takes (the learner waits
  // for exactly this).
  std::vector<double> capture_us;
  for (int i = 0; i < 20; ++i) {
    const BenchClock::time_point t = BenchClock::now();
    const ModelSnapshot snapshot = model->model().CaptureSnapshot();
    capture_us.push_back(1e6 * Seconds(BenchClock::now() - t));
  }
  const std::string model_dir = directory + "/models/m";
  figures["snapshot_s"] = snapshot_s;
  figures["snapshot_bytes"] = DirectoryBytes(model_dir, "snapshot-");
  figures["capture_pause_us_median"] = Percentile(capture_us, 0.5);
  figures["capture_pause_us_max"] = Percentile(capture_us, 1.0);
  figures["learn_us_before"] = {{"p50", Percentile(before_us, 0.5)},
                                {"p99", Percentile(before_us, 0.99)},
                                {"max", Percentile(before_us, 1.0)}};
  figures["learn_us_during_snapshot"] = {{"p50", Percentile(during_us, 0.5)},
                                         {"p99", Percentile(during_us, 0.99)},
                                         {"max", Percentile(during_us, 1.0)},
                                         {"count", during_us.size()}};
  std::printf(
      "snapshot: %.2f s, %.1f MiB; capture pause median %.0f us, max %.0f "
      "us\n",
      snapshot_s, figures["snapshot_bytes"].get<double>() / (1 << 20),
      figures["capture_pause_us_median"].get<double>(),
      figures["capture_pause_us_max"].get<double>());
  std::printf(
      "robot Learn latency before: p50 %.0f p99 %.0f max %.0f us; during "
      "the snapshot (%zu calls): p50 %.0f p99 %.0f max %.0f us\n",
      Percentile(before_us, 0.5), Percentile(before_us, 0.99),
      Percentile(before_us, 1.0), during_us.size(), Percentile(during_us, 0.5),
      Percentile(during_us, 0.99), Percentile(during_us, 1.0));

  for (std::size_t s = next; s < next + tail; s += 100) {
    if (!model->Learn(stream.batch(s, std::min(next + tail, s + 100)), nullptr)
             .ok()) {
      std::abort();
    }
  }
  model->CatchUp();  // learning follows the acknowledgements
  const std::uint64_t samples = model->model().samples_seen();
  const std::uint64_t logged =
      samples - (n + (next - n));  // learned after the snapshot
  model.reset();
  host.reset();  // a crash: nothing more is written

  auto recover = [&]() {
    const BenchClock::time_point t = BenchClock::now();
    host = std::make_unique<Host>(directory, "interval:5");
    auto recovered = host->registry->Find("m");
    if (recovered.ok()) (*recovered)->CatchUp();  // the log tail learned
    const double s = Seconds(BenchClock::now() - t);
    if (!recovered.ok() || (*recovered)->model().samples_seen() != samples) {
      std::cerr << "recovery lost samples\n";
      std::abort();
    }
    return s;
  };
  const double with_tail_s = recover();
  if (!(*host->registry->Find("m"))->Snapshot().ok()) std::abort();
  host.reset();
  const double snapshot_only_s = recover();
  figures["log_tail_samples"] = logged;
  figures["recovery_s"] = with_tail_s;
  figures["recovery_snapshot_only_s"] = snapshot_only_s;
  std::printf(
      "recovery of %llu samples: %.2f s (snapshot + %llu logged samples "
      "replayed); %.2f s from the snapshot alone\n",
      static_cast<unsigned long long>(samples), with_tail_s,
      static_cast<unsigned long long>(logged), snapshot_only_s);
  host.reset();
  return figures;
}

int Main() {
  std::string root = absl::GetFlag(FLAGS_dir);
  if (root.empty()) {
    // mkdtemp(3) replaces the template's six X's with a unique name.
    char pattern[] = "/tmp/streamreg-bench-durability-XXXXXX";
    root = mkdtemp(pattern);
  }
  nlohmann::json report;
  report["ingest"] = IngestFigures(root);
  if (absl::GetFlag(FLAGS_recovery_samples) > 0) {
    report["snapshot_and_recovery"] = SnapshotAndRecoveryFigures(root);
  }
  std::filesystem::remove_all(root + "/ingest");
  if (!absl::GetFlag(FLAGS_keep))
    std::filesystem::remove_all(root + "/recovery");
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::ofstream(path) << report.dump(2) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = "streamreg-bench-durability",
      .synopsis =
          "[--ingest_samples N] [--modes none,interval:MS,always] [--json OUT] "
          "[flags]",
      .summary =
          "What durability costs: ingest throughput through the server's "
          "write path with no log, --sync=interval and --sync=always; the "
          "learner's pause while a snapshot is captured and written; "
          "recovery time from a snapshot and a log tail. Prints a table; "
          "--json writes the figures.",
      .flags = streamreg::FlagsDefinedIn({"bench/bench_durability.cc"}),
      .examples = {"streamreg-bench-durability --ingest_samples 10000"},
      .details = "Figures, not a test: bench/README.md has the results.",
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  return streamreg::Main();
}
