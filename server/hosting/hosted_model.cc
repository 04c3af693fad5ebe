#include "server/hosting/hosted_model.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/io/record_writer.h"
#include "core/io/string_file.h"
#include "spdlog/spdlog.h"

namespace streamreg {

HostedModel::HostedModel(std::string name, std::unique_ptr<Model> model,
                         std::vector<std::string> input_names,
                         absl::Time create_time, Limits limits,
                         HostingPools pools)
    : name_(std::move(name)),
      model_(std::move(model)),
      input_names_(std::move(input_names)),
      create_time_(create_time),
      write_pool_(pools.writes),
      writes_(SerialQueue::Create(pools.writes)),
      learn_stage_(model_.get(), pools.learning),
      writer_(
          name_, model_.get(), &learn_stage_,
          {.max_samples = limits.max_samples,
           .dedup_window = limits.dedup_window},
          [this] { return std::shared_ptr<const void>(shared_from_this()); }),
      queued_samples_(absl::StrCat("samples queued for model '", name_, "'"),
                      "--max-queued-samples-per-model",
                      limits.max_queued_samples),
      predictions_in_flight_(
          absl::StrCat("reads in flight on model '", name_, "'"),
          "--max-predictions-in-flight-per-model",
          limits.max_predictions_in_flight),
      answer_errors_(model_->config()),
      ahead_errors_(model_->config()),
      journal_log_(
          std::make_shared<JournalLog>(nullptr, &writer_, LogBacklog())),
      write_log_(journal_log_) {
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
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  // Predicted by the model as it is before the batch goes to the log, so
  // no prediction has learned its own sample.
  std::vector<absl::Duration> learn_lag;
  if (before != nullptr) {
    if (absl::Status status = PredictBefore(batch, before, &learn_lag);
        !status.ok()) {
      return status;
    }
  }
  WriteOptions write = options;
  write.take_overs = TakeOversOf(options);
  // A batch at fixed counts needs no record (its work takes over at the
  // counts); the records wait for the next Learn stream's batch.
  if (write.take_overs == BatchTakeOvers::kWhereRecorded) RecordDoneWork();
  absl::StatusOr<LearnOutcome> outcome =
      write_log_->AppendSamples(batch, write);
  if (!outcome.ok()) return outcome;
  // Queued (and, in a cluster, applied here): the client's reads after
  // this answer see it.
  learn_stage_.MarkAcknowledged();
  outcome->learn_lag = std::move(learn_lag);
  return outcome;
}

BatchTakeOvers HostedModel::TakeOversOf(const WriteOptions& options) const {
  // A model of the fixed-count rule takes over at fixed counts whatever a
  // batch says: its log's batches say nothing.
  return model_->config().take_over == TakeOverRule::kLogged &&
                 !options.streamed
             ? BatchTakeOvers::kAtFixedCounts
             : BatchTakeOvers::kWhereRecorded;
}

void HostedModel::RecordDoneWork() {
  for (const TakeOverKey& key : learn_stage_.TakeOversToRecord()) {
    if (absl::Status status = write_log_->AppendTakeOver(key); !status.ok()) {
      // Handed out again after the next batch learned: the work waits
      // (the learner does not), as it would for a slower build.
      learn_stage_.TakeOverNotRecorded(key);
      spdlog::warn(
          "event=take_over_not_recorded model={} work={} earliest={} "
          "error=\"{}\"",
          name_, TakeOverKeyName(key), key.earliest,
          std::string(status.message()));
    }
  }
}

absl::StatusOr<LearnOutcome> HostedModel::Learn(
    std::span<const Sample> batch, std::vector<Prediction>* before) {
  absl::StatusOr<ValidatedSamples> validated = model_->Validate(batch);
  if (!validated.ok()) return validated.status();
  return Learn(*validated, before, WriteOptions{});
}

void HostedModel::LearnInTurn(QueuedBatch batch) {
  // (Shared: a queue's task is copyable, the ticket is not.)
  writes_->Post([self = shared_from_this(),
                 batch = std::make_shared<QueuedBatch>(std::move(batch))] {
    absl::StatusOr<LearnOutcome> outcome =
        batch->abandoned()
            ? absl::CancelledError("not learned, the call was cancelled")
            : self->Learn(
                  batch->samples, nullptr,
                  {.deadline = batch->deadline, .ticket = &batch->ticket});
    // Given back before the answer: its call admits the next batch then.
    batch->ticket.Release();
    batch->done(std::move(outcome));
  });
}

void HostedModel::RefitInTurn(
    std::function<void(std::size_t, std::size_t)> progress, absl::Time deadline,
    std::function<void(absl::Status)> done) {
  writes_->Post(
      [self = shared_from_this(), progress = std::move(progress), deadline,
       done = std::move(done)] { done(self->Refit(progress, deadline)); });
}

void HostedModel::LearnInGroup(LearnBatcher::Request request) {
  if (request.predict) {
    // A cautious answer is made once its samples are durable: its
    // intervals are calibrated and its errors counted then, as it is sent
    // (the group's other samples were answered on arrival). The group
    // commit runs `done` while the drain holds this model.
    request.done = [this, samples = request.sample,
                    done =
                        std::move(request.done)](LearnBatcher::Result result) {
      if (result.status.ok()) {
        for (std::size_t i = 0; i < result.before.size(); ++i) {
          answer_errors_.Answer(&result.before[i], samples[i].y);
        }
      }
      done(std::move(result));
    };
  } else {
    // Learned at once, reported durable once the deferred sync that
    // covers its record is (WriteOptions::sync_later).
    request.done =
        [this, done = std::move(request.done)](LearnBatcher::Result result) {
          if (!result.status.ok() || !result.sync_deferred) {
            done(std::move(result));
            return;
          }
          ReportWhenSynced([done, result](const absl::Status& synced) mutable {
            if (!synced.ok()) result.status = synced;
            done(std::move(result));
          });
        };
  }
  // A message answered only once durable (predict) is written at once:
  // its stream sends the next only then, so no other would join it.
  const absl::Duration linger =
      request.predict ? absl::ZeroDuration() : write_log_->GroupLinger();
  if (learn_batcher_.Add(std::move(request))) DrainGroup(linger);
}

void HostedModel::ReportWhenSynced(DeferredSync::Report report) {
  if (!deferred_sync_.Hold(std::move(report))) return;  // a sync is due
  JournalFile* const journal = this->journal();
  const absl::Duration linger =
      journal != nullptr ? journal->learn_linger() : absl::ZeroDuration();
  // On the pool, not the model's write queue: a slow fsync (an ext4
  // journal commit can take tens of ms) holds no append behind it.
  write_pool_->PostAt(
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(linger),
      [self = shared_from_this()] {
        self->deferred_sync_.Sync([&self] {
          JournalFile* const journal = self->journal();
          return journal != nullptr ? journal->SyncIfDirty() : absl::OkStatus();
        });
      });
}

void HostedModel::DrainGroup(absl::Duration linger) {
  auto drain = [self = shared_from_this()] {
    bool more = false;
    LearnBatcher::Group group = self->learn_batcher_.TakeGroup(&more);
    if (!group.empty()) self->WriteGroup(group);
    // A backlog is a group already: written at once.
    if (more) self->DrainGroup(absl::ZeroDuration());
  };
  if (linger > absl::ZeroDuration()) {
    writes_->PostUrgentAfter(linger, std::move(drain));
  } else {
    writes_->PostUrgent(std::move(drain));
  }
}

void HostedModel::WriteGroup(LearnBatcher::Group& group) {
  std::vector<Prediction> before;
  absl::StatusOr<LearnOutcome> outcome =
      group.batch().ok()
          ? Learn(*group.batch(), group.predict() ? &before : nullptr,
                  group.options())
          : group.batch().status();
  if (!outcome.ok() && group.size() > 1) {
    // Refused as a whole (the sample limit, a failing disk): each alone,
    // so each gets the answer it would have had on its own — unless an
    // earlier one of its call failed just now (room found for a later
    // sample must not put it before the earlier one).
    while (std::optional<LearnBatcher::Group> alone = group.TakeAlone()) {
      WriteGroup(*alone);
    }
    return;
  }
  group.Answer(outcome, &before);
}

absl::Status HostedModel::PredictBefore(
    const ValidatedSamples& batch, std::vector<Prediction>* before,
    std::vector<absl::Duration>* learn_lag) const {
  before->resize(batch.size());
  learn_lag->resize(batch.size());
  for (std::size_t s = 0; s < batch.size(); ++s) {
    absl::StatusOr<Prediction> now =
        model_->Predict(batch[s].x, PredictOptions::ForNextSample());
    if (!now.ok()) return now.status();  // validated: cannot fail
    (*before)[s] = *std::move(now);
    (*learn_lag)[s] = learn_stage_.LagAfter((*before)[s].learned, absl::Now());
  }
  return absl::OkStatus();
}

absl::Status HostedModel::Refit(
    const std::function<void(std::size_t, std::size_t)>& progress,
    absl::Time deadline) {
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  return write_log_->AppendRefit(progress, deadline);
}

absl::Status HostedModel::Predict(
    std::span<const std::span<const double>> queries,
    std::vector<Prediction>* out, const PredictOptions& options,
    const ReadAfter& after) const {
  if (!after.min_learned.has_value()) {
    if (absl::Status caught_up = CatchUpAcknowledged(after); !caught_up.ok()) {
      return caught_up;
    }
  } else if (absl::Status learned =
                 AwaitLearned(*after.min_learned, after.deadline);
             !learned.ok()) {
    return learned;
  }
  if (model_->samples_stored() == 0) {
    // A replica just hosted and replaying its log sends the read to the
    // model's other servers, or alone asks the client to retry; caught up,
    // it answers once it has learned the samples applied so far.
    if (absl::Status here = write_log_->ReadableHere(); !here.ok()) {
      return here;
    }
    CatchUp();
  }
  if (model_->samples_stored() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", name_, "' has no samples to predict from"));
  }
  return model_->Predict(queries, out, options);
}

ReadAfter HostedModel::PinAcknowledged(ReadAfter after) const {
  if (!after.min_learned.has_value() && !after.acknowledged.has_value()) {
    after.acknowledged = learn_stage_.acknowledged();
  }
  return after;
}

bool HostedModel::ReadWaitsForLearning(const ReadAfter& after) const {
  const std::uint64_t samples = SamplesReadAfter(after);
  return absl::Now() < after.deadline && !deleted() &&
         learn_stage_.learned() < samples && samples <= learn_stage_.queued();
}

bool HostedModel::PredictionAnswersAtOnce(const ReadAfter& after) const {
  return learn_stage_.learned() >= SamplesReadAfter(after) &&
         model_->samples_stored() > 0;
}

absl::Status HostedModel::CatchUpAcknowledged(const ReadAfter& after) const {
  // The count read once: the one waited for is the one the error names.
  const std::uint64_t acknowledged = AcknowledgedBefore(after);
  if (learn_stage_.WaitLearned(acknowledged, after.deadline)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "model '", name_, "' has learned ", learn_stage_.learned(),
      " samples on this server, fewer than the ", acknowledged,
      " it acknowledged before this read, by the call's deadline (a read "
      "with PredictRequest.min_learned = 0 answers as of what is learned)"));
}

