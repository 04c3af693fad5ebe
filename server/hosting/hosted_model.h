#ifndef STREAMREG_SERVER_HOSTING_HOSTED_MODEL_H_
#define STREAMREG_SERVER_HOSTING_HOSTED_MODEL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/model/model.h"
#include "server/hosting/admission_gate.h"
#include "server/hosting/ahead_errors.h"
#include "server/hosting/answer_errors.h"
#include "server/hosting/deferred_sync.h"
#include "server/hosting/journal_log.h"
#include "server/hosting/learn_batcher.h"
#include "server/hosting/learn_outcome.h"
#include "server/hosting/learn_stage.h"
#include "server/hosting/model_writer.h"
#include "server/hosting/read_after.h"
#include "server/hosting/serial_queue.h"
#include "server/hosting/write_log.h"
#include "server/hosting/write_ticket.h"
#include "server/storage/journal_file.h"
#include "server/storage/journal_records.h"

namespace streamreg {

// The threads hosted models run on: `writes` makes writes durable (logs
// them, and predicts what a cautious caller waits for), `learning` learns what
// was acknowledged (LearnStage). Two pools, so that an acknowledgement waiting
// for learning never holds a thread learning needs.
struct HostingPools {
  WorkerPool* writes = nullptr;
  WorkerPool* learning = nullptr;
};

// A model as the server hosts it: the engine's Model plus what the service
// adds around it — its name and creation time, a queue that orders its
// writes, the group commit of Learn streams, overload protection,
// deletion, and durability: every write goes to the model's log (WriteLog:
// a single server's journal, or the cluster's replicated log), which has
// it applied (ModelWriter: recent ids that make retries safe, the sample
// limit) and its samples learned in order on the learning pool
// (LearnStage) while the answer goes out; Snapshot() saves the whole
// state. Reads (Predict, stats) first wait until what was acknowledged
// before them is learned, then go straight to the Model.
// gRPC-free, so it is tested on its own.
class HostedModel : public std::enable_shared_from_this<HostedModel> {
 public:
  // Samples acknowledged and not yet learned, at most, before the next
  // write waits for learning (LearnStage). Small: a stream faster than
  // learning must slow down, not be answered by an ever staler model (four
  // arms at 1 kHz, faster than this machine learns, were answered 5 s
  // behind at 4,096 with 8x the nMSE, 0.4 s behind at 256 with 4x); an
  // Ingest batch is still logged while the one before it is learned.
  static constexpr std::size_t kMaxUnlearned = 32;
  // The same bound for Learn streams' samples, whose answers do not wait:
  // past it, making them durable waits for learning. About a second of a
  // 1 kHz arm, so that a pause in learning (an index take-over, a refresh)
  // costs answers staleness, which they report, not durability.
  static constexpr std::size_t kMaxUnlearnedStreamed = 1024;

  struct Limits {
    std::uint64_t max_samples = 0;  // stored samples; 0 = no limit
    std::size_t dedup_window = 0;   // ids remembered
    // Admitted and not yet done (AdmissionGate); 0 = no limit.
    std::uint64_t max_queued_samples = 0;
    std::uint64_t max_predictions_in_flight = 0;
    // Queued samples are also limited to what the model learns in this
    // long, at the rate it learns now (LearnRate); zero = no such limit.
    absl::Duration max_queue_delay = absl::ZeroDuration();
  };

  HostedModel(std::string name, std::unique_ptr<Model> model,
              std::vector<std::string> input_names, absl::Time create_time,
              Limits limits, HostingPools pools);

  // Recovery: the hosting state a snapshot saved, then the log records
  // after it, in order; then the journal that goes on. DATA_LOSS for a
  // record that does not fit (its lsn named).
  void RestoreFromSnapshot(const SnapshotHeader& header);
  absl::Status Replay(const JournalFile::LogEntry& entry);
  void AttachJournal(std::unique_ptr<JournalFile> journal);
  JournalFile* journal() const { return journal_log_->journal(); }
  // Cluster mode: Learn and Refit go to `log` (attached before the model
  // is served, then fixed), and the model changes only through the
  // writer that whoever follows that log applies it through (log_writer).
  void AttachWriteLog(std::shared_ptr<WriteLog> log) {
    write_log_ = std::move(log);
  }
  ModelIdentity identity() const;

