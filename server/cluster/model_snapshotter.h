#ifndef STREAMREG_SERVER_CLUSTER_MODEL_SNAPSHOTTER_H_
#define STREAMREG_SERVER_CLUSTER_MODEL_SNAPSHOTTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/cluster/hosted_replica.h"
#include "server/cluster/snapshot_store.h"
#include "server/hosting/hosted_model.h"

namespace streamreg {

// Snapshots the models this server is the first of the placement of, into
// their snapshot streams (SnapshotStore), and compacts their logs behind
// the snapshots: a whole snapshot when SnapshotSchedule says (samples or
// time since the last), an increment built on the last one put every
// `increment_samples` between. A whole one is put a slice at a time, and
// between its slices the increments due go on, those of the model whose
// whole one is being put building on the chain before it (seconds at 10^6
// samples would otherwise pass without one). Run on one thread (the
// cluster node's snapshotting thread); a failure is logged, counted, and
// the model's next snapshot tried a while later.
class ModelSnapshotter {
 public:
  struct Options {
    // SnapshotSchedule's: a whole snapshot once this many samples were
    // applied since the last, or `interval` after it if any were.
    std::uint64_t every_samples = 100'000;
    absl::Duration interval = absl::Minutes(10);
    // An increment once this many samples were applied since the last
    // snapshot of either kind; 0: whole snapshots only.
    std::uint64_t increment_samples = 10'000;
    // How long a whole snapshot's put publishes chunks before the
    // increments due are put.
    absl::Duration whole_put_slice = absl::Milliseconds(100);
    // How long SnapshotBeforeLeaving waits for a model's background work.
    absl::Duration leave_wait = absl::Seconds(10);
  };
  // Counted where the events are logged.
  struct Counters {
    std::atomic<std::uint64_t> snapshots{0};  // whole ones
    std::atomic<std::uint64_t> increments{0};
    std::atomic<std::uint64_t> failures{0};
  };

  explicit ModelSnapshotter(Options options) : options_(options) {}

  // One round over the replicas this server snapshots: each one's snapshot
  // if it is due, whole ones put to the end (or given up at `stop`: the
  // chain before them is still the newest), and their streams given back
  // the copies they were made without (a NATS node offline then).
  void SnapshotDue(const std::vector<std::shared_ptr<HostedReplica>>& replicas,
                   std::stop_token stop);
  // The snapshots a stopping server takes of `replicas` (which stop
  // applying their logs first): each one's samples since its last
  // snapshot, as an increment where one can be built, once its background
  // work is done (waiting up to leave_wait). Stops at the first put the
  // cluster could not take.
  void SnapshotBeforeLeaving(
      const std::vector<std::shared_ptr<HostedReplica>>& replicas);

  const Counters& counters() const { return counters_; }

 private:
  // A whole snapshot being put a slice at a time.
  struct WholePut;
  // What StartSnapshot did: its status, and the whole put it began, if any.
  struct SnapshotStart;

  // `replica`'s snapshot if one is due: an increment put, or a whole one
  // begun and added to `whole_puts` (also where the increment is refused,
  // unless the model's whole one is already being put).
  void SnapshotIfDue(const std::shared_ptr<HostedReplica>& replica,
                     std::vector<WholePut>& whole_puts);
  // The model's log and snapshots given back the copies they were made
  // without, tried every kReplicasCheckPause until they have them all.
  void RestoreReplicasIfDue(HostedReplica& replica);
  // Whether the model's increment is due, its whole snapshot not being.
  bool IncrementDue(const HostedReplica& replica,
                    const HostedModel& model) const;
  // Captures the model, puts the snapshot (an increment built on the last
  // one put, if asked and the model can, else whole) and compacts the log,
  // all before it returns.
  absl::Status Snapshot(const std::shared_ptr<HostedReplica>& replica,
                        bool increment);
  // The first step of a snapshot: an increment put if `increment` and the
  // model builds on one; else, or when the increment is refused
  // (FAILED_PRECONDITION: another server's snapshot came since, or the
  // model no longer builds on it) and `whole_if_refused`, a whole one
  // captured and its put begun.
  SnapshotStart StartSnapshot(const std::shared_ptr<HostedReplica>& replica,
                              HostedModel& model, bool increment,
                              bool whole_if_refused);
  // An increment built on the last snapshot put, put; FAILED_PRECONDITION
  // when the model or the store refuses to build on it (a whole one is then
  // due), before any byte is written.
  absl::Status PutIncrement(HostedReplica& replica, HostedModel& model);
  // A whole snapshot captured and its put begun.
  absl::StatusOr<WholePut> BeginWholePut(
      std::shared_ptr<HostedReplica> replica);
  // Puts the next slice of `put`'s chunks (`slice` long), then its head
  // once they are all stored; whether the put is over (stored or failed).
  bool PutWholeSlice(WholePut& put, absl::Duration slice);
  // What a stored snapshot changes: the next increment's base, the model's
  // count since a whole one, the log compacted through `freed`; logged.
  absl::Status Stored(HostedReplica& replica, HostedModel& model,
                      const HostedModel::LogSnapshot& snapshot,
                      std::uint64_t freed, absl::Duration capture,
                      absl::Time start);
  // Logs and counts a failed snapshot, and sets when the model's next is
  // tried.
  void Failed(HostedReplica& replica, const std::string& model,
              const absl::Status& status);

  const Options options_;
  Counters counters_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_MODEL_SNAPSHOTTER_H_