absl::Status HostedModel::AwaitLearned(std::uint64_t samples,
                                       absl::Time deadline) const {
  // Samples applied here are learned in order: waited for until the
  // deadline. Others may be on their way from the log: waited for a while,
  // and then, if they have arrived meanwhile, until the deadline.
  absl::Time until =
      samples <= learn_stage_.queued()
          ? deadline
          : std::min(deadline, absl::Now() + write_log_->UnappliedReadWait());
  while (!learn_stage_.WaitLearned(samples, until)) {
    if (until >= deadline || samples > learn_stage_.queued()) {
      break;
    }
    until = deadline;
  }
  if (learn_stage_.learned() >= samples) return absl::OkStatus();
  const std::string reason =
      absl::StrCat("model '", name_, "' has learned ", learn_stage_.learned(),
                   " samples on this server, fewer than the ", samples,
                   " asked for (min_learned)");
  if (absl::Status elsewhere = write_log_->ReadElsewhere(reason);
      !elsewhere.ok()) {
    return elsewhere;
  }
  if (const std::uint64_t held = learn_stage_.queued(); samples > held) {
    return absl::OutOfRangeError(
        absl::StrCat(reason, "; it holds ", held, " in all"));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(reason, " by the call's deadline"));
}

absl::StatusOr<HostedModel::StandingPrediction> HostedModel::AnswerAsItStands(
    const Sample& sample) {
  // The answer predicts the stream's next sample: its intervals are the
  // model's for such predictions until the answers' own calibration has
  // enough of them.
  absl::StatusOr<Prediction> prediction =
      model_->Predict(sample.x, PredictOptions::ForNextSample());
  if (!prediction.ok()) return prediction.status();
  answer_errors_.Answer(&*prediction, sample.y);
  const std::uint64_t learned = prediction->learned;
  StandingPrediction standing{
      .prediction = *std::move(prediction),
      .unlearned = learn_stage_.Unlearned(learned),
      .learn_lag = learn_stage_.LagAfter(learned, absl::Now())};
  return standing;
}