  const std::string& name() const { return name_; }
  const Model& model() const { return *model_; }
  // The model's MLKR fits shared with its other replicas (cluster mode:
  // FitExchange), and a result from one of them (Model::ShareMlkrFits,
  // Model::OfferMlkrFit). Thread-safe.
  void ShareMlkrFits(std::shared_ptr<MlkrFitExchange> exchange) {
    model_->ShareMlkrFits(std::move(exchange));
  }
  bool OfferMlkrFit(std::uint64_t fit, std::vector<MlkrMap> maps) {
    return model_->OfferMlkrFit(fit, std::move(maps));
  }
  const std::vector<std::string>& input_names() const { return input_names_; }
  absl::Time create_time() const { return create_time_; }
  // Orders the model's writes: Learn streams' groups, Ingest batches
  // (LearnInTurn) and refits (RefitInTurn). Tests hold it busy.
  SerialQueue& writes() { return *writes_; }
  // A Learn stream's sample, written with the others that wait meanwhile
  // as one batch (group commit: LearnBatcher) on the write queue; its
  // ticket (Announce) holds it until then. `request.done` runs once it is
  // durable, or with why it cannot be; a cautious request's answer (`predict`)
  // has its interval calibrated and its error counted then, as
  // AnswerAsItStands'.
  void LearnInGroup(LearnBatcher::Request request);
  // An Ingest batch on its way: written in its turn on the write queue
  // (LearnInTurn).
  struct QueuedBatch {
    // Checked where it arrived.
    ValidatedSamples samples;
    // What it holds on its way (Announce): given back before `done` runs.
    WriteTicket ticket;
    // The caller's (WriteOptions::deadline).
    absl::Time deadline = absl::InfiniteFuture();
    // Asked when its turn comes: true if its call is gone (CANCELLED, not
    // learned).
    std::function<bool()> abandoned;
    // What Learn did (or why it did not).
    std::function<void(absl::StatusOr<LearnOutcome>)> done;
  };
  // Learns `batch` (Learn) on the write queue, after the writes queued
  // before it; `batch.done` runs on the queue's thread.
  void LearnInTurn(QueuedBatch batch);
  // The batch refit (Refit) on the write queue, after the writes queued
  // before it; `done` gets its status on the queue's thread.
  void RefitInTurn(std::function<void(std::size_t, std::size_t)> progress,
                   absl::Time deadline, std::function<void(absl::Status)> done);
  // This model's share of overload protection: samples received and not
  // yet through its write queue, and predictions being answered
  // (ModelRegistry::AdmitSamples, AdmitPrediction).
  AdmissionGate& queued_samples() { return queued_samples_; }
  AdmissionGate& predictions_in_flight() { return predictions_in_flight_; }
  const AdmissionGate& queued_samples() const { return queued_samples_; }
  const AdmissionGate& predictions_in_flight() const {
    return predictions_in_flight_;
  }

