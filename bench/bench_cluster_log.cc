// streamreg-bench-cluster-log: what a replicated append costs, beside the
// local journal's, in one run (docs/cluster.md; issue 22's first figures).
// A batch of the simulated arm's samples (d = 21, m = 7) is appended to a
// model's log on a NATS JetStream cluster (--nats, e.g. from
// deploy/cluster/nats-cluster.sh) and waited for, one at a time, as a
// server acknowledging a Learn would; R = 1 and 3 copies; and to the local
// write-ahead log with --sync=always (each append fsynced), the single-node
// mode's equivalent durability. Prints each one's latency percentiles and
// samples/s; --json writes them.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/bench_support.h"
#include "common/command_line.h"
#include "common/percentile.h"
#include "nlohmann/json.hpp"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/retried_until.h"
#include "server/cluster/snapshot_store.h"
#include "server/storage/journal_file.h"

ABSL_FLAG(std::string, nats, "",
          "Comma-separated nats://HOST:PORT of the cluster's nodes");
ABSL_FLAG(std::size_t, appends, 2000, "Appends per configuration");
ABSL_FLAG(std::string, batches, "1,40", "Samples per append");
ABSL_FLAG(std::string, replicas, "1,3", "Copies of the log");
ABSL_FLAG(std::string, dir, "", "Where the journal writes (default: /tmp)");
ABSL_FLAG(std::size_t, snapshot_mb, 64,
          "Size of the snapshot put into and read back from JetStream "
          "(R = 3; 0: none)");
ABSL_FLAG(std::string, json, "", "Write the results as JSON to this file");

namespace streamreg {
namespace {

constexpr char kProgram[] = "streamreg-bench-cluster-log";

[[noreturn]] void Die(const absl::Status& status) {
  std::exit(ReportFailure(kProgram, status));
}

struct Figures {
  std::string what;
  std::size_t batch = 0;
  double p50_us = 0, p99_us = 0, max_us = 0, samples_per_second = 0;
};

// Times `append(i)` for i in [0, count).
template <class Append>
Figures Time(std::string what, std::size_t batch, std::size_t count,
             const Append& append) {
  std::vector<double> us;
  us.reserve(count);
  const auto start = BenchClock::now();
  for (std::size_t i = 0; i < count; ++i) {
    const auto before = BenchClock::now();
    append(i);
    us.push_back(1e6 * Seconds(BenchClock::now() - before));
  }
  const double seconds = Seconds(BenchClock::now() - start);
  Figures figures{std::move(what), batch};
  figures.p50_us = Percentile(us, 0.5);
  figures.p99_us = Percentile(us, 0.99);
  figures.max_us = Percentile(us, 1.0);
  figures.samples_per_second = static_cast<double>(count * batch) / seconds;
  return figures;
}

std::vector<std::size_t> Sizes(const std::string& text) {
  std::vector<std::size_t> sizes;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::size_t size = 0;
    if (!absl::SimpleAtoi(part, &size) || size == 0) {
      std::exit(ReportUsageError(
          kProgram, absl::StrCat("bad size '", part, "' in a list")));
    }
    sizes.push_back(size);
  }
  return sizes;
}

// Puts a snapshot of `mb` MiB (incompressible bytes) into a model's
// snapshot stream, 3 copies, and reads it back as a server hosting the
// model does: each timed once, as samples/s of a 10^6-sample model's
// snapshot (300 MB) would not mean much; the figure is MB/s.
void TimeSnapshot(JetStreamClient& client, std::size_t mb,
                  std::vector<Figures>* results) {
  std::string bytes(mb << 20, '\0');
  std::mt19937_64 random(7);
  for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    const std::uint64_t word = random();
    std::memcpy(bytes.data() + i, &word, 8);
  }
  SnapshotStore store =
      SnapshotStore::Open(client, "bench-snapshot", {.replicas = 3});
  // The first put makes the stream: not part of the figure.
  if (absl::StatusOr<std::uint64_t> made = RetriedUntil(
          absl::Now() + absl::Seconds(60), [&] { return store.Put(1, ""); });
      !made.ok()) {
    Die(made.status());
  }
  const auto timed = [&](std::string what, const auto& step) {
    Figures figures =
        Time(std::move(what), mb, 1, [&](std::size_t) { step(); });
    // Its batch is the MiB moved, its samples/s MiB/s.
    results->push_back(figures);
  };
  timed("snapshot put, MiB", [&] {
    if (absl::StatusOr<std::uint64_t> put = store.Put(2, bytes); !put.ok()) {
      Die(put.status());
    }
  });
  timed("snapshot read, MiB", [&] {
    absl::StatusOr<SnapshotStore::Snapshot> read = store.Newest();
    if (!read.ok()) Die(read.status());
    if (read->bytes != bytes) {
      Die(absl::DataLossError("the snapshot read back differs"));
    }
  });
  (void)SnapshotStore::Remove(client, "bench-snapshot");
}

