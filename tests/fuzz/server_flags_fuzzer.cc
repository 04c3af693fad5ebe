// Fuzzes streamreg-server's flag values: any values of its value flags
// (sync policy, limits, sizes, durations, cluster settings) either make
// options within every range CheckServerOptions states, or an error that
// names a flag. (Flags naming files are left out: the fuzzer reads none.)
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "server/cmd/server_flags.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr const char* kValueFlags[] = {
    "sync",
    "max_models",
    "max_samples_per_model",
    "max_message_bytes",
    "dedup_window",
    "worker_threads",
    "drain_delay",
    "drain_timeout",
    "snapshot_every_samples",
    "snapshot_interval",
    "wal_segment_bytes",
    "listen",
    "metrics_listen",
    "cluster",
    "advertise",
    "cluster_replicas",
    "cluster_log_replicas",
    "cluster_server_ttl",
    "max_queued_samples",
    "max_queued_samples_per_model",
    "max_queue_delay",
    "max_predictions_in_flight",
    "max_predictions_in_flight_per_model",
    "max_concurrent_streams",
    "keepalive_time",
    "status_page",
    "cluster_learn_linger",
    "learn_linger",
    "realtime_priority",
};
constexpr std::size_t kNumFlags = sizeof kValueFlags / sizeof kValueFlags[0];

absl::CommandLineFlag& Flag(std::size_t index) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(kValueFlags[index]);
  FUZZ_CHECK(flag != nullptr);
  return *flag;
}

}  // namespace

// Input: parts (fuzz_support.h PartReader), each a flag's index byte and
// then its value.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  streamreg::PartReader reader(data, size);
  bool set[kNumFlags] = {};
  bool parsed = true;
  while (!reader.done()) {
    const std::size_t index = reader.Byte() % kNumFlags;
    const std::string value = reader.Part();
    std::string error;
    set[index] = true;
    if (!Flag(index).ParseFrom(value, &error)) parsed = false;
  }
  if (parsed) {
    absl::StatusOr<streamreg::ServerOptions> options =
        streamreg::ServerOptionsFromFlags();
    if (options.ok()) {
      FUZZ_CHECK(streamreg::CheckServerOptions(*options).ok());
      // gRPC takes message sizes as an int.
      FUZZ_CHECK(options->max_message_bytes > 0 &&
                 options->max_message_bytes <=
                     static_cast<std::size_t>(std::numeric_limits<int>::max()));
      if (options->cluster.has_value()) {
        FUZZ_CHECK(options->cluster->reconcile_interval > absl::ZeroDuration());
        FUZZ_CHECK(options->cluster->replicas >= 1);
      }
    } else {
      FUZZ_CHECK(absl::StartsWith(options.status().message(), "--"));
    }
  }
  // The next input starts from the defaults.
  for (std::size_t index = 0; index < kNumFlags; ++index) {
    if (!set[index]) continue;
    std::string error;
    FUZZ_CHECK(Flag(index).ParseFrom(Flag(index).DefaultValue(), &error));
  }
  return 0;
}
