#include "server/cluster/model_snapshotter.h"

#include <utility>

#include "server/hosting/snapshot_schedule.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

// How long after a failed snapshot of a model the next is tried.
constexpr absl::Duration kSnapshotRetryPause = absl::Seconds(5);
// How often a model's streams made short of copies are looked at.
constexpr absl::Duration kReplicasCheckPause = absl::Seconds(10);

}  // namespace

// A whole snapshot being put: what was captured (its bytes stay where the
// put reads them) and how far the put got.
struct ModelSnapshotter::WholePut {
  std::shared_ptr<HostedReplica> replica;
  std::unique_ptr<HostedModel::LogSnapshot> snapshot;
  SnapshotStore::PendingPut put;
  absl::Duration capture;
  absl::Time start;
  absl::Status result;  // once the put is over
};

struct ModelSnapshotter::SnapshotStart {
  absl::Status status = absl::OkStatus();
  std::optional<WholePut> whole = std::nullopt;
};

void ModelSnapshotter::SnapshotDue(
    const std::vector<std::shared_ptr<HostedReplica>>& replicas,
    std::stop_token stop) {
  std::vector<WholePut> whole_puts;
  for (const std::shared_ptr<HostedReplica>& replica : replicas) {
    SnapshotIfDue(replica, whole_puts);
    RestoreReplicasIfDue(*replica);
  }
  while (!whole_puts.empty() && !stop.stop_requested()) {
    std::erase_if(whole_puts, [this](WholePut& put) {
      return PutWholeSlice(put, options_.whole_put_slice);
    });
    for (const std::shared_ptr<HostedReplica>& replica : replicas) {
      SnapshotIfDue(replica, whole_puts);
    }
  }
  for (WholePut& put : whole_puts) put.replica->whole_being_put = 0;
}

void ModelSnapshotter::RestoreReplicasIfDue(HostedReplica& replica) {
  if (replica.replicas_whole || absl::Now() < replica.next_replicas_check) {
    return;
  }
  absl::Status restored = replica.log().RestoreReplicas();
  if (restored.ok()) restored = replica.snapshots().RestoreReplicas();
  replica.replicas_whole = restored.ok();
  replica.next_replicas_check = absl::Now() + kReplicasCheckPause;
  if (!restored.ok() && !absl::IsUnavailable(restored)) {
    spdlog::warn("event=cluster_replicas_restore_failed model={} error=\"{}\"",
                 replica.name(), std::string(restored.message()));
  }
}

void ModelSnapshotter::SnapshotIfDue(
    const std::shared_ptr<HostedReplica>& replica,
    std::vector<WholePut>& whole_puts) {
  const std::shared_ptr<HostedModel> model = replica->model();
  if (model == nullptr || absl::Now() < replica->next_snapshot_try) return;
  const SnapshotSchedule schedule{options_.every_samples, options_.interval};
  const bool putting_whole = replica->whole_being_put.load() != 0;
  const bool whole =
      !putting_whole &&
      schedule.Due(*model, model->samples_since_snapshot() > 0, absl::Now());
  if (!whole && !IncrementDue(*replica, *model)) return;
  // A refused increment waits for the whole one being put, if any.
  SnapshotStart started = StartSnapshot(replica, *model, /*increment=*/!whole,
                                        /*whole_if_refused=*/!putting_whole);
  if (!started.whole.has_value()) return;
  replica->whole_being_put = started.whole->snapshot->log_sequence;
  whole_puts.push_back(*std::move(started.whole));
}

bool ModelSnapshotter::IncrementDue(const HostedReplica& replica,
                                    const HostedModel& model) const {
  const std::uint64_t every = options_.increment_samples;
  return every > 0 && replica.increment_base.has_value() &&
         model.samples_logged() >= replica.samples_at_last_put + every;
}

void ModelSnapshotter::Failed(HostedReplica& replica, const std::string& model,
                              const absl::Status& status) {
  counters_.failures.fetch_add(1);
  spdlog::warn("event=cluster_snapshot_failed model={} error=\"{}\"", model,
               std::string(status.message()));
  // Tried again a while later rather than captured again every round.
  replica.next_snapshot_try = absl::Now() + kSnapshotRetryPause;
}

ModelSnapshotter::SnapshotStart ModelSnapshotter::StartSnapshot(
    const std::shared_ptr<HostedReplica>& replica, HostedModel& model,
    bool increment, bool whole_if_refused) {
  if (increment && replica->increment_base.has_value()) {
    const absl::Status put = PutIncrement(*replica, model);
    if (!absl::IsFailedPrecondition(put)) {
      if (!put.ok()) Failed(*replica, model.name(), put);
      return {.status = put};
    }
    if (!whole_if_refused) return {.status = put};
  }
  absl::StatusOr<WholePut> begun = BeginWholePut(replica);
  if (!begun.ok()) {
    Failed(*replica, model.name(), begun.status());
    return {.status = begun.status()};
  }
  return {.status = absl::OkStatus(), .whole = *std::move(begun)};
}

absl::Status ModelSnapshotter::Snapshot(
    const std::shared_ptr<HostedReplica>& replica, bool increment) {
  const std::shared_ptr<HostedModel> model = replica->model();
  if (model == nullptr) return absl::OkStatus();
  SnapshotStart started = StartSnapshot(replica, *model, increment,
                                        /*whole_if_refused=*/true);
  if (!started.whole.has_value()) return started.status;
  while (!PutWholeSlice(*started.whole, absl::InfiniteDuration())) {
  }
  return started.whole->result;
}