int Run() {
  const std::vector<std::string> servers =
      absl::StrSplit(absl::GetFlag(FLAGS_nats), ',', absl::SkipEmpty());
  if (servers.empty()) {
    return ReportUsageError(
        kProgram,
        "--nats is required (deploy/cluster/nats-cluster.sh up DIR starts a "
        "cluster and writes DIR/nats)");
  }
  const std::size_t count = absl::GetFlag(FLAGS_appends);
  const std::vector<std::size_t> batches = Sizes(absl::GetFlag(FLAGS_batches));
  std::size_t largest = 0;
  for (std::size_t batch : batches) largest = std::max(largest, batch);
  const ArmStream stream(largest * count);
  JetStreamClient::Options options;
  options.servers = servers;
  absl::StatusOr<std::unique_ptr<JetStreamClient>> client =
      JetStreamClient::Connect(options);
  if (!client.ok()) Die(client.status());

  std::vector<Figures> results;
  for (std::size_t replicas : Sizes(absl::GetFlag(FLAGS_replicas))) {
    for (std::size_t batch : batches) {
      const std::string model = absl::StrCat("bench-r", replicas, "-b", batch);
      LogStream::Options log_options;
      log_options.replicas = static_cast<int>(replicas);
      // A cluster just started may time out a stream's creation while its
      // nodes settle; setting up is not what is measured.
      absl::StatusOr<LogStream> log = RetriedUntil(
          absl::Now() + absl::Seconds(60),
          [&] { return LogStream::Open(**client, model, log_options); });
      if (!log.ok()) Die(log.status());
      results.push_back(
          Time(absl::StrCat("JetStream R=", replicas), batch, count,
               [&](std::size_t i) {
                 const std::vector<Sample> samples =
                     stream.batch(i * batch, (i + 1) * batch);
                 // Retried as a server's Learn retries its append (the
                 // message id makes a retry a duplicate), and timed with it.
                 const absl::StatusOr<LogStream::Appended> appended =
                     RetriedUntil(absl::Now() + absl::Seconds(10), [&] {
                       return log->Append(BatchMessageId(model, samples, ""),
                                          EncodeSamplesEntry(samples));
                     });
                 if (!appended.ok()) Die(appended.status());
               }));
      (void)log->Delete();
    }
  }
  if (const std::size_t mb = absl::GetFlag(FLAGS_snapshot_mb); mb > 0) {
    TimeSnapshot(**client, mb, &results);
  }
  std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty())
    dir =
        std::filesystem::temp_directory_path() / "streamreg-bench-cluster-log";
  std::filesystem::remove_all(dir);
  for (std::size_t batch : batches) {
    JournalFile::Options journal_options;
    journal_options.sync = *SyncPolicy::Parse("always");
    const ModelConfig config = ArmConfig(MetricKind::kGradientWeights);
    absl::StatusOr<std::unique_ptr<JournalFile>> journal =
        JournalFile::Create(absl::StrCat(dir, "/b", batch), journal_options,
                            {"bench", absl::Now(), config, {}});
    if (!journal.ok()) Die(journal.status());
    results.push_back(
        Time("journal, sync always", batch, count, [&](std::size_t i) {
          const std::vector<Sample> samples =
              stream.batch(i * batch, (i + 1) * batch);
          const absl::Status appended =
              (*journal)->AppendSamples(i * batch + 1, samples);
          if (!appended.ok()) Die(appended);
        }));
  }
  std::filesystem::remove_all(dir);

  std::printf("%-22s %6s %10s %10s %10s %12s\n", "log", "batch", "p50 us",
              "p99 us", "max us", "samples/s");
  nlohmann::json json = nlohmann::json::array();
  for (const Figures& f : results) {
    std::printf("%-22s %6zu %10.0f %10.0f %10.0f %12.0f\n", f.what.c_str(),
                f.batch, f.p50_us, f.p99_us, f.max_us, f.samples_per_second);
    json.push_back({{"log", f.what},
                    {"batch", f.batch},
                    {"p50_us", f.p50_us},
                    {"p99_us", f.p99_us},
                    {"max_us", f.max_us},
                    {"samples_per_second", f.samples_per_second}});
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) Die(absl::UnavailableError("cannot write " + path));
    std::fprintf(out, "%s\n", json.dump(2).c_str());
    std::fclose(out);
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = streamreg::kProgram,
      .synopsis =
          "--nats URL,... [--appends N] [--batches 1,40] "
          "[--replicas 1,3] [--json OUT]",
      .summary =
          "What a replicated append costs: batches of simulated-arm samples "
          "appended one at a time to a model's log on a NATS JetStream "
          "cluster (R copies, each waited for as a Learn's acknowledgement "
          "is), beside the local write-ahead log with --sync=always, in one "
          "run. Prints latency percentiles and samples/s; --json writes "
          "them.",
      .flags = streamreg::FlagsDefinedIn({"bench/bench_cluster_log.cc"}),
      .examples = {"streamreg-bench-cluster-log --nats "
                   "nats://127.0.0.1:4222,nats://127.0.0.1:4223 --appends 500"},
      .details =
          "deploy/cluster/nats-cluster.sh up DIR starts a local "
          "cluster and writes its addresses to DIR/nats. Figures, not "
          "a test: bench/notes/results-history.md has the results.",
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  return streamreg::Run();
}
