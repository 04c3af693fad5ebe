#ifndef STREAMREG_SERVER_STORAGE_SNAPSHOT_READER_H_
#define STREAMREG_SERVER_STORAGE_SNAPSHOT_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model.h"
#include "core/model/model_snapshot.h"
#include "server/storage/journal_records.h"

namespace streamreg {

// A snapshot's records (journal_records.h: a header, the model's own
// records, an end record), checked and collected: views into the bytes
// they were read from.
struct SnapshotRecords {
  absl::string_view header;
  ModelSnapshotRecords model;
};

// Reads a whole snapshot from `contents` (a snapshot file's, or a cluster
// model's snapshot from JetStream), whose end record must name `lsn` (the
// log position it includes). `name` (the file's path) is quoted in errors:
// DATA_LOSS for anything missing, misplaced or after the end record.
// `done_with`, when set, is called with each checked rows and structure
// payload (so a mapped file's pages can go) and is handed on to
// Model::Restore.
absl::Status ReadSnapshotRecords(
    absl::string_view contents, const std::string& name, std::uint64_t lsn,
    std::function<void(absl::string_view)> done_with, SnapshotRecords* out);

// A model as a snapshot's records saved it: its hosting state (the header)
// and the engine's model, restored. DATA_LOSS naming `name` if the header
// is malformed or does not name `lsn`, or the model cannot be restored;
// restore notes are logged.
struct RestoredSnapshot {
  SnapshotHeader header;
  std::unique_ptr<Model> model;
};
absl::StatusOr<RestoredSnapshot> RestoreSnapshot(const SnapshotRecords& records,
                                                 std::uint64_t lsn,
                                                 const std::string& name);

// A whole snapshot and the increments built on it (Model::
// CaptureSnapshotSince), oldest first: each one's bytes, and the log
// position its end record names.
struct SnapshotPart {
  absl::string_view bytes;
  std::uint64_t lsn = 0;
};
// The model as of the last part: its header and state, the first part's
// index structures with the stored samples of each part in turn
// (ModelSnapshotRecords::BuiltOn). DATA_LOSS naming `name` (and the
// increment) for a part that cannot be read, a first part that is not
// whole, or a later one that is.
absl::StatusOr<RestoredSnapshot> RestoreSnapshotChain(
    const std::vector<SnapshotPart>& parts, const std::string& name);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_STORAGE_SNAPSHOT_READER_H_
