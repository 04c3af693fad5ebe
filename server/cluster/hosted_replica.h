#ifndef STREAMREG_SERVER_CLUSTER_HOSTED_REPLICA_H_
#define STREAMREG_SERVER_CLUSTER_HOSTED_REPLICA_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "core/model/model_snapshot.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/replicated_log.h"
#include "server/cluster/snapshot_store.h"
#include "server/hosting/hosted_model.h"

namespace streamreg {

// A model this server hosts in cluster mode: its ReplicatedLog (the
// model's write log, with the follower applying it), its snapshots, and
// what the snapshotting (ModelSnapshotter) keeps of them between rounds.
class HostedReplica : public ReplicatedLog {
 public:
  // What /metrics and the status page show of it (ClusterNode::report):
  // its log's last entry applied here, the first it applied from the log
  // (those before came with the snapshot it was restored from, if any: 1 +
  // the snapshot's last), whether it is replaying its log's tail, and
  // whether it fell behind a compaction (hosted again from the newest
  // snapshot).
  struct Report {
    std::string model;
    std::uint64_t applied = 0;
    std::uint64_t replayed_from = 0;
    // Where this server snapshots the model: the last log entry that the
    // newest snapshot it put includes (a server taking the model over
    // after a crash replays the log after it; 0: none put), and the log
    // sequence of a whole snapshot being put meanwhile (0: none).
    std::uint64_t snapshot_through = 0;
    std::uint64_t whole_snapshot_being_put = 0;
    bool catching_up = false;
    bool fell_behind = false;
  };

  HostedReplica(LogStream log, SnapshotStore snapshots,
                const std::shared_ptr<HostedModel>& model,
                std::uint64_t replayed_from, ReplicatedLog::Options options)
      : ReplicatedLog(std::move(log), model->name(), std::move(options)),
        model_(model),
        snapshots_(std::move(snapshots)),
        replayed_from_(replayed_from) {}

  // Null once the model is gone (the model holds this, as its write log:
  // not the other way round).
  std::shared_ptr<HostedModel> model() const { return model_.lock(); }
  SnapshotStore& snapshots() { return snapshots_; }
  Report report() const;

  // Whether this server is the one that snapshots the model (the first of
  // its placement), as the last reconcile found.
  std::atomic<bool> snapshots_here{false};
  // The snapshotting thread's: no snapshot is tried before this (a failed
  // one waits a while rather than capturing again every round).
  absl::Time next_snapshot_try = absl::InfinitePast();
  // The snapshotting thread's too: what the last snapshot this server put
  // (whole or an increment) or restored the model from holds, which the
  // next increment builds on (none for a model made from its log until it
  // put a whole one, nor after a put failed), and the samples it had
  // applied then.
  std::optional<SnapshotBase> increment_base;
  std::uint64_t samples_at_last_put = 0;
  // Set by the snapshotting thread: the log sequence of a whole snapshot of
  // it being put (0: none), its increments meanwhile building on the chain
  // before it, and the last log entry the newest snapshot this server put
  // includes.
  std::atomic<std::uint64_t> whole_being_put{0};
  std::atomic<std::uint64_t> snapshot_through{0};
  // The snapshotting thread's too: whether the log and snapshot streams
  // were found with all their copies (made while a NATS node was offline,
  // they may have fewer), and when to look next if not.
  bool replicas_whole = false;
  absl::Time next_replicas_check = absl::InfinitePast();

 private:
  const std::weak_ptr<HostedModel> model_;
  SnapshotStore snapshots_;  // the snapshotting thread's
  const std::uint64_t replayed_from_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_HOSTED_REPLICA_H_
