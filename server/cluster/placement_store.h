#ifndef STREAMREG_SERVER_CLUSTER_PLACEMENT_STORE_H_
#define STREAMREG_SERVER_CLUSTER_PLACEMENT_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/snapshot_store.h"

typedef struct __kvStore kvStore;

namespace streamreg {

// Where models are served and which servers are alive, agreed through
// JetStream (docs/cluster.md, "Placement"):
//  - placements are a register per model, changed only by compare-and-set
//    on its revision, so that of two servers proposing at once exactly one
//    wins and the other reads the winner's placement. They are kept as a
//    replicated log of proposals (stream `streamreg-placement`) that every
//    store reads in order and applies the same way: a proposal wins if it
//    names the model's revision at its place in the log, and its sequence
//    becomes the new revision. Not JetStream Key-Value's compare-and-set:
//    Debian's nats-server 2.9.10 checks a clustered stream's expected
//    subject sequence before proposing a write, not in consensus, and let
//    several writers based on one revision succeed in our test
//    (nats-server issue 4320, fixed in 2.9.21);
//    The proposals are compacted: every `compact_every` of them, the
//    register as of the last one applied (every model's servers and
//    revision, a deleted model's included, so that every store judges a
//    later proposal alike) is stored as a snapshot (stream
//    `streamreg-placement-snap`, SnapshotStore), and the proposals the
//    older kept snapshot includes leave the log. A store opens from the
//    newest snapshot and reads only the proposals after it; one that finds
//    the proposals it needs next compacted away reloads the snapshot;
//  - the live servers are JetStream Key-Value bucket `streamreg_servers`,
//    one key per server holding its address; an entry expires `server_ttl`
//    after it was last written, so a server that stops renewing it
//    (Heartbeat) drops out of LiveServers.
// Both keep `replicas` copies. Thread-safe.
class PlacementStore {
 public:
  struct Options {
    int replicas = 3;
    absl::Duration server_ttl = absl::Seconds(5);
    // Proposals applied since the last snapshot that make CompactIfDue
    // store one.
    std::uint64_t compact_every = 1000;
  };
  // A model's placement: its servers, the generation of its log and
  // snapshots (LogStream::StreamName), whether that log holds the model's
  // create entry, and the revision that set them (0: none yet).
  struct Placement {
    std::vector<std::string> servers;
    std::uint64_t revision = 0;
    std::uint64_t log = 0;
    // False while a create is making its log: servers host the model once
    // its creator has found its create entry there and said so.
    // (Placements proposed before generations existed read as log 0,
    // created.)
    bool created = true;
  };

  // Opens both buckets, making them if they do not exist. `client` must
  // outlive the store.
  static absl::StatusOr<std::unique_ptr<PlacementStore>> Open(
      JetStreamClient& client, Options options);
  ~PlacementStore();
  PlacementStore(const PlacementStore&) = delete;
  PlacementStore& operator=(const PlacementStore&) = delete;

  // The model's placement as of now: every proposal stored before the call
  // is applied first (a linearizable read).
  absl::StatusOr<Placement> Get(absl::string_view model);
  // Every model's placement as of now (a linearizable read, as Get), a
  // deleted model's (no servers) included.
  absl::StatusOr<absl::flat_hash_map<std::string, Placement>> All();
  // Sets the placement of `model` to `next` (its servers, log and created)
  // if it is still at next.revision (0: it has none): the new revision, or
  // ABORTED when another change came first (read it again and decide).
  // UNAVAILABLE when the cluster did not answer: the proposal may or may
  // not be in the log, and proposing it again (within the log's duplicate
  // window) is safe and finds its outcome.
  absl::StatusOr<std::uint64_t> CompareAndSet(absl::string_view model,
                                              const Placement& next);

  // Snapshots the register and compacts the proposal log, if at least
  // `compact_every` proposals were applied since this store's last
  // snapshot (any store may: the register as of a proposal is the same in
  // every store). Off the request path: a server's reconcile round.
  absl::Status CompactIfDue();
  // Where the proposal log stands: its first entry kept and its last.
  absl::StatusOr<LogStream::Bounds> ProposalBounds() const {
    return proposals_.StoredBounds();
  }

  // Announces (or renews) `server` as alive.
  absl::Status Heartbeat(absl::string_view server);
  // The servers whose announcement has not expired, sorted.
  absl::StatusOr<std::vector<std::string>> LiveServers() const;

  // A server's key in the servers bucket: keys may not hold ':', which
  // becomes '=' (host:port never holds '=').
  static std::string ServerKey(absl::string_view server);

 private:
  PlacementStore(LogStream proposals, SnapshotStore snapshots, kvStore* servers,
                 std::uint64_t compact_every)
      : proposals_(std::move(proposals)),
        snapshots_(std::move(snapshots)),
        servers_(servers),
        compact_every_(compact_every) {}
  // Takes the register from the newest snapshot (none: empty); CatchUp
  // reads the proposals after it.
  absl::Status LoadSnapshot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // OK if the proposal log now starts after `missing` (compacted past
  // it); UNAVAILABLE if it was not found for another reason.
  absl::Status CompactedPast(std::uint64_t missing) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The same when proposal `missing`, the next to apply, was compacted
  // away: DATA_LOSS if the newest snapshot does not hold it either.
  absl::Status ReloadSnapshot(std::uint64_t missing)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Applies the proposals up to sequence `target` (the last stored, if 0):
  // a few read one by one from the stream's leader, more through a
  // consumer (kept for the next read).
  absl::Status CatchUp(std::uint64_t target)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void Apply(const LogEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  LogStream proposals_;
  SnapshotStore snapshots_;  // stored under compact_mutex_, read under mutex_
  Mutex compact_mutex_ ABSL_ACQUIRED_BEFORE(mutex_);
  Mutex mutex_;
  std::optional<LogStream::Cursor> cursor_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t applied_ ABSL_GUARDED_BY(mutex_) = 0;
  // The last proposal the newest snapshot this store loaded or stored
  // includes.
  std::uint64_t snapshot_through_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::flat_hash_map<std::string, Placement> placements_
      ABSL_GUARDED_BY(mutex_);
  kvStore* const servers_;
  const std::uint64_t compact_every_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_PLACEMENT_STORE_H_
