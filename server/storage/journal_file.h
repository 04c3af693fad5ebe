#ifndef STREAMREG_SERVER_STORAGE_JOURNAL_FILE_H_
#define STREAMREG_SERVER_STORAGE_JOURNAL_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/io/file_system.h"
#include "core/io/record_writer.h"
#include "core/model/model.h"
#include "core/model/model_snapshot.h"
#include "server/storage/journal_records.h"
#include "server/storage/sync_policy.h"
#include "server/telemetry/latency_histogram.h"

namespace streamreg {

// The files of one model in the data directory (models/<name>/):
//
//   wal-<segment, 20 digits>.log     the write-ahead log, in segments
//   snapshot-<lsn, 20 digits>.snap   the newest full state, covering the
//                                    log up to that lsn
//   *.tmp                            a snapshot being written
//
// (record formats: core/io/record_format.h.) Every write the model
// acknowledges is first appended here (and fsynced, under --sync=always);
// a segment past segment_bytes is fsynced and closed and the next one
// begun. A snapshot is written to a .tmp file, fsynced, renamed into place
// and the directory fsynced; only then are the segments and snapshot it
// replaces removed, so a crash at any point leaves either the old or the
// new snapshot with every log record after it. Thread-safe: appends (one
// writer at a time, the model's), the syncer and a snapshot writer may run
// at once.
class JournalFile {
 public:
  struct Options {
    FileSystem* file_system = FileSystem::Default();
    SyncPolicy sync;
    std::uint64_t segment_bytes = 64 << 20;
    // Where each fsync of the log is timed (none: not timed).
    LatencyHistogram* fsync_latency = nullptr;
    // How long a Learn stream's sample may wait to be reported durable,
    // when each append is fsynced (learn_linger()).
    absl::Duration learn_linger = absl::ZeroDuration();
  };

  // Creates the directory and its first segment holding the create record,
  // all fsynced (the model exists once this returns).
  static absl::StatusOr<std::unique_ptr<JournalFile>> Create(
      std::string directory, Options options, const ModelIdentity& identity);

  // A log record read back.
  struct LogEntry {
    RecordType type;
    std::uint64_t lsn;
    absl::string_view payload;
  };
  // What a model directory holds, read back (views into the mapped files).
  struct Contents {
    std::vector<std::unique_ptr<ReadableFile>> files;
    bool has_snapshot = false;
    std::uint64_t snapshot_lsn = 0;
    absl::string_view snapshot_header;
    ModelSnapshotRecords snapshot;
    std::vector<LogEntry> entries;  // after the snapshot, in order
    std::uint64_t last_lsn = 0;
    std::vector<std::uint64_t> segments;   // present, ascending
    std::vector<std::uint64_t> snapshots;  // lsns present, ascending
  };
  // Reads a model's directory for recovery: removes unfinished snapshots
  // and cuts a torn tail off the last segment (it was never acknowledged,
  // or is within the --sync=interval window). Anything else damaged — a bad
  // record before the last one, a damaged older segment or snapshot, a gap
  // in the lsns — is DATA_LOSS naming the file and offset.
  static absl::StatusOr<Contents> Recover(const std::string& directory,
                                          FileSystem* file_system);
  // Goes on after Recover; appends go to a new segment.
  static absl::StatusOr<std::unique_ptr<JournalFile>> Continue(
      std::string directory, Options options, const Contents& contents);

  ~JournalFile();

  // Appends (and under --sync=always fsyncs) one record. Errors name the
  // file: RESOURCE_EXHAUSTED for a full disk (the record is undone and the
  // log goes on once there is room), UNAVAILABLE otherwise. A failed fsync
  // leaves the log failed — every later append returns that error — since
  // what reached the disk is then unknown.
  // A batch learned at fixed counts (BatchTakeOvers) is a
  // kSamplesAtFixedCountsRecord. With `defer_sync` not fsynced under
  // --sync=always either: the caller has it synced later (SyncIfDirty)
  // and reports it durable only then.
  absl::Status AppendSamples(
      std::uint64_t first_sequence, std::span<const Sample> samples,
      BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded,
      bool defer_sync = false);
  absl::Status AppendRefit();
  // Never fsynced by itself: the samples the work takes over at come after
  // it, and their fsync (or the interval syncer's) makes it durable with
  // them.
  absl::Status AppendTakeOver(const TakeOverKey& key);
  // Always fsynced, whatever the policy.
  absl::Status AppendDelete();
  // fsyncs what was appended since the last sync (the interval syncer, a
  // deferred sync).
  absl::Status SyncIfDirty();

  // Where a snapshot captured now begins: the last lsn appended and the
  // segment being written. The caller takes it together with the model's
  // state, under the model's write lock.
  struct Position {
    std::uint64_t lsn = 0;
    std::uint64_t segment = 0;
  };
  Position position() const;
  std::uint64_t snapshot_lsn() const;
  // How long a Learn stream's samples may wait to be reported durable, so
  // that those of the meanwhile share one fsync (AppendSamples'
  // defer_sync): under --sync=always, Options::learn_linger; under
  // --sync=interval none (an append costs no fsync).
  absl::Duration learn_linger() const {
    return options_.sync.mode == SyncPolicy::Mode::kAlways
               ? options_.learn_linger
               : absl::ZeroDuration();
  }
  // Writes a snapshot covering the log up to position.lsn: `write` adds
  // its records (and counts them); then the files it replaces are removed.
  absl::Status WriteSnapshot(
      Position position,
      const std::function<absl::Status(RecordWriter&, std::uint64_t*)>& write);

  const std::string& directory() const { return directory_; }
  // A failure that stops every later append (OK while healthy).
  absl::Status failure() const;
  std::uint64_t bytes_appended() const;

 private:
  JournalFile(std::string directory, Options options);
  absl::Status OpenSegment(std::uint64_t segment)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Assigns the next lsn (patched into the payload's first 8 bytes),
  // appends, rolls over and syncs as configured.
  absl::Status Append(RecordType type, std::string payload, bool sync)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  absl::Status Fail(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Syncs a log file (a RecordWriter or a WritableFile), timing it.
  template <typename Syncable>
  absl::Status TimedSync(Syncable& log) const;
  std::string SegmentPath(std::uint64_t segment) const;
  std::string SnapshotPath(std::uint64_t lsn) const;

  const std::string directory_;
  const Options options_;

  // Appends, syncs and snapshots' bookkeeping may come from several
  // threads (the model's writer, the syncer, the snapshot writer).
  mutable Mutex mutex_ ABSL_ACQUIRED_AFTER(snapshot_mutex_);
  std::shared_ptr<WritableFile> file_ ABSL_GUARDED_BY(mutex_);
  std::unique_ptr<RecordWriter> writer_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t segment_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t last_lsn_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t snapshot_lsn_ ABSL_GUARDED_BY(mutex_) = 0;
  // Older segments still on disk, and the lsns of the snapshots on disk.
  std::vector<std::uint64_t> segments_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::uint64_t> snapshots_ ABSL_GUARDED_BY(mutex_);
  bool dirty_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t bytes_appended_ ABSL_GUARDED_BY(mutex_) = 0;

  Mutex snapshot_mutex_;  // one snapshot at a time
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_STORAGE_JOURNAL_FILE_H_