absl::StatusOr<HostedModel::StandingPrediction> HostedModel::PredictAhead(
    std::span<const std::span<const double>> queries,
    std::vector<Prediction>* out) const {
  if (absl::Status status =
          model_->Predict(queries, out, PredictOptions::ForNextSample());
      !status.ok()) {
    return status;
  }
  const std::uint64_t learned = out->empty() ? 0 : out->front().learned;
  StandingPrediction staleness;
  staleness.prediction.learned = learned;
  staleness.unlearned = learn_stage_.Unlearned(learned);
  staleness.learn_lag = learn_stage_.LagAfter(learned, absl::Now());
  return staleness;
}

void HostedModel::SendAhead(std::span<const std::uint64_t> sample_ids,
                            std::span<Prediction> predictions) {
  for (std::size_t q = 0; q < predictions.size(); ++q) {
    answer_errors_.Calibrate(&predictions[q]);
    if (q < sample_ids.size() && sample_ids[q] != 0) {
      ahead_errors_.Sent(sample_ids[q], &predictions[q]);
    }
  }
}

ModelStats HostedModel::stats_now() const {
  ModelStats stats = model_->stats();
  answer_errors_.figures().CopyIntervalsTo(&stats.answer_interval_half_width,
                                           &stats.answer_interval_coverage);
  return stats;
}

