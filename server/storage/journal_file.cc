#include "server/storage/journal_file.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/io/record_reader.h"
#include "server/storage/snapshot_reader.h"

namespace streamreg {
namespace {

constexpr absl::string_view kSegmentPrefix = "wal-";
constexpr absl::string_view kSegmentSuffix = ".log";
constexpr absl::string_view kSnapshotPrefix = "snapshot-";
constexpr absl::string_view kSnapshotSuffix = ".snap";
constexpr absl::string_view kTemporarySuffix = ".tmp";

// The number in "<prefix><number><suffix>", if name is one.
bool ParseNumbered(absl::string_view name, absl::string_view prefix,
                   absl::string_view suffix, std::uint64_t* number) {
  if (!absl::ConsumePrefix(&name, prefix) ||
      !absl::ConsumeSuffix(&name, suffix)) {
    return false;
  }
  return absl::SimpleAtoi(name, number);
}

std::string Numbered(absl::string_view prefix, std::uint64_t number,
                     absl::string_view suffix) {
  return absl::StrFormat("%s%020d%s", prefix, number, suffix);
}

// Reads a snapshot file whole: header, state, rows, end — or DATA_LOSS.
// Each checked record's pages are let go (ReadableFile::DoneWith) until
// Model::Restore reads it, so the file is never resident all at once.
absl::Status ReadSnapshot(const std::string& path, const ReadableFile& file,
                          std::uint64_t lsn, JournalFile::Contents* out) {
  SnapshotRecords records;
  if (absl::Status status = ReadSnapshotRecords(
          file.contents(), path, lsn,
          [&file](absl::string_view payload) { file.DoneWith(payload); },
          &records);
      !status.ok()) {
    return status;
  }
  out->has_snapshot = true;
  out->snapshot_lsn = lsn;
  out->snapshot_header = records.header;
  out->snapshot = std::move(records.model);
  return absl::OkStatus();
}

}  // namespace

JournalFile::JournalFile(std::string directory, Options options)
    : directory_(std::move(directory)), options_(options) {}

JournalFile::~JournalFile() {
  if (file_ != nullptr) (void)file_->Close();
}

std::string JournalFile::SegmentPath(std::uint64_t segment) const {
  return absl::StrCat(directory_, "/",
                      Numbered(kSegmentPrefix, segment, kSegmentSuffix));
}

std::string JournalFile::SnapshotPath(std::uint64_t lsn) const {
  return absl::StrCat(directory_, "/",
                      Numbered(kSnapshotPrefix, lsn, kSnapshotSuffix));
}

absl::Status JournalFile::OpenSegment(std::uint64_t segment) {
  FileSystem* fs = options_.file_system;
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      fs->NewWritableFile(SegmentPath(segment));
  if (!file.ok()) return file.status();
  if (absl::Status status = fs->SyncDirectory(directory_); !status.ok()) {
    return status;
  }
  if (file_ != nullptr) segments_.push_back(segment_);
  file_ = *std::move(file);
  writer_ = std::make_unique<RecordWriter>(file_.get());
  segment_ = segment;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<JournalFile>> JournalFile::Create(
    std::string directory, Options options, const ModelIdentity& identity) {
  FileSystem* fs = options.file_system;
  if (absl::Status status = fs->CreateDirectories(directory); !status.ok()) {
    return status;
  }
  std::unique_ptr<JournalFile> journal(
      new JournalFile(std::move(directory), options));
  MutexLock lock(&journal->mutex_);
  if (absl::Status status = journal->OpenSegment(1); !status.ok()) {
    return status;
  }
  if (absl::Status status =
          journal->Append(kCreateRecord, EncodeCreate(0, identity),
                          /*sync=*/true);
      !status.ok()) {
    return status;
  }
  // The model's directory entry itself.
  const std::string parent =
      journal->directory_.substr(0, journal->directory_.rfind('/'));
  if (absl::Status status = fs->SyncDirectory(parent); !status.ok()) {
    return status;
  }
  return journal;
}

absl::StatusOr<JournalFile::Contents> JournalFile::Recover(
    const std::string& directory, FileSystem* fs) {
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(directory);
  if (!names.ok()) return names.status();
  Contents contents;
  for (const std::string& name : *names) {
    std::uint64_t number = 0;
    if (absl::EndsWith(name, kTemporarySuffix)) {
      if (absl::Status status = fs->RemoveFile(directory + "/" + name);
          !status.ok()) {
        return status;
      }
    } else if (ParseNumbered(name, kSegmentPrefix, kSegmentSuffix, &number)) {
      contents.segments.push_back(number);
    } else if (ParseNumbered(name, kSnapshotPrefix, kSnapshotSuffix, &number)) {
      contents.snapshots.push_back(number);
    }
  }
  std::sort(contents.segments.begin(), contents.segments.end());
  std::sort(contents.snapshots.begin(), contents.snapshots.end());

  if (!contents.snapshots.empty()) {
    const std::uint64_t lsn = contents.snapshots.back();
    const std::string path = absl::StrCat(
        directory, "/", Numbered(kSnapshotPrefix, lsn, kSnapshotSuffix));
    absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
    if (!file.ok()) return file.status();
    if (absl::Status status = ReadSnapshot(path, **file, lsn, &contents);
        !status.ok()) {
      return status;
    }
    contents.files.push_back(*std::move(file));
  }

  std::uint64_t last_lsn = contents.snapshot_lsn;
  for (std::size_t i = 0; i < contents.segments.size(); ++i) {
    const std::string path = absl::StrCat(
        directory, "/",
        Numbered(kSegmentPrefix, contents.segments[i], kSegmentSuffix));
    absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
    if (!file.ok()) return file.status();
    RecordReader reader((*file)->contents(), path);
    const bool last_segment = i + 1 == contents.segments.size();
    RecordType type;
    absl::string_view payload;
    for (;;) {
      const RecordReader::Result result = reader.Next(&type, &payload);
      if (result == RecordReader::Result::kEnd) break;
      if (result == RecordReader::Result::kCorrupt ||
          (result == RecordReader::Result::kTornTail && !last_segment)) {
        return reader.status();
      }
      if (result == RecordReader::Result::kTornTail) {
        if (absl::Status status =
                fs->TruncateFile(path, reader.end_of_records());
            !status.ok()) {
          return status;
        }
        break;
      }
      std::uint64_t lsn = 0;
      if (absl::Status status = DecodeLsn(payload, &lsn); !status.ok()) {
        return reader.Malformed(status.message());
      }
      if (lsn <= contents.snapshot_lsn) continue;  // in the snapshot
      if (lsn != last_lsn + 1) {
        return reader.Malformed(absl::StrCat("lsn ", lsn, " follows lsn ",
                                             last_lsn,
                                             " (log records are missing)"));
      }
      last_lsn = lsn;
      contents.entries.push_back(LogEntry{type, lsn, payload});
    }
    contents.files.push_back(*std::move(file));
  }
  contents.last_lsn = last_lsn;
  return contents;
}

absl::StatusOr<std::unique_ptr<JournalFile>> JournalFile::Continue(
    std::string directory, Options options, const Contents& contents) {
  std::unique_ptr<JournalFile> journal(
      new JournalFile(std::move(directory), options));
  MutexLock lock(&journal->mutex_);
  journal->last_lsn_ = contents.last_lsn;
  journal->snapshot_lsn_ = contents.snapshot_lsn;
  journal->segments_ = contents.segments;
  journal->snapshots_ = contents.snapshots;
  const std::uint64_t next =
      contents.segments.empty() ? 1 : contents.segments.back() + 1;
  if (absl::Status status = journal->OpenSegment(next); !status.ok()) {
    return status;
  }
  return journal;
}

absl::Status JournalFile::Fail(absl::Status status) {
  failure_ = absl::UnavailableError(
      absl::StrCat("the write-ahead log in ", directory_,
                   " failed and takes no more writes until the server "
                   "restarts: ",
                   status.message()));
  return failure_;
}

template <typename Syncable>
absl::Status JournalFile::TimedSync(Syncable& log) const {
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = log.Sync();
  if (options_.fsync_latency != nullptr) {
    options_.fsync_latency->Observe(std::chrono::steady_clock::now() - start);
  }
  return status;
}

absl::Status JournalFile::Append(RecordType type, std::string payload,
                                 bool sync) {
  if (!failure_.ok()) return failure_;
  if (writer_->size() >= options_.segment_bytes) {
    if (absl::Status status = TimedSync(*writer_); !status.ok()) {
      return Fail(status);
    }
    if (absl::Status status = OpenSegment(segment_ + 1); !status.ok()) {
      return Fail(status);
    }
  }
  const std::uint64_t lsn = last_lsn_ + 1;
  std::memcpy(payload.data(), &lsn, sizeof lsn);
  if (absl::Status status = writer_->Add(type, payload); !status.ok()) {
    if (writer_->broken()) return Fail(status);
    return status;  // undone: the log goes on when there is room
  }
  last_lsn_ = lsn;
  bytes_appended_ += kRecordHeaderSize + payload.size();
  if (sync) {
    if (absl::Status status = TimedSync(*writer_); !status.ok()) {
      return Fail(status);
    }
    dirty_ = false;
  } else {
    dirty_ = true;
  }
  return absl::OkStatus();
}

absl::Status JournalFile::AppendSamples(std::uint64_t first_sequence,
                                        std::span<const Sample> samples,
                                        BatchTakeOvers take_overs,
                                        bool defer_sync) {
  std::string payload = EncodeSamples(0, first_sequence, samples);
  MutexLock lock(&mutex_);
  return Append(take_overs == BatchTakeOvers::kAtFixedCounts
                    ? kSamplesAtFixedCountsRecord
                    : kSamplesRecord,
                std::move(payload),
                options_.sync.mode == SyncPolicy::Mode::kAlways && !defer_sync);
}

absl::Status JournalFile::AppendRefit() {
  MutexLock lock(&mutex_);
  return Append(kRefitRecord, EncodeLsnOnly(0),
                options_.sync.mode == SyncPolicy::Mode::kAlways);
}

absl::Status JournalFile::AppendTakeOver(const TakeOverKey& key) {
  MutexLock lock(&mutex_);
  return Append(kTakeOverRecord, EncodeTakeOver(0, key), /*sync=*/false);
}

absl::Status JournalFile::AppendDelete() {
  MutexLock lock(&mutex_);
  return Append(kDeleteRecord, EncodeLsnOnly(0), /*sync=*/true);
}

absl::Status JournalFile::SyncIfDirty() {
  std::shared_ptr<WritableFile> file;
  {
    MutexLock lock(&mutex_);
    if (!failure_.ok()) return failure_;
    if (!dirty_) return absl::OkStatus();
    dirty_ = false;
    file = file_;
  }
  // fsync outside the lock: appends go on meanwhile.
  if (absl::Status status = TimedSync(*file); !status.ok()) {
    MutexLock lock(&mutex_);
    return Fail(status);
  }
  return absl::OkStatus();
}

JournalFile::Position JournalFile::position() const {
  MutexLock lock(&mutex_);
  return Position{last_lsn_, segment_};
}

std::uint64_t JournalFile::snapshot_lsn() const {
  MutexLock lock(&mutex_);
  return snapshot_lsn_;
}

absl::Status JournalFile::failure() const {
  MutexLock lock(&mutex_);
  return failure_;
}

std::uint64_t JournalFile::bytes_appended() const {
  MutexLock lock(&mutex_);
  return bytes_appended_;
}

absl::Status JournalFile::WriteSnapshot(
    Position position,
    const std::function<absl::Status(RecordWriter&, std::uint64_t*)>& write) {
  MutexLock one_at_a_time(&snapshot_mutex_);
  FileSystem* fs = options_.file_system;
  const std::string path = SnapshotPath(position.lsn);
  const std::string temporary = absl::StrCat(path, kTemporarySuffix);
  auto written = [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        fs->NewWritableFile(temporary);
    if (!file.ok()) return file.status();
    RecordWriter writer(file->get());
    std::uint64_t records = 0;
    if (absl::Status status = write(writer, &records); !status.ok()) {
      return status;
    }
    if (absl::Status status = writer.Add(
            kSnapshotEndRecord, EncodeSnapshotEnd(position.lsn, records));
        !status.ok()) {
      return status;
    }
    if (absl::Status status = writer.Sync(); !status.ok()) return status;
    if (absl::Status status = (*file)->Close(); !status.ok()) return status;
    if (absl::Status status = fs->Rename(temporary, path); !status.ok()) {
      return status;
    }
    return fs->SyncDirectory(directory_);
  }();
  if (!written.ok()) {
    (void)fs->RemoveFile(temporary);
    return written;
  }
  // The snapshot is durable: what it replaces can go.
  std::vector<std::string> obsolete;
  {
    MutexLock lock(&mutex_);
    snapshot_lsn_ = std::max(snapshot_lsn_, position.lsn);
    std::erase_if(segments_, [&](std::uint64_t segment) {
      if (segment >= position.segment) return false;
      obsolete.push_back(SegmentPath(segment));
      return true;
    });
    std::erase_if(snapshots_, [&](std::uint64_t lsn) {
      if (lsn >= position.lsn) return false;
      obsolete.push_back(SnapshotPath(lsn));
      return true;
    });
    snapshots_.push_back(position.lsn);
  }
  for (const std::string& file : obsolete) {
    if (absl::Status status = fs->RemoveFile(file); !status.ok()) {
      return status;
    }
  }
  return obsolete.empty() ? absl::OkStatus() : fs->SyncDirectory(directory_);
}

}  // namespace streamreg
