#include "server/cluster/replica_model.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/cluster/log_entries.h"
#include "server/storage/snapshot_reader.h"
#include "spdlog/spdlog.h"

namespace streamreg {

absl::StatusOr<ReplicaModel> MakeReplicaModel(const ModelRegistry& registry,
                                              const std::string& name,
                                              const LogStream& log,
                                              SnapshotStore& snapshots) {
  ReplicaModel made;
  absl::StatusOr<LogStream::Bounds> bounds = log.StoredBounds();
  if (!bounds.ok()) return bounds.status();
  made.stored = bounds->last;
  // A log of its create entry alone has no snapshot (a model just made,
  // whose snapshot stream is made by its first snapshot).
  absl::StatusOr<SnapshotStore::Snapshot> newest =
      absl::NotFoundError("no samples yet");
  const absl::Time start = absl::Now();
  if (bounds->first > 1 || bounds->last > 1) newest = snapshots.Newest();
  if (newest.ok()) {
    const absl::Time read = absl::Now();
    const std::string where =
        absl::StrCat("the snapshot of model '", name, "' at log sequence ",
                     newest->log_sequence);
    // The whole snapshot and its increments, restored as one.
    std::vector<SnapshotPart> parts = {{newest->bytes, newest->log_sequence}};
    std::size_t bytes = newest->bytes.size();
    for (const SnapshotStore::Snapshot::Increment& increment :
         newest->increments) {
      parts.push_back({increment.bytes, increment.log_sequence});
      bytes += increment.bytes.size();
    }
    absl::StatusOr<RestoredSnapshot> restored =
        RestoreSnapshotChain(parts, where);
    if (!restored.ok()) return restored.status();
    if (restored->header.identity.name != name) {
      return absl::DataLossError(absl::StrCat(
          where, " holds model '", restored->header.identity.name, "'"));
    }
    made.from = newest->newest_log_sequence() + 1;
    spdlog::info(
        "event=cluster_snapshot_restored model={} log_sequence={} "
        "increments={} bytes={} inserted_rows={} read_seconds={:.3f} "
        "restore_seconds={:.3f}",
        name, newest->newest_log_sequence(), newest->increments.size(), bytes,
        restored->model->restore_insertions(),
        absl::ToDoubleSeconds(read - start),
        absl::ToDoubleSeconds(absl::Now() - read));
    absl::StatusOr<std::shared_ptr<HostedModel>> model =
        registry.MakeRestored(*std::move(restored));
    if (!model.ok()) return model.status();
    // The next increment may build on the chain read (if it is still the
    // newest then): the restored model is exactly its newest part.
    snapshots.BuildOn(*newest);
    made.model = *std::move(model);
    return made;
  }
  if (!absl::IsNotFound(newest.status())) {
    // The snapshots cannot be read now (their stream's leader being
    // elected, say): the log does while it still holds its create entry.
    if (bounds->first != 1) return newest.status();
    spdlog::info(
        "event=cluster_snapshot_unread model={} error=\"{}\" replay=whole_log",
        name, std::string(newest.status().message()));
  }
  // No snapshot: the whole log, from its create entry.
  if (bounds->last == 0) {
    return absl::NotFoundError(
        absl::StrCat("model '", name, "': its log holds no create entry yet"));
  }
  absl::StatusOr<LogEntry> first = log.Entry(1);
  if (!first.ok()) return first.status();
  DecodedLogEntry create;
  if (absl::Status decoded = DecodeLogEntry(first->payload, first->sequence,
                                            ModelConfig{}, &create);
      !decoded.ok()) {
    return decoded;
  }
  if (create.kind != LogEntryKind::kCreate || first->sequence != 1) {
    return absl::DataLossError(
        absl::StrCat("model '", name,
                     "': its log does not start with create, and it has "
                     "no snapshot"));
  }
  ModelIdentity& identity = create.identity;
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      registry.Make(identity.name, std::move(identity.config),
                    std::move(identity.input_names), identity.create_time);
  if (!model.ok()) return model.status();
  // Made from it: the create entry is applied. Its follower reads on from
  // the next, and this server's own writes apply without a consumer.
  (*model)->log_writer()->NoteApplied(1);
  made.model = *std::move(model);
  made.from = 2;
  return made;
}

}  // namespace streamreg
