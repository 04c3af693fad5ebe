#ifndef STREAMREG_SERVER_STORAGE_SNAPSHOT_READER_H_
#define STREAMREG_SERVER_STORAGE_SNAPSHOT_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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

}  // namespace streamreg

#endif  // STREAMREG_SERVER_STORAGE_SNAPSHOT_READER_H_
