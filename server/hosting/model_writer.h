#ifndef STREAMREG_SERVER_HOSTING_MODEL_WRITER_H_
#define STREAMREG_SERVER_HOSTING_MODEL_WRITER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/model/model.h"
#include "core/model/model_snapshot.h"
#include "server/hosting/learn_outcome.h"
#include "server/hosting/learn_stage.h"
#include "server/hosting/recent_sample_ids.h"
#include "server/hosting/write_ticket.h"
#include "server/storage/journal_file.h"
#include "server/storage/journal_records.h"

namespace streamreg {

// The one place a hosted model's writes change it, in the order its log
// gives them (docs/architecture.md, "One sample, from the wire to the
// index"). A batch is sequenced — a sample whose id the model learned
// recently is a duplicate and dropped, the sample limit is checked, the
// others are numbered on from the model's count — then recorded where the
// write says (a single server's journal appends the fresh samples; in
// cluster mode the entry is in the replicated log already, and nothing is
// appended), then handed to the LearnStage, which learns it in order off
// the caller's thread. A refit runs in order with the samples; a
// deletion is recorded the same way. Recovery goes through it too
// (Restore, Replay), and a snapshot captures its bookkeeping with the
// model's state. Thread-safe: one write at a time.
class ModelWriter {
 public:
  struct Limits {
    std::uint64_t max_samples = 0;  // stored samples; 0 = no limit
    std::size_t dedup_window = 0;   // ids remembered
  };
  // `model` and `stage` must outlive the writer; `keep_alive` gives what
  // the learning work holds until it is done (the owner).
  ModelWriter(std::string name, Model* model, LearnStage* stage, Limits limits,
              std::function<std::shared_ptr<const void>()> keep_alive);
  ModelWriter(const ModelWriter&) = delete;
  ModelWriter& operator=(const ModelWriter&) = delete;

  const std::string& name() const { return name_; }
  // The model it writes (what a batch is checked against: Model::Validate).
  const Model& model() const { return *model_; }

  // Where a write is recorded, as it is applied: an entry of the
  // replicated log (cluster mode), or a single server's journal.
  struct Record {
    // The log entry applied (cluster mode; 0: none), noted as applied
    // whatever comes of it — a refusal is every replica's.
    std::uint64_t log_sequence = 0;
    // The journal the write is appended to first — for a batch, its fresh
    // samples, the first numbered on from the model's count, none for a
    // batch of duplicates only; its error refuses the write. Null: none
    // (in memory only; in the replicated log already).
    JournalFile* journal = nullptr;
    // The batch's fsync left to the journal's owner (JournalFile::
    // AppendSamples' defer_sync).
    bool defer_sync = false;
  };

  struct ApplyOptions {
    Record record;
    // What the batch holds (null: nothing): its announcement is taken
    // over where the samples are queued for learning (WriteTicket).
    WriteTicket* ticket = nullptr;
    // The learn stage's bound before this write waits for learning.
    std::size_t max_unlearned = 0;
    // How the batch takes over (WriteOptions::take_overs).
    BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded;
  };
  // Sequences `batch` (checked where it arrived), records it and queues
  // its fresh samples for learning; all or nothing. NOT_FOUND once
  // deleted; RESOURCE_EXHAUSTED past the sample limit; the learning error
  // once learning failed; the journal's error.
  absl::StatusOr<LearnOutcome> ApplySamples(const ValidatedSamples& batch,
                                            const ApplyOptions& options);
  // The batch refit (Model::Refit), recorded, then run once every sample
  // applied before it is learned.
  absl::Status ApplyRefit(
      const std::function<void(std::size_t, std::size_t)>& progress,
      const Record& record);
  // A take-over record (Model::ApplyTakeOverRecord), recorded and applied
  // in order with the samples: the learning thread applies it once every
  // sample applied before it is learned; the call does not wait for that.
  absl::Status ApplyTakeOver(const TakeOverKey& key, const Record& record);
  // Records the deletion (in `journal`, fsynced; null: nowhere); later
  // writes fail with NOT_FOUND.
  absl::Status Delete(JournalFile* journal);
  bool deleted() const { return deleted_.load(std::memory_order_acquire); }
  // Notes a log entry applied that changed nothing (cluster mode: the
  // create entry, one that could not be decoded).
  void NoteApplied(std::uint64_t log_sequence);
  // The last log entry applied (0: none; after Restore, the snapshot's).
  std::uint64_t log_applied() const;

  // Recovery: the bookkeeping a snapshot saved, then a single server's
  // journal records after it, in order (learned at once). DATA_LOSS for a
  // record that does not fit (its lsn named).
  void Restore(const SnapshotHeader& header);
  absl::Status Replay(const JournalFile::LogEntry& entry);

  // The bookkeeping and the model's state as of the last write recorded,
  // once learning has caught up with every write applied — in `journal`
  // (a single server's: as of its position; nothing to capture where its
  // last snapshot is, or once the model is deleted) or, without one, as
  // of the last log entry applied. Writes wait meanwhile (at most until
  // the stage's backlog is learned). With `since`, the state is built on
  // that snapshot if the model can (Model::CaptureSnapshotSince), else
  // whole.
  struct Captured {
    SnapshotHeader header;  // all but its identity, the owner's
    ModelSnapshot state;
    // The journal's position it was captured at (with one), where its
    // snapshot goes (JournalFile::WriteSnapshot).
    JournalFile::Position journal_position;
  };
  absl::StatusOr<std::optional<Captured>> Capture(
      JournalFile* journal, const SnapshotBase* since = nullptr);

  // Samples numbered so far (without the lock: what the snapshot
  // schedule and /metrics read).
  std::uint64_t samples_logged() const {
    return samples_logged_.load(std::memory_order_acquire);
  }
  std::uint64_t duplicate_samples() const {
    return duplicate_samples_.load(std::memory_order_relaxed);
  }

 private:
  // NOT_FOUND once deleted; the learning error once learning failed.
  absl::Status CheckWritable() const;

  const std::string name_;
  Model* const model_;
  LearnStage* const stage_;
  const Limits limits_;
  const std::function<std::shared_ptr<const void>()> keep_alive_;

  mutable Mutex mutex_;
  RecentSampleIds recent_ids_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t num_samples_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t log_applied_ ABSL_GUARDED_BY(mutex_) = 0;
  std::atomic<std::uint64_t> samples_logged_{0};
  std::atomic<std::uint64_t> duplicate_samples_{0};
  std::atomic<bool> deleted_{false};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_MODEL_WRITER_H_