absl::Status HostedModel::Delete() {
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  return journal_log_->AppendDelete();
}

ModelIdentity HostedModel::identity() const {
  return ModelIdentity{name_, create_time_, model_->config(), input_names_};
}

void HostedModel::RestoreFromSnapshot(const SnapshotHeader& header) {
  writer_.Restore(header);
  samples_at_snapshot_.store(header.num_samples, std::memory_order_release);
}

absl::Status HostedModel::Replay(const JournalFile::LogEntry& entry) {
  return writer_.Replay(entry);
}

void HostedModel::AttachJournal(std::unique_ptr<JournalFile> journal) {
  journal_log_ =
      std::make_shared<JournalLog>(std::move(journal), &writer_, LogBacklog());
  write_log_ = journal_log_;
}

absl::Status HostedModel::WriteCaptured(const ModelWriter::Captured& captured,
                                        RecordWriter& out,
                                        std::uint64_t* records) const {
  SnapshotHeader header = captured.header;
  header.identity = identity();
  if (absl::Status status =
          out.Add(kSnapshotHeaderRecord, EncodeSnapshotHeader(header));
      !status.ok()) {
    return status;
  }
  ++*records;
  return captured.state.Write(out, records);
}

absl::Status HostedModel::Snapshot() {
  JournalFile* const journal = this->journal();
  if (journal == nullptr) return absl::OkStatus();
  absl::StatusOr<std::optional<ModelWriter::Captured>> captured =
      writer_.Capture(journal);
  if (!captured.ok()) return captured.status();
  if (!captured->has_value()) return absl::OkStatus();
  // Written without the writer's lock: learning goes on meanwhile.
  const absl::Status written =
      journal->WriteSnapshot((*captured)->journal_position,
                             [&](RecordWriter& out, std::uint64_t* records) {
                               return WriteCaptured(**captured, out, records);
                             });
  if (written.ok()) SnapshotStored((*captured)->header.num_samples);
  return written;
}

absl::StatusOr<HostedModel::LogSnapshot> HostedModel::CaptureForLog(
    const SnapshotBase* since) {
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  absl::StatusOr<std::optional<ModelWriter::Captured>> captured =
      writer_.Capture(/*journal=*/nullptr, since);
  if (!captured.ok()) return captured.status();
  if (since != nullptr && !(*captured)->state.builds_on().has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", name_,
        "' can no longer build on its last snapshot; a whole one is due"));
  }
  // Written without the lock, as Snapshot's file is.
  StringWritableFile file(absl::StrCat("the snapshot of model '", name_, "'"));
  RecordWriter out(&file);
  std::uint64_t records = 0;
  if (absl::Status status = WriteCaptured(**captured, out, &records);
      !status.ok()) {
    return status;
  }
  const std::uint64_t lsn = (*captured)->header.lsn;
  if (absl::Status status =
          out.Add(kSnapshotEndRecord, EncodeSnapshotEnd(lsn, records));
      !status.ok()) {
    return status;
  }
  const ModelSnapshot& state = (*captured)->state;
  return LogSnapshot{.log_sequence = lsn,
                     .num_samples = (*captured)->header.num_samples,
                     .bytes = file.Release(),
                     .increment = state.builds_on().has_value(),
                     .base = state.AsBase()};
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
  const std::uint64_t logged = writer_.samples_logged();
  return logged > at_snapshot ? logged - at_snapshot : 0;
}

absl::Time HostedModel::last_snapshot_time() const {
  return absl::FromUnixNanos(
      snapshot_unix_nanos_.load(std::memory_order_acquire));
}

}  // namespace streamreg
