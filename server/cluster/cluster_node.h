#ifndef STREAMREG_SERVER_CLUSTER_CLUSTER_NODE_H_
#define STREAMREG_SERVER_CLUSTER_CLUSTER_NODE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/cluster/fit_exchange.h"
#include "server/cluster/hosted_replica.h"
#include "server/cluster/hosted_replicas.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/membership.h"
#include "server/cluster/model_creation.h"
#include "server/cluster/model_snapshotter.h"
#include "server/cluster/placement_store.h"
#include "server/cluster/rebalancer.h"
#include "server/cluster/snapshot_store.h"
#include "server/cluster/stream_janitor.h"
#include "server/hosting/model_registry.h"
#include "server/storage/journal_records.h"

namespace streamreg {

// streamreg-server's cluster flags (docs/cluster.md).
struct ClusterOptions {
  // nats://host:port of one or more nodes of the NATS JetStream cluster.
  std::vector<std::string> nats;
  // host:port at which clients reach this server: what the placements
  // name it by, and what it answers clients that ask it for a model it
  // does not serve.
  std::string advertise;
  // Servers serving each model.
  int replicas = 3;
  // Copies JetStream keeps of each model's log, of the placements and of
  // the live servers (at most the NATS cluster's size). A JetStream stream
  // takes writes while a majority of its copies is up: 3 ride out one NATS
  // node down, 2 none.
  int log_replicas = 3;
  // A server that has not renewed its liveness for this long is taken
  // for gone, and its models are placed elsewhere.
  absl::Duration server_ttl = absl::Seconds(5);
  // How often the server renews its liveness (server_ttl / 3 at most is
  // sensible) and brings what it hosts in line with the placements. A
  // model whose hosting failed is tried again after a pause that starts
  // at this and doubles with each failure in a row, up to
  // kLongestHostingPause (a random half to all of it).
  absl::Duration reconcile_interval = absl::Milliseconds(250);
  // How long a write is retried until the log's quorum has stored it, and
  // a request to the NATS cluster for its answer. (The wait for this
  // server's replica to apply it is bounded by the client's deadline.)
  absl::Duration write_timeout = absl::Seconds(10);
  absl::Duration request_timeout = absl::Seconds(2);
  // How long a Learn stream's sample waits for others to join its append
  // (WriteLog::GroupLinger): a 1 kHz arm's samples go to the log a few
  // at a time instead of one or two, for a fraction of the NATS nodes' and
  // the followers' CPU time (bench/notes/results-history.md). Its answers do
  // not wait; its durability reports and its learning wait this much longer.
  absl::Duration learn_linger = absl::Milliseconds(2);
  // The first server of a model's placement snapshots it into JetStream
  // once this many samples were applied since its last snapshot, or
  // snapshot_interval after it if any were (SnapshotSchedule: waiting a
  // while for background work to finish); the log before the older of
  // the two snapshots kept is then compacted away. A server taking the
  // model over reads the newest snapshot and replays only the log after it.
  std::uint64_t snapshot_every_samples = 100'000;
  absl::Duration snapshot_interval = absl::Minutes(10);
  // Between those, an increment (the model's state and the samples since
  // the snapshot before: SnapshotStore::PutIncrement) once this many
  // samples were applied since the last snapshot of either kind, so that
  // a server taking the model over after a crash replays at most about
  // this many; 0: whole snapshots only. Increments build on the last
  // whole snapshot this server put, until an index of the model moves to
  // new coordinates (a whole one is then taken in the increment's place).
  std::uint64_t snapshot_increment_samples = 10'000;
  // A snapshot's chunks (below NATS's largest message), and how long a
  // whole snapshot's put publishes them before the increments due are put
  // (a whole one of 10^6 samples, 270 MB, takes 3 to 4 s to put: the
  // model's increments go on meanwhile, building on the chain before it).
  std::size_t snapshot_chunk_bytes = 512 << 10;
  absl::Duration whole_put_slice = absl::Milliseconds(100);
  // A server that stops (its node destroyed) first snapshots every model
  // it is the first server of and that learned samples since its last
  // snapshot, as a single server does at its stop: whoever hosts the model
  // next replays nothing of what this server applied. Waits up to
  // leave_snapshot_wait for a model's background work to finish first;
  // a model still busy then is left to the snapshot it has (restoring one
  // taken mid-refresh would recompute the refresh).
  bool snapshot_on_leave = true;
  absl::Duration leave_snapshot_wait = absl::Seconds(10);
  // How often the first live server lists the NATS cluster's streams and
  // removes the model logs and snapshots no placement will read again
  // (IsOrphan): those a creator or a deletion could not remove before its
  // server stopped.
  absl::Duration orphan_sweep_interval = absl::Minutes(1);
};

// A streamreg server as a member of a cluster (docs/cluster.md), and what
// server/rpc sees of it: it hosts in its ModelRegistry the models whose
// placement names it — each a HostedReplica, which a LogFollower keeps in
// step with the model's log and whose writes go through that log
// (ReplicatedLog) — reconciling what it hosts with the placements, and
// answers for a model it does not host with the servers that do. Its
// other roles are its parts: its heartbeats and the live servers
// (Membership, on a thread of its own), creates and deletes
// (ModelCreation), the moves the first live server proposes (Rebalancer),
// and, on the snapshotting thread, the snapshots of the models it is first
// in the placement of (ModelSnapshotter) and the streams nobody reads
// removed (StreamJanitor). Thread-safe.
class ClusterNode {
 public:
  // Connects, announces this server and starts hosting what is placed on
  // it. `registry` (without storage) must outlive the node.
  static absl::StatusOr<std::unique_ptr<ClusterNode>> Start(
      ClusterOptions options, ModelRegistry* registry);
  // Stops announcing and following; the hosted models leave the registry.
  ~ClusterNode();
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Creates a model in the cluster: places it on the live servers
  // rendezvous hashing picks, and starts its log with `identity`.
  // ALREADY_EXISTS if the model exists; UNAVAILABLE if the cluster (or
  // every server) is unreachable. Returns once this server hosts the model
  // if it is one of them.
  absl::Status Create(const ModelIdentity& identity);
  // Deletes a model from the cluster (its placement, then its log and
  // snapshots).
  // NOT_FOUND if there is none.
  absl::Status Delete(absl::string_view name);
  // The status for a model this server does not host: UNAVAILABLE naming
  // the servers that do (ServedByError: clients ask one of those), or
  // NOT_FOUND.
  absl::Status Elsewhere(absl::string_view name);
  // Stops applying every model's log (the server is going away): writes
  // waiting for their apply are answered UNAVAILABLE at once.
  void StopFollowing();
  // Every model of the cluster, by name, with the servers that serve it
  // (the placements now; UNAVAILABLE if the cluster is unreachable).
  absl::StatusOr<std::map<std::string, std::vector<std::string>>> Placements();

