#ifndef STREAMREG_SERVER_HOSTING_LEARN_OUTCOME_H_
#define STREAMREG_SERVER_HOSTING_LEARN_OUTCOME_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "core/model/take_over_key.h"

namespace streamreg {

class WriteTicket;

// How a batch is written (HostedModel::Learn).
struct WriteOptions {
  // How long a cluster model's write may wait for this replica's apply
  // (the client's deadline).
  absl::Time deadline = absl::InfiniteFuture();
  // What the batch holds on its way (WriteTicket; null: nothing, as for
  // recovery and tools): the write that queues the samples for learning
  // takes its announcement over, and the rest is settled when its owner
  // drops it.
  WriteTicket* ticket = nullptr;
  // Learn streams' samples (HostedModel::kMaxUnlearnedStreamed), not an
  // Ingest batch.
  bool streamed = false;
  // How the model's background work takes over while it learns the batch
  // (TakeOverRule::kLogged): set by HostedModel::Learn — where recorded
  // for Learn streams' samples, at fixed counts for Ingest batches — and
  // written in the log with the batch.
  BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded;
  // The batch's durability reports may wait (no answer waits for them): a
  // log that defers its fsync (a single server's journal under
  // --learn-linger) appends the batch without one and says so
  // (LearnOutcome::sync_deferred); the batch is learned at once either way.
  bool sync_later = false;
};

// What learning one batch did.
struct LearnOutcome {
  std::uint64_t accepted = 0;
  std::uint64_t duplicates = 0;
  // The model's samples after the batch.
  std::uint64_t num_samples = 0;
  // Per sample of the batch: its position in the model's stream (1-based;
  // for a duplicate, where it was first learned) and whether it was one.
  std::vector<std::uint64_t> sequence;
  std::vector<bool> duplicate;
  // With predictions asked for, per sample: how long the oldest sample the
  // prediction had not learned (of those before it) had been acknowledged
  // (LearnStage::LagAfter).
  std::vector<absl::Duration> learn_lag;
  // Appended (and applied) but not fsynced yet (WriteOptions::sync_later):
  // durable once the log's next sync is (HostedModel's DeferredSync).
  bool sync_deferred = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_LEARN_OUTCOME_H_
