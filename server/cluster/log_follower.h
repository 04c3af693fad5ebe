#ifndef STREAMREG_SERVER_CLUSTER_LOG_FOLLOWER_H_
#define STREAMREG_SERVER_CLUSTER_LOG_FOLLOWER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/replica_applier.h"
#include "server/hosting/learn_outcome.h"

namespace streamreg {

// Keeps a hosted model a replica of its replicated log (docs/cluster.md,
// "Deterministic replicas"): on a thread of its own, reads the log's
// entries in sequence order from where the model stands (through a
// consumer it asks the cluster for there, again after a failure with a
// backoff, so that a consumer placed on a NATS node that never answers
// holds up neither the hosting nor the writes this server applies itself),
// and applies each one through its ReplicaApplier (what an entry does to
// the model, the same way on every replica). The model itself never
// writes: every server serving it, the one that appended included,
// changes it only through its follower, entry after entry in sequence
// order, so that the replicas stay identical. What an entry could not
// apply (a batch the model refuses) is refused alike by every replica, and
// recorded as that entry's outcome.
//
// The server that appended an entry answers its client once its replica
// has applied it. When the entry is the next one due, the appending server
// applies it at once from the bytes it appended — the log's bytes at the
// sequence its publish ack named — instead of waiting for the consumer to
// deliver them (ApplyAppended); the consumer's copy is then skipped. Either
// way each entry is applied once, in order. An entry known to be stored (waited
// for) that does not arrive within kStallTimeout — the consumer's server
// went away and its heartbeats have not been missed yet — or a cursor
// that broke (StreamCursor: a delivery lost, heartbeats missed) makes the
// follower read on from a new consumer. When no entry came for kIdleCheck
// while the log holds entries the follower has not applied (however many
// consumers it made meanwhile), it reads them one by one from the stream's
// leader (at most kMostReadStored), which answers for what the log holds
// wherever a consumer was placed, and then reads on from a new consumer;
// an entry delivered ahead of the one due has the entries between read the
// same way. A follower so far behind that the entries it needs next were
// compacted away (they are in a snapshot of the model) stops: fell_behind()
// says so, and the server hosts the model afresh from that snapshot.
class LogFollower {
 public:
  // Starts following `log` from entry `from` (1, or the one after what the
  // model was made from: its create entry, or a snapshot of it); `stored`
  // is the last entry the log held then (catching_up() until it is
  // applied). `log`'s client must outlive it.
  static std::unique_ptr<LogFollower> Start(const LogStream& log,
                                            ReplicaApplier applier,
                                            std::uint64_t from = 1,
                                            std::uint64_t stored = 0);
  // Stops following (as Stop does) and waits for the thread.
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Stops following (an entry being applied finishes first): the model
  // left this server. Writes still waiting are answered UNAVAILABLE.
  void Stop();

  // Waits until entry `sequence` is applied — at most until `deadline`
  // (the client's) — and returns what applying it did: a samples entry's
  // LearnOutcome (or the error the model refused it with), an empty
  // outcome for the others. DEADLINE_EXCEEDED if it was not applied in
  // time; UNAVAILABLE if the follower stopped or fell behind first;
  // NOT_FOUND if it was applied so long ago that its outcome is no longer
  // kept (kKeptOutcomes).
  absl::StatusOr<LearnOutcome> WaitApplied(std::uint64_t sequence,
                                           absl::Time deadline) const;
  // WaitApplied for an entry this server has just appended, whose publish
  // ack named its sequence (not a duplicate: `entry` holds the bytes
  // stored there): applied here and now if it is the next one due, which
  // spares the wait for the consumer to deliver it.
  absl::StatusOr<LearnOutcome> ApplyAppended(const LogEntry& entry,
                                             absl::Time deadline);
  // The last entry applied (0: none).
  std::uint64_t applied() const;
  // Whether the entries the log held when the follower started are not
  // all applied yet: a replica just hosted, replaying its log's tail. A
  // write here would wait for all of them.
  bool catching_up() const;
  // Whether the entries after applied() are gone from the log (compacted
  // into a snapshot): the follower has stopped, and WaitApplied answers
  // UNAVAILABLE.
  bool fell_behind() const;

