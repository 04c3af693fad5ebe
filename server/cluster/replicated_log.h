#ifndef STREAMREG_SERVER_CLUSTER_REPLICATED_LOG_H_
#define STREAMREG_SERVER_CLUSTER_REPLICATED_LOG_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/cluster/catching_up.h"
#include "server/cluster/log_follower.h"
#include "server/cluster/log_stream.h"
#include "server/hosting/write_log.h"

namespace streamreg {

// A hosted model's write log in cluster mode (the journal's counterpart,
// server/hosting/journal_log.h): each write appended to the model's
// JetStream log (LogStream) as the client sent it and answered once this
// server's follower (LogFollower) has applied it; while the follower
// replays the log's tail after the model was hosted here, writes and the
// reads it cannot answer are sent to the model's other servers.
class ReplicatedLog : public WriteLog {
 public:
  struct Options {
    // This server's address and a start time: unique among the writers of
    // any log (the message ids of batches without sample ids).
    std::string writer;
    // How long an append is retried while the cluster cannot take it.
    absl::Duration append_timeout = absl::Seconds(5);
    // GroupLinger (ClusterOptions::learn_linger).
    absl::Duration linger = absl::ZeroDuration();
  };
  // What the follower has done, as a report shows it (all zero without a
  // follower).
  struct FollowerProgress {
    std::uint64_t applied = 0;
    bool catching_up = false;
    bool fell_behind = false;
  };

  // The log of the model named `model_name`.
  ReplicatedLog(LogStream log, std::string model_name, Options options);

  const std::string& name() const { return name_; }
  const LogStream& log() const { return log_; }
  LogStream& log() { return log_; }

  // The follower that applies the log to the model; writes are refused
  // (UNAVAILABLE) until there is one.
  void Follow(std::shared_ptr<LogFollower> follower)
      ABSL_LOCKS_EXCLUDED(mutex_);
  FollowerProgress progress() const ABSL_LOCKS_EXCLUDED(mutex_);
  // The follower stopped: the log it needs next was compacted away.
  bool fell_behind() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Stops applying the log, keeping the follower (which then answers
  // every write UNAVAILABLE): the server is going away.
  void StopFollowing() ABSL_LOCKS_EXCLUDED(mutex_);
  // Stops applying the log and lets the follower go, answering the writes
  // waiting for it now (the model left this server).
  void Stop() ABSL_LOCKS_EXCLUDED(mutex_);
  // The model's other servers, as the last reconcile found them: where a
  // write goes while this replica catches up on its log.
  void SetOtherServers(std::vector<std::string> servers)
      ABSL_LOCKS_EXCLUDED(mutex_);

  // WriteLog.
  absl::StatusOr<LearnOutcome> AppendSamples(
      const ValidatedSamples& batch, const WriteOptions& options) override;
  // A refit runs on every replica, from the log: `progress` is not told.
  absl::Status AppendRefit(
      const std::function<void(std::size_t, std::size_t)>& progress,
      absl::Time deadline) override;
  // Appended under a message id of the work's key: a second record of it
  // (another server's, or a retry) within JetStream's duplicate window is
  // the first, and any later one changes nothing where it is applied.
  absl::Status AppendTakeOver(const TakeOverKey& key) override;
  absl::Duration GroupLinger() const override { return options_.linger; }
  // Asked by a read of a model with no sample learned here.
  absl::Status ReadableHere() const override;
  absl::Duration UnappliedReadWait() const override { return absl::Seconds(1); }
  absl::Status ReadElsewhere(absl::string_view reason) const override;

 private:
  std::string UniqueId();
  std::shared_ptr<LogFollower> Follower() const ABSL_LOCKS_EXCLUDED(mutex_);
  std::vector<std::string> OtherServers() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Where a call goes while this replica replays its log's tail
  // (server/cluster/catching_up.h); OK once it does not.
  absl::Status WhileCatchingUp(const LogFollower& follower,
                               CallKind kind) const;
  // Appends the entry (retrying for at most the append timeout) and waits
  // for this replica to apply it until the client's `deadline`; *resent if
  // the log held an entry of that id already (whose outcome it returns).
  absl::StatusOr<LearnOutcome> AppendAndWait(std::string message_id,
                                             std::string payload,
                                             absl::Time deadline, bool* resent);

  LogStream log_;
  const std::string name_;
  const Options options_;
  std::atomic<std::uint64_t> next_unique_{1};
  mutable Mutex mutex_;
  std::shared_ptr<LogFollower> follower_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> other_servers_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_REPLICATED_LOG_H_