absl::Status ModelSnapshotter::PutIncrement(HostedReplica& replica,
                                            HostedModel& model) {
  const absl::Time start = absl::Now();
  absl::StatusOr<HostedModel::LogSnapshot> snapshot =
      model.CaptureForLog(&*replica.increment_base);
  if (!snapshot.ok()) {
    if (absl::IsFailedPrecondition(snapshot.status())) {
      replica.increment_base.reset();  // until a whole one is stored
    }
    return snapshot.status();
  }
  const absl::Duration capture = absl::Now() - start;
  if (absl::Status put = replica.snapshots().PutIncrement(
          snapshot->log_sequence, snapshot->bytes);
      !put.ok()) {
    // Refused (another server's snapshot came since) or not stored: the
    // next one is whole.
    replica.increment_base.reset();
    return put;
  }
  return Stored(replica, model, *snapshot, 0, capture, start);
}

absl::StatusOr<ModelSnapshotter::WholePut> ModelSnapshotter::BeginWholePut(
    std::shared_ptr<HostedReplica> replica) {
  const std::shared_ptr<HostedModel> model = replica->model();
  if (model == nullptr) {
    return absl::NotFoundError("cluster: the model is no longer hosted here");
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<HostedModel::LogSnapshot> captured = model->CaptureForLog();
  if (!captured.ok()) return captured.status();
  auto snapshot =
      std::make_unique<HostedModel::LogSnapshot>(*std::move(captured));
  const absl::Duration capture = absl::Now() - start;
  absl::StatusOr<SnapshotStore::PendingPut> put =
      replica->snapshots().BeginPut(snapshot->log_sequence, snapshot->bytes);
  if (!put.ok()) return put.status();
  return WholePut{.replica = std::move(replica),
                  .snapshot = std::move(snapshot),
                  .put = *std::move(put),
                  .capture = capture,
                  .start = start,
                  .result = absl::OkStatus()};
}

bool ModelSnapshotter::PutWholeSlice(WholePut& put, absl::Duration slice) {
  HostedReplica& replica = *put.replica;
  const std::shared_ptr<HostedModel> model = replica.model();
  if (model == nullptr) {  // released meanwhile
    replica.whole_being_put = 0;
    put.result = absl::CancelledError("cluster: the model was released");
    return true;
  }
  SnapshotStore& store = replica.snapshots();
  absl::Status status = store.PutChunks(put.put, slice);
  if (status.ok() && !put.put.chunks_stored()) return false;
  replica.whole_being_put = 0;  // before what it stores is reported
  if (status.ok()) {
    absl::StatusOr<std::uint64_t> freed = store.FinishPut(put.put);
    status = freed.ok() ? Stored(replica, *model, *put.snapshot, *freed,
                                 put.capture, put.start)
                        : freed.status();
  }
  if (!status.ok()) {
    // Its head may be stored (a purge or the compaction failed after it),
    // and the store then builds on it: the next snapshot is whole.
    replica.increment_base.reset();
    Failed(replica, model->name(), status);
  }
  put.result = status;
  return true;
}

absl::Status ModelSnapshotter::Stored(HostedReplica& replica,
                                      HostedModel& model,
                                      const HostedModel::LogSnapshot& snapshot,
                                      std::uint64_t freed,
                                      absl::Duration capture,
                                      absl::Time start) {
  replica.increment_base = snapshot.base;
  replica.samples_at_last_put = snapshot.num_samples;
  // Increments put while this whole one was may have gone further.
  if (snapshot.log_sequence > replica.snapshot_through.load()) {
    replica.snapshot_through = snapshot.log_sequence;
  }
  if (!snapshot.increment) model.SnapshotStored(snapshot.num_samples);
  // What both snapshots kept include is needed by nobody. A replica still
  // behind it reads the newer snapshot instead (LogFollower::fell_behind).
  if (freed > 0) {
    if (absl::Status compacted = replica.log().Compact(freed);
        !compacted.ok()) {
      return compacted;
    }
  }
  (snapshot.increment ? counters_.increments : counters_.snapshots)
      .fetch_add(1);
  spdlog::info(
      "event=cluster_snapshot model={} log_sequence={} samples={} bytes={} "
      "increment={} seconds={:.3f} capture_seconds={:.3f} "
      "log_compacted_through={}",
      model.name(), snapshot.log_sequence, snapshot.num_samples,
      snapshot.bytes.size(), snapshot.increment,
      absl::ToDoubleSeconds(absl::Now() - start),
      absl::ToDoubleSeconds(capture), freed);
  return absl::OkStatus();
}

void ModelSnapshotter::SnapshotBeforeLeaving(
    const std::vector<std::shared_ptr<HostedReplica>>& replicas) {
  const absl::Time wait_until = absl::Now() + options_.leave_wait;
  for (const std::shared_ptr<HostedReplica>& replica : replicas) {
    // What it applied so far is what the snapshot holds.
    replica->Stop();
    const std::shared_ptr<HostedModel> model = replica->model();
    if (model == nullptr || model->samples_since_snapshot() == 0 ||
        model->samples_logged() == replica->samples_at_last_put) {
      continue;  // its last snapshot (or increment) holds every sample
    }
    while (!model->model().BackgroundWorkSettled() &&
           absl::Now() < wait_until) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!model->model().BackgroundWorkSettled()) {
      spdlog::warn(
          "event=cluster_leave_snapshot_skipped model={} reason=\"background "
          "work still running after {}\"",
          replica->name(), absl::FormatDuration(options_.leave_wait));
      continue;
    }
    // The cluster unreachable: the next models' puts would wait as long
    // each, and the server is stopping.
    // An increment where one can be built (and increments are on):
    // seconds sooner at 10^6 samples.
    if (absl::Status status =
            Snapshot(replica, /*increment=*/options_.increment_samples > 0);
        absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) {
      return;
    }
  }
}

}  // namespace streamreg