  // Brings the hosted models in line with the placements now (the node
  // also does it every reconcile_interval), and re-places models if this
  // server is the first live one (which also compacts the placements'
  // proposal log when due).
  absl::Status Reconcile();

  const std::string& address() const { return options_.advertise; }
  // The models this server hosts now, in name order.
  std::vector<std::string> hosted() const;

  // What /metrics shows of the node (server/rpc/cluster_metrics.h). Read
  // without waiting for a reconcile round (which may wait seconds on the
  // cluster).
  struct Report {
    // Live servers, as this server last steadied the list (0 before).
    std::size_t live_servers = 0;
    // Each model hosted here, by name.
    using Hosted = HostedReplica::Report;
    std::vector<Hosted> hosted = {};
    // Models placed on this server whose hosting failed and is being
    // retried, as the last reconcile round left them.
    std::size_t not_hosted = 0;
    // Since the server started.
    std::uint64_t heartbeat_failures = 0;
    std::uint64_t reconcile_failures = 0;
    std::uint64_t host_failures = 0;
    std::uint64_t snapshots = 0;  // whole ones
    std::uint64_t snapshot_increments = 0;
    std::uint64_t snapshot_failures = 0;
    std::uint64_t models_moved = 0;  // re-placed by this server
    // New logs given up by this server's creates (no leader in time).
    std::uint64_t logs_given_up = 0;
    // Streams no placement reads any more, removed by this server's sweeps.
    std::uint64_t orphan_streams_removed = 0;
    // MLKR fit results shared between replicas (FitExchange::Counters).
    std::uint64_t fit_results_published = 0;
    std::uint64_t fit_results_received = 0;
    std::uint64_t fit_results_refused = 0;
  };
  Report report() const;

