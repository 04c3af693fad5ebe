#include "server/hosting/model_writer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace streamreg {

ModelWriter::ModelWriter(
    std::string name, Model* model, LearnStage* stage, Limits limits,
    std::function<std::shared_ptr<const void>()> keep_alive)
    : name_(std::move(name)),
      model_(model),
      stage_(stage),
      limits_(limits),
      keep_alive_(std::move(keep_alive)),
      recent_ids_(limits.dedup_window) {}

absl::Status ModelWriter::CheckWritable() const {
  if (deleted()) {
    return absl::NotFoundError(absl::StrCat("model '", name_, "' was deleted"));
  }
  return stage_->error();
}

absl::StatusOr<LearnOutcome> ModelWriter::ApplySamples(
    const ValidatedSamples& batch, const ApplyOptions& options) {
  MutexLock lock(&mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  const Record& record = options.record;
  log_applied_ = std::max(log_applied_, record.log_sequence);

  LearnOutcome outcome;
  outcome.sequence.resize(batch.size());
  outcome.duplicate.resize(batch.size());
  std::vector<std::size_t> fresh_index;
  for (std::size_t s = 0; s < batch.size(); ++s) {
    // No id twice in the batch (ValidatedSamples): only earlier ones count.
    const std::uint64_t id = batch[s].sample_id;
    if (const auto seen = id == 0 ? std::nullopt : recent_ids_.Find(id)) {
      outcome.duplicate[s] = true;
      outcome.sequence[s] = *seen;
      ++outcome.duplicates;
      continue;
    }
    outcome.sequence[s] = num_samples_ + fresh_index.size() + 1;
    fresh_index.push_back(s);
  }
  const ValidatedSamples fresh = batch.Select(fresh_index);
  if (limits_.max_samples != 0 &&
      model_->config().capacity.policy == CapacityPolicy::kUnbounded &&
      num_samples_ + fresh.size() > limits_.max_samples) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model '", name_, "' holds ", num_samples_, " samples; ", fresh.size(),
        " more would pass the server's limit of ", limits_.max_samples,
        " (--max-samples-per-model); a window or reservoir capacity keeps a "
        "model within it"));
  }
  if (!fresh.empty() && record.journal != nullptr) {
    if (absl::Status status = record.journal->AppendSamples(
            num_samples_ + 1, fresh.samples(), options.take_overs,
            record.defer_sync);
        !status.ok()) {
      return status;
    }
  }
  const absl::Time acknowledged = absl::Now();
  for (std::size_t f = 0; f < fresh.size(); ++f) {
    recent_ids_.Remember(fresh[f].sample_id, outcome.sequence[fresh_index[f]]);
  }
  num_samples_ += fresh.size();
  samples_logged_.store(num_samples_, std::memory_order_release);
  outcome.accepted = fresh.size();
  outcome.num_samples = num_samples_;
  duplicate_samples_.fetch_add(outcome.duplicates, std::memory_order_relaxed);
  // The whole batch's announcement, duplicates too, in the step that
  // queues the fresh samples.
  const std::uint64_t announced =
      options.ticket != nullptr ? options.ticket->TakeAnnounced() : 0;
  stage_->Enqueue(fresh, acknowledged, keep_alive_(), announced,
                  options.max_unlearned, options.take_overs);
  return outcome;
}