  // Learns the samples of `batch` (checked where they arrived: Model::
  // Validate) whose ids were not learned before, in order — a second
  // sample with one id is a duplicate of the first; all or nothing.
  // NOT_FOUND once deleted; RESOURCE_EXHAUSTED past the sample limit; the
  // model's learning error once learning failed. With `before`, first
  // fills for each sample the prediction the model as it is now makes for
  // it (Prediction::learned says how many samples it had learned: fewer
  // than sequence - 1 while learning lags behind), and outcome.learn_lag.
  // Then the batch goes to the model's log (WriteLog::AppendSamples),
  // which returns once it is recorded and applied — in cluster mode
  // waiting for this replica's apply at most until options.deadline (the
  // client's); its samples are learned after the call returns (in order,
  // on the learning pool).
  absl::StatusOr<LearnOutcome> Learn(const ValidatedSamples& batch,
                                     std::vector<Prediction>* before,
                                     const WriteOptions& options);
  // Model::Validate, then Learn (tools and tests holding raw samples).
  absl::StatusOr<LearnOutcome> Learn(std::span<const Sample> batch,
                                     std::vector<Prediction>* before);
  // The ticket of `samples` samples received, admitted as `admitted`, and
  // on their way to Learn (a Learn stream's message in the group commit,
  // an Ingest batch in the write queue): they count in the answers'
  // `unlearned` from now until Learn queues them for learning, or the
  // ticket is dropped (WriteTicket).
  WriteTicket Announce(AdmissionTicket admitted, std::uint64_t samples) {
    return WriteTicket(
        std::shared_ptr<LearnStage>(shared_from_this(), &learn_stage_),
        std::move(admitted), samples);
  }
  // The batch refit (Model::Refit), in order with Learn: after every sample
  // acknowledged before it is learned. With a write log, appended to it
  // (and `progress` not reported), waiting for this replica to apply it
  // at most until `deadline`.
  absl::Status Refit(
      const std::function<void(std::size_t, std::size_t)>& progress,
      absl::Time deadline = absl::InfiniteFuture());
  // Cluster mode: the writer that the follower of the model's replicated
  // log applies its entries through, in the log's order (server/cluster/
  // replica_applier.h), noting each entry's sequence as applied with it.
  // It holds the model.
  std::shared_ptr<ModelWriter> log_writer() {
    return std::shared_ptr<ModelWriter>(shared_from_this(), &writer_);
  }
  // The last log entry applied (0: none; after RestoreFromSnapshot, the
  // snapshot's).
  std::uint64_t log_applied() const { return writer_.log_applied(); }
  // A Learn stream's answer to `sample`: the model's prediction for its x
  // as it stands, waiting for nothing acknowledged before (answer first) —
  // how stale it is in samples (received before and not learned yet:
  // waiting in the write queue or for learning) and in time (how long the
  // oldest durable sample it had not learned had waited for learning);
  // its interval calibrated on the answers sent before it, and its error
  // against the sample's y counted (answer_errors()). The caller sends it.
  struct StandingPrediction {
    Prediction prediction;
    std::uint64_t unlearned = 0;
    absl::Duration learn_lag;
  };
  absl::StatusOr<StandingPrediction> AnswerAsItStands(const Sample& sample);
  // A Learn stream's predictions ahead of their ticks (LearnRequest.ahead):
  // each query's from the model as it stands, and how stale the first was,
  // as AnswerAsItStands says it (its `prediction` left empty). Errors name
  // "queries[i]". Nothing is kept: SendAhead does that once the message is
  // accepted.
  absl::StatusOr<StandingPrediction> PredictAhead(
      std::span<const std::span<const double>> queries,
      std::vector<Prediction>* out) const;
  // Predictions ahead about to be sent: each gets the Learn answers'
  // intervals — or, if it names the sample id of its tick (not 0), the
  // intervals of the predictions ahead, and is kept to be scored when that
  // sample comes (ahead_errors()).
  void SendAhead(std::span<const std::uint64_t> sample_ids,
                 std::span<Prediction> predictions);
  // Samples that came in a Learn message, accepted: each scores the
  // prediction sent ahead for it, if any (ahead_errors()).
  void SamplesArrived(const ValidatedSamples& samples) {
    for (const Sample& sample : samples.samples())
      ahead_errors_.Arrived(sample);
  }
  AnswerErrors::Figures ahead_errors() const { return ahead_errors_.figures(); }
  // The errors of the Learn answers this server sent (AnswerAsItStands,
  // and the cautious answers of LearnInGroup).
  AnswerErrors::Figures answer_errors() const {
    return answer_errors_.figures();
  }
  // Predicts every query once what `after` asks for is learned, as
  // `options` asks (Model::Predict); FAILED_PRECONDITION while the model
  // holds no sample. Samples not learned in time: DEADLINE_EXCEEDED,
  // OUT_OF_RANGE for more than the model holds, or (in cluster mode) the
  // write log's UNAVAILABLE naming the model's other servers.
  absl::Status Predict(std::span<const std::span<const double>> queries,
                       std::vector<Prediction>* out,
                       const PredictOptions& options = {},
                       const ReadAfter& after = {}) const;

  // Logs the deletion (fsynced) and makes writes fail with NOT_FOUND; the
  // caller then removes the files. Fails, changing nothing, if the log
  // cannot record it.
  absl::Status Delete();