 private:
  ClusterNode(ClusterOptions options, ModelRegistry* registry)
      : options_(std::move(options)),
        registry_(registry),
        snapshotter_({.every_samples = options_.snapshot_every_samples,
                      .interval = options_.snapshot_interval,
                      .increment_samples = options_.snapshot_increment_samples,
                      .whole_put_slice = options_.whole_put_slice,
                      .leave_wait = options_.leave_snapshot_wait}) {}
  // The reconciling thread's loop.
  void Run(std::stop_token stop);
  // The liveness thread's loop: apart from reconciling, whose calls to the
  // cluster may wait seconds, so that a slow round does not let this
  // server's liveness expire.
  void Announce(std::stop_token stop);
  // A model placed here, by name and the generation of its log.
  struct ToHost {
    std::string name;
    std::uint64_t log = 0;
  };
  // Starts hosting each of `models` (placed here, created, not hosted, and
  // due a try), up to kConcurrentHostings at a time on threads of their
  // own: a model whose hosting waits on the cluster (a new stream electing
  // its leader) or restores a large snapshot does not hold up the others.
  // A failure is tried again after a backoff (HostingFailed).
  void HostEach(const std::vector<ToHost>& models)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mutex_);
  // The replica of a model, made from its newest snapshot and the log
  // after it (from its log's create entry while it has no snapshot) and
  // following its log, but not hosted yet. Takes no lock of the node's
  // (HostEach runs several at once).
  struct Started {
    std::shared_ptr<HostedModel> model;  // holds the replica (its WriteLog)
    std::shared_ptr<HostedReplica> replica;
    std::uint64_t from = 1;  // the first log entry it applies
  };
  absl::StatusOr<Started> StartReplica(const ToHost& placed);
  // Hosts a started replica: in the registry, and among replicas_.
  absl::Status Adopt(const std::string& name, Started started)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mutex_);
  // Logs and counts a failed hosting of `name`, and sets when it is tried
  // next.
  void HostingFailed(const std::string& name, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mutex_);
  // How a model's log is made: options_.log_replicas copies, or a
  // majority of them while NATS nodes are offline.
  LogStream::Options LogOptions() const;
  // Stops hosting `name`: deleted from the cluster, or placed elsewhere.
  void Release(const std::string& name, bool deleted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mutex_);

  // Counted where the events are logged.
  struct Counters {
    std::atomic<std::uint64_t> reconcile_failures{0};
    std::atomic<std::uint64_t> host_failures{0};
  };
  // Logs a failed reconcile round and counts it.
  void ReconcileFailed(const absl::Status& status);

  const ClusterOptions options_;
  ModelRegistry* const registry_;
  std::unique_ptr<JetStreamClient> client_;
  std::unique_ptr<PlacementStore> placements_;
  // The hosted models' MLKR fits, shared with their other replicas.
  std::unique_ptr<FitExchange> fits_;
  // This server's heartbeats, and the live servers.
  std::unique_ptr<Membership> membership_;
  // The moves the first live server proposes.
  std::unique_ptr<Rebalancer> rebalancer_;
  // The streams left by creates, and orphans (the snapshotting thread's).
  std::unique_ptr<StreamJanitor> janitor_;
  // Creates and deletes, as far as placements and logs go.
  std::unique_ptr<ModelCreation> creation_;

  // Serializes reconciling (the periodic one and Create's, Delete's).
  mutable Mutex reconcile_mutex_;
  // Added and taken out while reconciling.
  HostedReplicas replicas_;
  // The models placed here whose hosting failed: failures in a row, and
  // when the next try is due.
  struct HostingRetry {
    int failures = 0;
    absl::Time next_try = absl::InfinitePast();
  };
  std::map<std::string, HostingRetry> hosting_retries_
      ABSL_GUARDED_BY(reconcile_mutex_);
  absl::BitGen random_ ABSL_GUARDED_BY(reconcile_mutex_);
  // hosting_retries_.size(), for report().
  std::atomic<std::size_t> not_hosted_{0};

  Counters counters_;
  // This server was first of the live ones at the last reconcile round.
  std::atomic<bool> first_live_{false};

  // The snapshotting thread's (snapshot_thread_).
  ModelSnapshotter snapshotter_;

  std::jthread announcer_;
  std::jthread snapshot_thread_;
  std::jthread thread_;  // last: stopped first
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_CLUSTER_NODE_H_
