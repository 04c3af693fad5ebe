#ifndef STREAMREG_SERVER_CLUSTER_STREAM_JANITOR_H_
#define STREAMREG_SERVER_CLUSTER_STREAM_JANITOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/placement_store.h"

namespace streamreg {

// Removes the model streams nobody will read again, off the paths of the
// calls that leave them: the logs (and their snapshots) a create gave up
// or found left by an earlier model of the name (Abandon, removed by
// RemoveAbandoned until they are gone), and, while this server is the
// first live one, every stream no placement reads any more, whoever left
// it (SweepOrphansIfDue, every `orphan_sweep_interval`). Nothing
// acknowledged is in any of them. Abandon is thread-safe; the rest runs on
// one thread (the cluster node's snapshotting thread), where a removal that
// is never answered (a stream that never elected a leader) holds up no
// call.
class StreamJanitor {
 public:
  // `client` and `placements` must outlive it.
  StreamJanitor(JetStreamClient& client, PlacementStore& placements,
                absl::Duration orphan_sweep_interval)
      : client_(client),
        placements_(placements),
        orphan_sweep_interval_(orphan_sweep_interval) {}

  // Deletes the log and the snapshots of model `name` of log generation
  // `log`, if any, waiting up to `wait` (0: the request timeout) for each
  // answer.
  static absl::Status RemoveModelStreams(
      JetStreamClient& client, absl::string_view name, std::uint64_t log,
      absl::Duration wait = absl::ZeroDuration());

  // The log of generation `log` of model `name` (and its snapshots), left
  // by a create, to be removed.
  void Abandon(const std::string& name, std::uint64_t log)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Tries to remove each abandoned log due a try: kept, and tried again
  // kAbandonedRetryPause later, if the cluster did not answer in time.
  void RemoveAbandoned() ABSL_LOCKS_EXCLUDED(mutex_);
  // Removes the streams IsOrphan finds, if `first_live` (this server is the
  // first of the live ones) and the last sweep was orphan_sweep_interval
  // ago.
  void SweepOrphansIfDue(bool first_live);

  std::uint64_t orphans_removed() const { return orphans_removed_.load(); }
  std::size_t abandoned() const ABSL_LOCKS_EXCLUDED(mutex_);

  // How long a removal waits for its answer (the removal of a stream that
  // never elected a leader is never answered), and how long after a failed
  // try at an abandoned log the next is made (which finds it gone).
  static constexpr absl::Duration kRemovalWait = absl::Milliseconds(250);
  static constexpr absl::Duration kAbandonedRetryPause = absl::Seconds(2);

 private:
  JetStreamClient& client_;
  PlacementStore& placements_;
  const absl::Duration orphan_sweep_interval_;
  absl::Time next_orphan_sweep_ = absl::InfinitePast();  // the sweeper's
  std::atomic<std::uint64_t> orphans_removed_{0};

  mutable Mutex mutex_;
  // Each abandoned log, by model and generation: when to try removing it.
  std::map<std::pair<std::string, std::uint64_t>, absl::Time> abandoned_
      ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_STREAM_JANITOR_H_
