#ifndef STREAMREG_SERVER_HOSTING_WRITE_LOG_H_
#define STREAMREG_SERVER_HOSTING_WRITE_LOG_H_

#include <cstddef>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/model/take_over_key.h"
#include "core/model/validated_samples.h"
#include "server/hosting/learn_outcome.h"

namespace streamreg {

// Where a hosted model's writes go: the model's log, which records each
// write and has it applied to the model (ModelWriter) in the log's order.
// Every Learn and Refit of a HostedModel takes this one way; two logs
// implement it (docs/architecture.md):
//  - JournalLog, a single server's: the write is sequenced, its fresh
//    samples appended to the model's journal on disk (fsynced under
//    --sync=always, or none: a model in memory only) and applied, all on
//    the caller's thread;
//  - in cluster mode, ReplicatedLog (server/cluster/replicated_log.h): the
//    write is appended to JetStream as the client sent it, and every
//    replica's follower applies it, sequencing it then, the same way on
//    each; the write returns once this server's replica has applied it,
//    waiting for that at most until `options.deadline` (the client's).
// Either way a write returns with what applying it did; the batch's
// WriteTicket (WriteOptions::ticket) is its caller's, and settles what the
// write did not take over when the caller drops it.
class WriteLog {
 public:
  virtual ~WriteLog() = default;
  // The batch (validated where it arrived) recorded and applied; what
  // learning it did (the model may still refuse it, as every replica
  // does).
  virtual absl::StatusOr<LearnOutcome> AppendSamples(
      const ValidatedSamples& batch, const WriteOptions& options) = 0;
  // A batch refit recorded and run in order with the samples; `progress`
  // hears of it where the refit runs on the caller's server.
  virtual absl::Status AppendRefit(
      const std::function<void(std::size_t, std::size_t)>& progress,
      absl::Time deadline) = 0;
  // A take-over record (the model's background work `key` names is done
  // here, TakeOverRule::kLogged) recorded and applied in order with the
  // samples: the work takes over at the first sample after it, on every
  // replica and in every replay of the log.
  virtual absl::Status AppendTakeOver(const TakeOverKey& key) = 0;
  // How long a Learn stream's sample waits for others to join its group
  // (LearnBatcher) before the group is written: none for a single
  // server's journal, whose write costs one fsync of the disk; in cluster
  // mode a while (ClusterOptions::learn_linger), as each append costs
  // every NATS node of the log and every replica's follower CPU time, and
  // a 1 kHz arm would otherwise be appended one or two samples at a time.
  // Answers do not wait for it (LearnReactor answers first); durability
  // reports and learning do. (A single server's journal appends at once
  // and may defer the fsync instead: WriteOptions::sync_later.)
  virtual absl::Duration GroupLinger() const { return absl::ZeroDuration(); }
  // Whether a read the model cannot answer yet (no sample learned) should
  // wait here: OK; or go elsewhere — in cluster mode UNAVAILABLE naming
  // the model's other servers while this replica, just hosted, replays its
  // log's tail. A single server's log always answers OK.
  virtual absl::Status ReadableHere() const { return absl::OkStatus(); }
  // How long a read waits here for samples it asked for
  // (PredictRequest.min_learned) that this server has not applied yet: a
  // single server's log not at all (it applied every sample it
  // acknowledged, so they were never written); a cluster replica a while,
  // for entries on their way.
  virtual absl::Duration UnappliedReadWait() const {
    return absl::ZeroDuration();
  }
  // Where a read goes that this server could not answer as asked
  // (`reason`): in cluster mode UNAVAILABLE naming the model's other
  // servers; OK: nowhere else (a single server's log, a model's only
  // replica).
  virtual absl::Status ReadElsewhere(absl::string_view /*reason*/) const {
    return absl::OkStatus();
  }
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_WRITE_LOG_H_