  // Saves the whole state to a snapshot (the journal's), if anything was
  // logged since the last one. Learning pauses only while the state is
  // captured (microseconds to a millisecond); writing happens on the
  // calling thread.
  absl::Status Snapshot();
  // Cluster mode: the whole state as of the last log entry applied, in a
  // snapshot file's format (server/storage/snapshot_reader.h reads it
  // back), for the model's snapshots in JetStream. Learning pauses only
  // for the capture; the bytes are written on the calling thread. Once
  // they are stored, SnapshotStored(num_samples) starts the count again.
  // With `since` (the `base` of a LogSnapshot stored before), an increment
  // built on that one (Model::CaptureSnapshotSince), or FAILED_PRECONDITION
  // if the model can no longer build on it, before any byte is written (a
  // whole one, hundreds of MB at 10^6 samples, is then taken on its own).
  struct LogSnapshot {
    std::uint64_t log_sequence = 0;
    std::uint64_t num_samples = 0;
    std::string bytes;
    bool increment = false;  // built on `since`
    SnapshotBase base;       // what an increment may build on this one as
  };
  absl::StatusOr<LogSnapshot> CaptureForLog(
      const SnapshotBase* since = nullptr);
  void SnapshotStored(std::uint64_t num_samples);
  // Samples learned and time passed since the last snapshot (or recovery).
  std::uint64_t samples_since_snapshot() const;
  // Samples numbered so far (LogSnapshot::num_samples counts the same).
  std::uint64_t samples_logged() const { return writer_.samples_logged(); }
  absl::Time last_snapshot_time() const;
  // Waits until every sample applied before the call is learned.
  void CatchUp() const { learn_stage_.CatchUp(); }
  // Waits until `samples` samples are learned (ReadAfter::min_learned),
  // until `deadline` at the latest; the error a read then answers if they
  // are not.
  absl::Status AwaitLearned(std::uint64_t samples, absl::Time deadline) const;
  // Waits until every sample acknowledged before the call is learned, until
  // `deadline` at the latest: what reads wait for (a client sees its
  // writes; a replica catching up on other servers' writes answers at
  // once, LearnStage::acknowledged). DEADLINE_EXCEEDED names what
  // was learned and what acknowledged.
  absl::Status CatchUpAcknowledged(const ReadAfter& after) const;
  // The read with what it waits for fixed now (ReadAfter::acknowledged):
  // what a read takes on arrival, before it may wait.
  ReadAfter PinAcknowledged(ReadAfter after) const;
  // Whether a read `after` (pinned) would now wait for samples this server
  // holds and has not learned yet, its deadline not passed (a read that
  // waits for samples still on their way from the log is not counted: it
  // waits a moment, then goes elsewhere — AwaitLearned). A deleted model's
  // reads do not wait: they answer NOT_FOUND.
  bool ReadWaitsForLearning(const ReadAfter& after) const;
  // Whether a prediction `after` (pinned) would answer now without waiting
  // for anything: what it reads after is learned and the model has samples
  // (Predict then only predicts). PostRead answers such a read of one
  // query on the caller's thread.
  bool PredictionAnswersAtOnce(const ReadAfter& after) const;
  // A read that waits for learning here is parked on `pool` (parked_read.h),
  // and then answered: what it waits for is prioritized meanwhile, and the
  // pool checks it as each batch is learned (LearnStage::ReadParked).
  void ReadParked(WorkerPool* pool) const { learn_stage_.ReadParked(pool); }
  void ReadUnparked(WorkerPool* pool) const { learn_stage_.ReadUnparked(pool); }
  // The model's statistics and metric once it has caught up with what was
  // acknowledged (`figures.acknowledged` if pinned, else as many as now) —
  // or, if it has not by `figures.deadline`, as of what it has learned
  // (learn_backlog then says how far behind): figures to look at, which a
  // model whose learning waits at a take-over still answers
  // (model().stats() without waiting: what a metrics scrape reads).
  // The Learn answers' intervals are reported as the answers sent have
  // them (AnswerErrors::Figures::CopyIntervalsTo; stats_now() too).
  ModelStats stats(const ReadAfter& figures) const {
    CatchUpForFigures(figures);
    return stats_now();
  }
  ModelStats stats_now() const;
  MetricReport metric(const ReadAfter& figures) const {
    CatchUpForFigures(figures);
    return model_->metric();
  }
  // Samples learned so far (model().samples_seen() without its lock).
  std::uint64_t samples_learned() const { return learn_stage_.learned(); }
  // The first error learning met (the model then refuses writes); OK so
  // far.
  absl::Status learning_error() const { return learn_stage_.error(); }
  // What was acknowledged and is not learned yet (the learn lag).
  LearnStage::Backlog learn_backlog(absl::Time now) const {
    return learn_stage_.backlog(now);
  }
  // The prequential and honest errors against the samples learned.
  const LearningCurve& learning_curve() const { return learn_stage_.curve(); }
  const RecentPredictions& recent_predictions() const {
    return learn_stage_.recent();
  }
  // Learning's waits for background work at its take-over points.
  const PauseStatistics& background_work_waits() const {
    return learn_stage_.background_work_waits();
  }
  // How long the current one has lasted (zero: learning is not waiting).
  absl::Duration background_work_wait_now() const {
    return learn_stage_.background_work_wait_now();
  }
  // The writes that waited for learning to catch up (kMaxUnlearned,
  // kMaxUnlearnedStreamed).
  const PauseStatistics& backlog_waits() const {
    return learn_stage_.backlog_waits();
  }
  bool deleted() const { return writer_.deleted(); }
  // Cluster mode: the model is served elsewhere now; writes still holding
  // it fail UNAVAILABLE (clients retry, and are sent to its servers).
  void MoveAway() { moved_.store(true, std::memory_order_release); }
  std::uint64_t duplicate_samples() const {
    return writer_.duplicate_samples();
  }

