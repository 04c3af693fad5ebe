#include "server/cluster/stream_janitor.h"

#include <optional>
#include <vector>

#include "server/cluster/log_stream.h"
#include "server/cluster/orphan_streams.h"
#include "server/cluster/snapshot_store.h"
#include "spdlog/spdlog.h"

namespace streamreg {

absl::Status StreamJanitor::RemoveModelStreams(JetStreamClient& client,
                                               absl::string_view name,
                                               std::uint64_t log,
                                               absl::Duration wait) {
  absl::Status log_removed = LogStream::Remove(client, name, log, wait);
  absl::Status snapshots = SnapshotStore::Remove(client, name, log, wait);
  return log_removed.ok() ? snapshots : log_removed;
}

void StreamJanitor::Abandon(const std::string& name, std::uint64_t log) {
  MutexLock lock(&mutex_);
  abandoned_.try_emplace({name, log}, absl::InfinitePast());
}

std::size_t StreamJanitor::abandoned() const {
  MutexLock lock(&mutex_);
  return abandoned_.size();
}

void StreamJanitor::RemoveAbandoned() {
  std::vector<std::pair<std::string, std::uint64_t>> due;
  {
    MutexLock lock(&mutex_);
    const absl::Time now = absl::Now();
    for (const auto& [log, next_try] : abandoned_) {
      if (now >= next_try) due.push_back(log);
    }
  }
  for (const auto& [name, log] : due) {
    // A log that never elected a leader is removed by the metadata leader,
    // but only its leader would answer the request: it times out, and the
    // next try finds the stream gone.
    const absl::Status removed =
        RemoveModelStreams(client_, name, log, kRemovalWait);
    MutexLock lock(&mutex_);
    if (removed.ok()) {
      abandoned_.erase({name, log});
      spdlog::info("event=cluster_abandoned_log_removed model={} stream={}",
                   name, LogStream::StreamName(name, log));
    } else {
      abandoned_[{name, log}] = absl::Now() + kAbandonedRetryPause;
      spdlog::info(
          "event=cluster_abandoned_log_kept model={} stream={} "
          "retry_in_seconds={} error=\"{}\"",
          name, LogStream::StreamName(name, log),
          absl::ToDoubleSeconds(kAbandonedRetryPause),
          std::string(removed.message()));
    }
  }
}

void StreamJanitor::SweepOrphansIfDue(bool first_live) {
  const absl::Time now = absl::Now();
  if (!first_live || now < next_orphan_sweep_) return;
  next_orphan_sweep_ = now + orphan_sweep_interval_;
  // Listed before the placements are read: a stream listed was made after
  // its placement (IsOrphan), so the placements read next know it.
  absl::StatusOr<std::vector<std::string>> names =
      client_.StreamNames("cluster: listing the streams");
  absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
      placements = names.ok() ? placements_.All() : names.status();
  if (!placements.ok()) {
    spdlog::warn("event=cluster_orphan_sweep_failed error=\"{}\"",
                 std::string(placements.status().message()));
    return;
  }
  for (const std::string& name : *names) {
    const std::optional<ModelStream> stream = ParseModelStream(name);
    if (!stream.has_value() || !IsOrphan(*stream, *placements)) continue;
    const PlacementStore::Placement& placement = placements->at(stream->model);
    // A stream that never elected a leader is removed without an answer
    // (as an abandoned log is): the next sweep finds it gone.
    const absl::Status removed = client_.DeleteStream(name, kRemovalWait);
    if (removed.ok()) {
      orphans_removed_.fetch_add(1);
      spdlog::info(
          "event=cluster_orphan_stream_removed model={} stream={} "
          "placement_generation={} model_deleted={}",
          stream->model, name, placement.log, placement.servers.empty());
    } else {
      spdlog::info(
          "event=cluster_orphan_stream_kept model={} stream={} error=\"{}\"",
          stream->model, name, std::string(removed.message()));
    }
  }
}

}  // namespace streamreg