  // The outcomes of the most recent entries applied that are kept for
  // WaitApplied.
  static constexpr std::size_t kKeptOutcomes = 4096;
  static constexpr absl::Duration kStallTimeout = absl::Milliseconds(500);
  // How long a follower goes without an entry before it asks the log how
  // far it reaches (one stream-info request), and again each time after:
  // entries there that no cursor delivered are read from the stream's
  // leader, and it reads on from a new cursor.
  static constexpr absl::Duration kIdleCheck = absl::Seconds(5);
  // The most entries read from the stream's leader at one idle check (a
  // request each); a follower further behind reads the rest from its new
  // cursor.
  static constexpr std::uint64_t kMostReadStored = 1024;

 private:
  LogFollower(const LogStream& log, ReplicaApplier applier, std::uint64_t from,
              std::uint64_t stored);
  // Whether an entry waited for has not come for kStallTimeout.
  bool Stalled(absl::Time last_progress) const;
  // The last entry the log holds when it holds entries past applied()
  // although none came since `last_entry`, kIdleCheck ago (asked at most
  // once per kIdleCheck, `*last_check` the last time); 0 otherwise. A
  // cursor silent with its heartbeats going on is not noticed otherwise
  // while no write waits on this replica, nor while each consumer made
  // for a stalled write is as silent.
  std::uint64_t SilentWhileBehind(absl::Time last_entry,
                                  absl::Time* last_check);
  // Applies the entries after applied() up to `last` (at most
  // kMostReadStored), read one at a time from the stream's leader; stops
  // at the first that cannot be read (logged).
  void ApplyStored(std::uint64_t last, std::stop_token stop);
  void Run(std::stop_token stop);
  // Reads on from a new cursor at `from`, keeping the old one if none
  // could be made (and returning why).
  absl::Status Refollow(std::uint64_t from);
  // Makes a cursor at the entry due (the first one, or one to read on from
  // when the last broke or stalled), trying again after each failure, which
  // it logs, with pauses from kPoll to kLongestOpenPause, until one is made
  // or `stop`: whether there is one.
  bool OpenCursor(std::stop_token stop);
  // Applies `entry` if it is the next one due (and the follower has not
  // stopped), and records its outcome for WaitApplied.
  void ApplyIfNext(const LogEntry& entry) ABSL_LOCKS_EXCLUDED(apply_mutex_);
  // Whether the log no longer holds entry `sequence` (compacted away).
  bool CompactedPast(std::uint64_t sequence) const;

  const LogStream log_;
  // The follower thread's (made by it; replaced when stalled).
  std::optional<LogStream::Cursor> cursor_;
  // Applies under apply_mutex_: one entry at a time, in order.
  ReplicaApplier applier_;
  const std::uint64_t stored_at_start_;
  const absl::Time started_ = absl::Now();

  // Held while an entry is applied: by the follower's thread, or by a
  // writer applying its own entry (ApplyAppended). Taken before mutex_.
  Mutex apply_mutex_ ABSL_ACQUIRED_BEFORE(mutex_);
  mutable Mutex mutex_;
  mutable CondVar applied_changed_;
  std::uint64_t applied_ ABSL_GUARDED_BY(mutex_);
  // The highest entry a WaitApplied waits for: stored in the log.
  mutable std::uint64_t awaited_ ABSL_GUARDED_BY(mutex_) = 0;
  bool fell_behind_ ABSL_GUARDED_BY(mutex_) = false;
  bool stopped_ ABSL_GUARDED_BY(mutex_) = false;
  // (sequence, outcome) of the latest entries applied, oldest first.
  std::deque<std::pair<std::uint64_t, absl::StatusOr<LearnOutcome>>> outcomes_
      ABSL_GUARDED_BY(mutex_);

  std::jthread thread_;  // last: stopped and joined first
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_LOG_FOLLOWER_H_