 private:
  // What a read waits for without min_learned: the count pinned when it
  // arrived, or else the count acknowledged now.
  std::uint64_t AcknowledgedBefore(const ReadAfter& after) const {
    return after.acknowledged.value_or(learn_stage_.acknowledged());
  }
  // The samples a read `after` waits to be learned.
  std::uint64_t SamplesReadAfter(const ReadAfter& after) const {
    return after.min_learned.has_value() ? *after.min_learned
                                         : AcknowledgedBefore(after);
  }
  // The figures' wait (stats, metric): as CatchUpAcknowledged, without an
  // error — they answer as of what is learned.
  void CatchUpForFigures(const ReadAfter& figures) const {
    learn_stage_.WaitLearned(AcknowledgedBefore(figures), figures.deadline);
  }
  // NOT_FOUND once deleted; UNAVAILABLE once moved away; the learning
  // error once learning failed.
  absl::Status CheckWritable() const;
  // Schedules the next group's write (LearnBatcher::TakeGroup) on the
  // write queue, after `linger` (WriteLog::GroupLinger) for the samples
  // that arrive meanwhile.
  void DrainGroup(absl::Duration linger);
  // Writes a group of Learn streams' requests as one batch (Learn), or,
  // refused whole, each alone; then answers them.
  void WriteGroup(LearnBatcher::Group& group);
  // Gives `report` the status of the journal's next sync, run the
  // journal's learn_linger after the first report held (DeferredSync).
  void ReportWhenSynced(DeferredSync::Report report);
  // The model's prediction for each sample of `batch` as it stands, and
  // how stale each was (the cautious answers).
  absl::Status PredictBefore(const ValidatedSamples& batch,
                             std::vector<Prediction>* before,
                             std::vector<absl::Duration>* learn_lag) const;
  // Appends a take-over record to the model's log for each piece of its
  // background work learning found done (LearnStage::TakeOversToRecord),
  // ahead of the Learn stream's write that calls it: the work takes over
  // at that write's first sample, and learning never waits for it.
  void RecordDoneWork();
  // How a write's batch takes over (WriteOptions::take_overs): a Learn
  // stream's where recorded, never waiting; an Ingest batch's at fixed
  // counts, keeping the model's schedule however large the batch.
  BatchTakeOvers TakeOversOf(const WriteOptions& options) const;
  // What JournalLog lets wait before a write waits for learning.
  static JournalLog::Backlog LogBacklog() {
    return {.streamed = kMaxUnlearnedStreamed, .batches = kMaxUnlearned};
  }
  // The header record (with the model's identity), then the model's
  // records.
  absl::Status WriteCaptured(const ModelWriter::Captured& captured,
                             RecordWriter& out, std::uint64_t* records) const;

  const std::string name_;
  const std::unique_ptr<Model> model_;
  const std::vector<std::string> input_names_;
  const absl::Time create_time_;
  // Runs the deferred fsyncs beside the write queue, not in it: appends go
  // on meanwhile (JournalFile::SyncIfDirty fsyncs outside its lock).
  WorkerPool* const write_pool_;
  const std::shared_ptr<SerialQueue> writes_;
  LearnBatcher learn_batcher_;
  DeferredSync deferred_sync_;
  LearnStage learn_stage_;
  ModelWriter writer_;
  AdmissionGate queued_samples_;
  AdmissionGate predictions_in_flight_;
  AnswerErrors answer_errors_;
  AheadErrors ahead_errors_;

  // A single server's log: the journal (null: in memory only), attached
  // before the model is served (creation or recovery), then fixed. In
  // cluster mode it records only a deletion.
  std::shared_ptr<JournalLog> journal_log_;
  // Where Learn and Refit go: journal_log_, or the cluster's log.
  std::shared_ptr<WriteLog> write_log_;

  // The snapshot bookkeeping, read without locks (/metrics and the
  // snapshot schedule must not wait for a write): the samples and time of
  // the last snapshot.
  std::atomic<std::uint64_t> samples_at_snapshot_{0};
  std::atomic<std::int64_t> snapshot_unix_nanos_{
      absl::ToUnixNanos(absl::Now())};
  std::atomic<bool> moved_{false};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_HOSTED_MODEL_H_
