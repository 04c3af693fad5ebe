#include "server/hosting/hosted_model.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/io/record_writer.h"
#include "core/io/string_file.h"

namespace streamreg {

HostedModel::HostedModel(std::string name, std::unique_ptr<Model> model,
                         std::vector<std::string> input_names,
                         absl::Time create_time, Limits limits,
                         HostingPools pools)
    : name_(std::move(name)),
      model_(std::move(model)),
      input_names_(std::move(input_names)),
      create_time_(create_time),
      limits_(limits),
      writes_(SerialQueue::Create(pools.writes)),
      learn_stage_(model_.get(), pools.learning),
      queued_samples_(absl::StrCat("samples queued for model '", name_, "'"),
                      "--max-queued-samples-per-model",
                      limits.max_queued_samples),
      predictions_in_flight_(
          absl::StrCat("predictions in flight on model '", name_, "'"),
          "--max-predictions-in-flight-per-model",
          limits.max_predictions_in_flight),
      recent_ids_(limits.dedup_window) {
  if (limits.max_queue_delay > absl::ZeroDuration()) {
    queued_samples_.SetPacedLimit(
        [this, delay = limits.max_queue_delay] {
          return learn_stage_.rate().SamplesIn(delay);
        },
        absl::StrCat("what it learns in ",
                     absl::FormatDuration(limits.max_queue_delay),
                     ", --max-queue-delay"));
  }
}

absl::Status HostedModel::CheckWritable() const {
  if (deleted()) {
    return absl::NotFoundError(absl::StrCat("model '", name_, "' was deleted"));
  }
  if (moved_.load(std::memory_order_acquire)) {
    return absl::UnavailableError(absl::StrCat(
        "model '", name_, "' is no longer served by this server; retry"));
  }
  return learn_stage_.error();
}

absl::StatusOr<LearnOutcome> HostedModel::Learn(const ValidatedSamples& batch,
                                                std::vector<Prediction>* before,
                                                const WriteOptions& options) {
  const std::uint64_t count = options.announced ? batch.size() : 0;
  if (write_log_ == nullptr) {
    return LearnHere(batch, before, 0, count, options.streamed);
  }
  // Applied (and counted) by the log's follower meanwhile.
  absl::StatusOr<LearnOutcome> outcome =
      LearnThroughLog(batch, before, options.deadline);
  WithdrawSamples(count);
  return outcome;
}

absl::StatusOr<LearnOutcome> HostedModel::Learn(
    std::span<const Sample> batch, std::vector<Prediction>* before) {
  absl::StatusOr<ValidatedSamples> validated = model_->Validate(batch);
  if (!validated.ok()) return validated.status();
  return Learn(*validated, before, WriteOptions{});
}

void HostedModel::LearnInGroup(LearnBatcher::Request request) {
  AnnounceSamples(request.sample.size());
  if (learn_batcher_.Add(std::move(request))) DrainGroup();
}

void HostedModel::DrainGroup() {
  writes_->PostUrgent([self = shared_from_this()] {
    const bool more = self->learn_batcher_.Drain(
        [&self](const ValidatedSamples& batch, std::vector<Prediction>* before,
                const WriteOptions& options) {
          return self->Learn(batch, before, options);
        },
        [&self](std::uint64_t samples) { self->WithdrawSamples(samples); });
    if (more) self->DrainGroup();
  });
}

absl::StatusOr<LearnOutcome> HostedModel::ApplyFromLog(
    std::span<const Sample> batch, std::uint64_t sequence) {
  // The log is written by other servers: checked as it is read.
  absl::StatusOr<ValidatedSamples> validated = model_->Validate(batch);
  if (!validated.ok()) {
    NoteAppliedFromLog(sequence);
    return validated.status();
  }
  return LearnHere(*validated, nullptr, sequence);
}

void HostedModel::NoteAppliedFromLog(std::uint64_t sequence) {
  MutexLock lock(&write_mutex_);
  log_applied_ = std::max(log_applied_, sequence);
}

std::uint64_t HostedModel::log_applied() const {
  MutexLock lock(&write_mutex_);
  return log_applied_;
}

absl::StatusOr<LearnOutcome> HostedModel::LearnThroughLog(
    const ValidatedSamples& batch, std::vector<Prediction>* before,
    absl::Time deadline) {
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  // Predicted by the model as it is before the batch is appended, so no
  // prediction has learned its own sample.
  std::vector<absl::Duration> learn_lag;
  if (before != nullptr) {
    if (absl::Status status = PredictBefore(batch, before, &learn_lag);
        !status.ok()) {
      return status;
    }
  }
  absl::StatusOr<LearnOutcome> outcome =
      write_log_->AppendSamples(batch.samples(), deadline);
  if (outcome.ok()) outcome->learn_lag = std::move(learn_lag);
  return outcome;
}

absl::StatusOr<LearnOutcome> HostedModel::LearnHere(
    const ValidatedSamples& batch, std::vector<Prediction>* before,
    std::uint64_t log_sequence, std::uint64_t announced, bool streamed) {
  MutexLock lock(&write_mutex_);
  // What is not queued for learning below is dropped from the count.
  struct Settle {
    LearnStage& stage;
    std::uint64_t left;
    ~Settle() { stage.Withdraw(left); }
  } settle{learn_stage_, announced};
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  // Applied, whatever comes of it: a refusal below is every replica's.
  log_applied_ = std::max(log_applied_, log_sequence);

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
  const Capacity& capacity = model_->config().capacity;
  if (limits_.max_samples != 0 &&
      capacity.policy == CapacityPolicy::kUnbounded &&
      num_samples_ + fresh.size() > limits_.max_samples) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model '", name_, "' holds ", num_samples_, " samples; ", fresh.size(),
        " more would pass the server's limit of ", limits_.max_samples,
        " (--max-samples-per-model); a window or reservoir capacity keeps a "
        "model within it"));
  }

  if (journal_ != nullptr && !fresh.empty()) {
    if (absl::Status status =
            journal_->AppendSamples(num_samples_ + 1, fresh.samples());
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

  // Predicted before the batch is queued, so no prediction has learned
  // its own sample.
  if (before != nullptr) {
    if (absl::Status status = PredictBefore(batch, before, &outcome.learn_lag);
        !status.ok()) {
      return status;
    }
  }
  learn_stage_.Enqueue(fresh, acknowledged, shared_from_this(), announced,
                       streamed ? kMaxUnlearnedStreamed : kMaxUnlearned);
  settle.left = 0;
  return outcome;
}

absl::Status HostedModel::PredictBefore(
    const ValidatedSamples& batch, std::vector<Prediction>* before,
    std::vector<absl::Duration>* learn_lag) const {
  before->resize(batch.size());
  learn_lag->resize(batch.size());
  for (std::size_t s = 0; s < batch.size(); ++s) {
    absl::StatusOr<Prediction> now = model_->Predict(batch[s].x);
    if (!now.ok()) return now.status();  // validated: cannot fail
    (*before)[s] = *std::move(now);
    (*learn_lag)[s] = learn_stage_.LagAfter((*before)[s].learned, absl::Now());
  }
  return absl::OkStatus();
}

absl::Status HostedModel::Refit(
    const std::function<void(std::size_t, std::size_t)>& progress,
    absl::Time deadline) {
  if (write_log_ != nullptr) {
    if (absl::Status status = CheckWritable(); !status.ok()) return status;
    return write_log_->AppendRefit(deadline);
  }
  return RefitHere(progress);
}

absl::Status HostedModel::RefitHere(
    const std::function<void(std::size_t, std::size_t)>& progress,
    std::uint64_t log_sequence) {
  // Held throughout (as the refit's place in the log must be its place in
  // the learning order): writes wait, reads go on.
  MutexLock lock(&write_mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  log_applied_ = std::max(log_applied_, log_sequence);
  if (journal_ != nullptr) {
    if (absl::Status status = journal_->AppendRefit(); !status.ok()) {
      return status;
    }
  }
  return learn_stage_.RunInOrder(
      [this, &progress] { return model_->Refit(progress); },
      shared_from_this());
}

absl::Status HostedModel::Predict(
    std::span<const std::span<const double>> queries,
    std::vector<Prediction>* out) const {
  CatchUp();
  if (model_->samples_stored() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", name_, "' has no samples to predict from"));
  }
  return model_->Predict(queries, out);
}

absl::StatusOr<HostedModel::StandingPrediction> HostedModel::PredictAsItStands(
    std::span<const double> x) const {
  absl::StatusOr<Prediction> prediction = model_->Predict(x);
  if (!prediction.ok()) return prediction.status();
  const std::uint64_t learned = prediction->learned;
  StandingPrediction standing{
      .prediction = *std::move(prediction),
      .unlearned = learn_stage_.Unlearned(learned),
      .learn_lag = learn_stage_.LagAfter(learned, absl::Now())};
  return standing;
}

absl::Status HostedModel::Delete() {
  MutexLock lock(&write_mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  if (journal_ != nullptr) {
    if (absl::Status status = journal_->AppendDelete(); !status.ok()) {
      return status;
    }
  }
  deleted_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

ModelIdentity HostedModel::identity() const {
  return ModelIdentity{name_, create_time_, model_->config(), input_names_};
}

void HostedModel::RestoreFromSnapshot(const SnapshotHeader& header) {
  MutexLock lock(&write_mutex_);
  // A cluster model's snapshot includes its log up to header.lsn (a
  // journal's lsn is its own, and log_applied_ unused beside it).
  log_applied_ = header.lsn;
  num_samples_ = header.num_samples;
  samples_logged_.store(num_samples_, std::memory_order_release);
  samples_at_snapshot_.store(header.num_samples, std::memory_order_release);
  duplicate_samples_ = header.duplicate_samples;
  for (const auto& [id, sequence] : header.recent_ids) {
    recent_ids_.Remember(id, sequence);
  }
  learn_stage_.Reset(num_samples_);
}

absl::Status HostedModel::Replay(const ModelJournal::LogEntry& entry) {
  MutexLock lock(&write_mutex_);
  auto malformed = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("log record ", entry.lsn,
                                            " of model '", name_, "': ", what));
  };
  switch (entry.type) {
    case kSamplesRecord: {
      const ModelConfig& config = model_->config();
      SamplesRecord record;
      if (!DecodeSamples(entry.payload, config.input_dim, config.num_targets(),
                         &record)) {
        return malformed("malformed samples");
      }
      if (record.first_sequence != num_samples_ + 1) {
        return malformed(absl::StrCat("starts at sample ",
                                      record.first_sequence, ", not ",
                                      num_samples_ + 1));
      }
      const std::vector<Sample> samples =
          record.samples(config.input_dim, config.num_targets());
      if (absl::Status status = model_->Learn(samples); !status.ok()) {
        return malformed(status.message());
      }
      for (std::size_t s = 0; s < samples.size(); ++s) {
        recent_ids_.Remember(samples[s].sample_id, num_samples_ + s + 1);
      }
      num_samples_ += samples.size();
      samples_logged_.store(num_samples_, std::memory_order_release);
      learn_stage_.Reset(num_samples_);
      return absl::OkStatus();
    }
    case kRefitRecord:
      return model_->Refit();
    default:
      return malformed(absl::StrCat("unexpected record type ",
                                    static_cast<int>(entry.type)));
  }
}

void HostedModel::AttachJournal(std::unique_ptr<ModelJournal> journal) {
  MutexLock lock(&write_mutex_);
  journal_ = std::move(journal);
}

absl::StatusOr<HostedModel::Captured> HostedModel::CaptureLocked(
    std::uint64_t lsn) {
  // The model must match the log up to `lsn`: everything logged is
  // acknowledged, so once learning catches up it does (writes wait
  // meanwhile; at most kMaxUnlearnedStreamed samples).
  learn_stage_.CatchUp();
  if (absl::Status status = learn_stage_.error(); !status.ok()) return status;
  return Captured{SnapshotHeader{lsn,
                                 identity(),
                                 num_samples_,
                                 duplicate_samples(),
                                 {recent_ids_.entries().begin(),
                                  recent_ids_.entries().end()}},
                  model_->CaptureSnapshot()};
}

absl::Status HostedModel::WriteCaptured(const Captured& captured,
                                        RecordWriter& out,
                                        std::uint64_t* records) {
  if (absl::Status status =
          out.Add(kSnapshotHeaderRecord, EncodeSnapshotHeader(captured.header));
      !status.ok()) {
    return status;
  }
  ++*records;
  return captured.state.Write(out, records);
}

absl::Status HostedModel::Snapshot() {
  std::optional<Captured> captured;
  ModelJournal::Position position;
  {
    MutexLock lock(&write_mutex_);
    if (journal_ == nullptr || deleted()) return absl::OkStatus();
    position = journal_->position();
    if (position.lsn == journal_->snapshot_lsn()) return absl::OkStatus();
    absl::StatusOr<Captured> now = CaptureLocked(position.lsn);
    if (!now.ok()) return now.status();
    captured.emplace(*std::move(now));
  }
  // Written without the lock: learning goes on meanwhile.
  const absl::Status written = journal_->WriteSnapshot(
      position, [&](RecordWriter& out, std::uint64_t* records) {
        return WriteCaptured(*captured, out, records);
      });
  if (written.ok()) SnapshotStored(captured->header.num_samples);
  return written;
}

absl::StatusOr<HostedModel::LogSnapshot> HostedModel::CaptureForLog() {
  std::optional<Captured> captured;
  {
    MutexLock lock(&write_mutex_);
    if (absl::Status status = CheckWritable(); !status.ok()) return status;
    absl::StatusOr<Captured> now = CaptureLocked(log_applied_);
    if (!now.ok()) return now.status();
    captured.emplace(*std::move(now));
  }
  // Written without the lock, as Snapshot's file is.
  StringWritableFile file(absl::StrCat("the snapshot of model '", name_, "'"));
  RecordWriter out(&file);
  std::uint64_t records = 0;
  if (absl::Status status = WriteCaptured(*captured, out, &records);
      !status.ok()) {
    return status;
  }
  const std::uint64_t lsn = captured->header.lsn;
  if (absl::Status status =
          out.Add(kSnapshotEndRecord, EncodeSnapshotEnd(lsn, records));
      !status.ok()) {
    return status;
  }
  return LogSnapshot{lsn, captured->header.num_samples, file.Release()};
}

void HostedModel::SnapshotStored(std::uint64_t num_samples) {
  samples_at_snapshot_.store(num_samples, std::memory_order_release);
  snapshot_unix_nanos_.store(absl::ToUnixNanos(absl::Now()),
                             std::memory_order_release);
}

std::uint64_t HostedModel::samples_since_snapshot() const {
  // A snapshot holds at most what was logged: read it first.
  const std::uint64_t at_snapshot =
      samples_at_snapshot_.load(std::memory_order_acquire);
  const std::uint64_t logged = samples_logged_.load(std::memory_order_acquire);
  return logged > at_snapshot ? logged - at_snapshot : 0;
}

absl::Time HostedModel::last_snapshot_time() const {
  return absl::FromUnixNanos(
      snapshot_unix_nanos_.load(std::memory_order_acquire));
}

}  // namespace streamreg
