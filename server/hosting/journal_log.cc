#include "server/hosting/journal_log.h"

namespace streamreg {

absl::StatusOr<LearnOutcome> JournalLog::AppendSamples(
    const ValidatedSamples& batch, const WriteOptions& options) {
  // Deferred only where a sync is due the linger later (HostedModel).
  const bool defer_sync = options.sync_later && journal_ != nullptr &&
                          journal_->learn_linger() > absl::ZeroDuration();
  absl::StatusOr<LearnOutcome> outcome = writer_->ApplySamples(
      batch,
      {.record = {.journal = journal_.get(), .defer_sync = defer_sync},
       .ticket = options.ticket,
       .max_unlearned = options.streamed ? backlog_.streamed : backlog_.batches,
       .take_overs = options.take_overs});
  if (outcome.ok()) outcome->sync_deferred = defer_sync;
  return outcome;
}

absl::Status JournalLog::AppendRefit(
    const std::function<void(std::size_t, std::size_t)>& progress,
    absl::Time /*deadline: a local refit waits its turn*/) {
  return writer_->ApplyRefit(progress, {.journal = journal_.get()});
}

absl::Status JournalLog::AppendTakeOver(const TakeOverKey& key) {
  return writer_->ApplyTakeOver(key, {.journal = journal_.get()});
}

absl::Status JournalLog::AppendDelete() {
  return writer_->Delete(journal_.get());
}

}  // namespace streamreg
