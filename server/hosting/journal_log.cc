#include "server/hosting/journal_log.h"

namespace streamreg {

absl::StatusOr<LearnOutcome> JournalLog::AppendSamples(
    const ValidatedSamples& batch, const WriteOptions& options) {
  const ModelWriter::ApplyOptions apply{
      .log_sequence = 0,
      .ticket = options.ticket,
      .max_unlearned = options.streamed ? backlog_.streamed : backlog_.batches,
      .take_overs = options.take_overs};
  // Deferred only where a sync is due the linger later (HostedModel).
  const bool defer_sync = options.sync_later && journal_ != nullptr &&
                          journal_->learn_linger() > absl::ZeroDuration();
  absl::StatusOr<LearnOutcome> outcome = writer_->ApplySamples(
      batch, apply,
      [this, &options, defer_sync](std::uint64_t first_sequence,
                                   const ValidatedSamples& fresh) {
        return journal_ == nullptr
                   ? absl::OkStatus()
                   : journal_->AppendSamples(first_sequence, fresh.samples(),
                                             options.take_overs, defer_sync);
      });
  if (outcome.ok()) outcome->sync_deferred = defer_sync;
  return outcome;
}

absl::Status JournalLog::AppendRefit(
    const std::function<void(std::size_t, std::size_t)>& progress,
    absl::Time /*deadline: a local refit waits its turn*/) {
  return writer_->ApplyRefit(progress, 0, [this] {
    return journal_ == nullptr ? absl::OkStatus() : journal_->AppendRefit();
  });
}

absl::Status JournalLog::AppendTakeOver(const TakeOverKey& key) {
  return writer_->ApplyTakeOver(key, 0, [this, &key] {
    return journal_ == nullptr ? absl::OkStatus()
                               : journal_->AppendTakeOver(key);
  });
}

absl::Status JournalLog::AppendDelete() {
  return writer_->Delete([this] {
    return journal_ == nullptr ? absl::OkStatus() : journal_->AppendDelete();
  });
}

}  // namespace streamreg