absl::Status ModelWriter::ApplyRefit(
    const std::function<void(std::size_t, std::size_t)>& progress,
    const Record& record) {
  // Held throughout (as the refit's place in the log must be its place in
  // the learning order): writes wait, reads go on.
  MutexLock lock(&mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  log_applied_ = std::max(log_applied_, record.log_sequence);
  if (record.journal != nullptr) {
    if (absl::Status status = record.journal->AppendRefit(); !status.ok()) {
      return status;
    }
  }
  return stage_->RunInOrder(
      [this, &progress] { return model_->Refit(progress); }, keep_alive_());
}

absl::Status ModelWriter::ApplyTakeOver(const TakeOverKey& key,
                                        const Record& record) {
  MutexLock lock(&mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  log_applied_ = std::max(log_applied_, record.log_sequence);
  if (record.journal != nullptr) {
    if (absl::Status status = record.journal->AppendTakeOver(key);
        !status.ok()) {
      return status;
    }
  }
  stage_->EnqueueTakeOver(key, keep_alive_());
  return absl::OkStatus();
}

absl::Status ModelWriter::Delete(JournalFile* journal) {
  MutexLock lock(&mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  if (journal != nullptr) {
    if (absl::Status status = journal->AppendDelete(); !status.ok()) {
      return status;
    }
  }
  deleted_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void ModelWriter::NoteApplied(std::uint64_t log_sequence) {
  MutexLock lock(&mutex_);
  log_applied_ = std::max(log_applied_, log_sequence);
}

std::uint64_t ModelWriter::log_applied() const {
  MutexLock lock(&mutex_);
  return log_applied_;
}

void ModelWriter::Restore(const SnapshotHeader& header) {
  MutexLock lock(&mutex_);
  // A cluster model's snapshot includes its log up to header.lsn (a
  // journal's lsn is its own, and log_applied_ unused beside it).
  log_applied_ = header.lsn;
  num_samples_ = header.num_samples;
  samples_logged_.store(num_samples_, std::memory_order_release);
  duplicate_samples_ = header.duplicate_samples;
  for (const auto& [id, sequence] : header.recent_ids) {
    recent_ids_.Remember(id, sequence);
  }
  stage_->Reset(num_samples_);
}

absl::Status ModelWriter::Replay(const JournalFile::LogEntry& entry) {
  MutexLock lock(&mutex_);
  auto malformed = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("log record ", entry.lsn,
                                            " of model '", name_, "': ", what));
  };
  switch (entry.type) {
    case kSamplesRecord:
    case kSamplesAtFixedCountsRecord: {
      const ModelConfig& config = model_->config();
      SamplesRecord record;
      if (absl::Status status = DecodeSamples(entry.payload, config.input_dim,
                                              config.num_targets(), &record);
          !status.ok()) {
        return malformed(status.message());
      }
      if (record.first_sequence != num_samples_ + 1) {
        return malformed(absl::StrCat("starts at sample ",
                                      record.first_sequence, ", not ",
                                      num_samples_ + 1));
      }
      // The journal holds what sequencing let through: learned as it is.
      const std::vector<Sample> samples =
          record.samples(config.input_dim, config.num_targets());
      const BatchTakeOvers take_overs =
          entry.type == kSamplesAtFixedCountsRecord
              ? BatchTakeOvers::kAtFixedCounts
              : BatchTakeOvers::kWhereRecorded;
      if (absl::Status status = model_->Learn(samples, nullptr, take_overs);
          !status.ok()) {
        return malformed(status.message());
      }
      for (std::size_t s = 0; s < samples.size(); ++s) {
        recent_ids_.Remember(samples[s].sample_id, num_samples_ + s + 1);
      }
      num_samples_ += samples.size();
      samples_logged_.store(num_samples_, std::memory_order_release);
      stage_->Reset(num_samples_);
      return absl::OkStatus();
    }
    case kRefitRecord:
      return model_->Refit();
    case kTakeOverRecord: {
      TakeOverKey key;
      if (absl::Status status = DecodeTakeOver(entry.payload, &key);
          !status.ok()) {
        return malformed(status.message());
      }
      // A record of work not running (superseded, recorded twice) changes
      // nothing, as it did when it was written.
      (void)model_->ApplyTakeOverRecord(key);
      return absl::OkStatus();
    }
    default:
      return malformed(absl::StrCat("unexpected record type ",
                                    static_cast<int>(entry.type)));
  }
}

absl::StatusOr<std::optional<ModelWriter::Captured>> ModelWriter::Capture(
    JournalFile* journal, const SnapshotBase* since) {
  MutexLock lock(&mutex_);
  JournalFile::Position position{.lsn = log_applied_};
  if (journal != nullptr) {
    if (deleted()) return std::nullopt;
    position = journal->position();
    if (position.lsn == journal->snapshot_lsn()) return std::nullopt;
  }
  const std::uint64_t at = position.lsn;
  // The model must match the log up to `at`: everything applied is
  // queued, so once learning catches up it does.
  stage_->CatchUp();
  if (absl::Status status = stage_->error(); !status.ok()) return status;
  std::optional<ModelSnapshot> state;
  if (since != nullptr) state = model_->CaptureSnapshotSince(*since);
  if (!state.has_value()) state = model_->CaptureSnapshot();
  return Captured{SnapshotHeader{at,
                                 {},
                                 num_samples_,
                                 duplicate_samples(),
                                 {recent_ids_.entries().begin(),
                                  recent_ids_.entries().end()}},
                  *std::move(state), position};
}

}  // namespace streamreg
