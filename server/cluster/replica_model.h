#ifndef STREAMREG_SERVER_CLUSTER_REPLICA_MODEL_H_
#define STREAMREG_SERVER_CLUSTER_REPLICA_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/snapshot_store.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/model_registry.h"

namespace streamreg {

// The model of a replica a server starts hosting, not hosted yet: made
// from its newest snapshot (the whole one with its increments), or from
// its log's create entry while it has none (or while its snapshots cannot
// be read and the log still holds that entry).
struct ReplicaModel {
  std::shared_ptr<HostedModel> model;
  std::uint64_t from = 1;    // the first log entry it has not applied
  std::uint64_t stored = 0;  // the last entry the log held
};

// Makes it for model `name` with `registry` (which checks its limits),
// from `log` and `snapshots` (which then builds its next increment on the
// chain read: SnapshotStore::BuildOn). NOT_FOUND while the log holds no
// create entry yet; DATA_LOSS when the snapshot holds another model or the
// log starts otherwise than with a create entry and there is no snapshot.
absl::StatusOr<ReplicaModel> MakeReplicaModel(const ModelRegistry& registry,
                                              const std::string& name,
                                              const LogStream& log,
                                              SnapshotStore& snapshots);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_REPLICA_MODEL_H_
