#include "server/storage/snapshot_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/io/record_reader.h"
#include "spdlog/spdlog.h"

namespace streamreg {

absl::Status ReadSnapshotRecords(
    absl::string_view contents, const std::string& name, std::uint64_t lsn,
    std::function<void(absl::string_view)> done_with, SnapshotRecords* out) {
  *out = SnapshotRecords{};
  RecordReader reader(contents, name);
  RecordType type;
  absl::string_view payload;
  std::uint64_t records = 0;
  for (;;) {
    const RecordReader::Result result = reader.Next(&type, &payload);
    if (result == RecordReader::Result::kEnd) {
      return absl::DataLossError(
          absl::StrCat(name, ": ends before its end record"));
    }
    if (result != RecordReader::Result::kRecord) return reader.status();
    if (type == kSnapshotEndRecord) break;
    ++records;
    if (done_with) done_with(payload);
    if (type == kSnapshotHeaderRecord && records == 1) {
      out->header = payload;
    } else if (type == kModelStateRecord && records == 2) {
      out->model.state = payload;
    } else if (type == kSnapshotBaseRecord && records == 3) {
      out->model.base = payload;
    } else if (type == kStoreRowsRecord && records > 2 &&
               out->model.indexes.empty() && out->model.index_changes.empty()) {
      out->model.rows.push_back(payload);
    } else if (type == kIndexChangesRecord && !out->model.base.empty()) {
      out->model.index_changes.push_back(payload);
    } else if (type == kIndexStructureRecord && records > 2) {
      out->model.indexes.push_back(payload);
    } else {
      return reader.Malformed("unexpected record in a snapshot");
    }
  }
  std::uint64_t end_lsn = 0, end_records = 0;
  if (absl::Status status = DecodeSnapshotEnd(payload, &end_lsn, &end_records);
      !status.ok()) {
    return reader.Malformed(status.message());
  }
  if (end_lsn != lsn || end_records != records) {
    return reader.Malformed("the end record does not match the snapshot");
  }
  if (reader.Next(&type, &payload) != RecordReader::Result::kEnd) {
    return absl::DataLossError(
        absl::StrCat(name, ": data after the end record"));
  }
  out->model.done_with = std::move(done_with);
  return absl::OkStatus();
}

absl::StatusOr<RestoredSnapshot> RestoreSnapshotChain(
    const std::vector<SnapshotPart>& parts, const std::string& name) {
  if (parts.empty()) return absl::DataLossError(absl::StrCat(name, ": empty"));
  std::vector<SnapshotRecords> read(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string part =
        i == 0 ? name : absl::StrCat(name, ", increment ", i);
    if (absl::Status status = ReadSnapshotRecords(parts[i].bytes, part,
                                                  parts[i].lsn, {}, &read[i]);
        !status.ok()) {
      return status;
    }
    if (read[i].model.base.empty() != (i == 0)) {
      return absl::DataLossError(absl::StrCat(
          part, i == 0 ? ": builds on another snapshot"
                       : ": is a whole snapshot, not an increment"));
    }
  }
  if (parts.size() == 1) return RestoreSnapshot(read[0], parts[0].lsn, name);
  std::vector<ModelSnapshotRecords> increments;
  for (std::size_t i = 1; i < read.size(); ++i) {
    increments.push_back(read[i].model);
  }
  const SnapshotRecords chain{
      .header = read.back().header,
      .model = ModelSnapshotRecords::BuiltOn(read[0].model, increments)};
  return RestoreSnapshot(chain, parts.back().lsn, name);
}

absl::StatusOr<RestoredSnapshot> RestoreSnapshot(const SnapshotRecords& records,
                                                 std::uint64_t lsn,
                                                 const std::string& name) {
  RestoredSnapshot restored;
  if (absl::Status status =
          DecodeSnapshotHeader(records.header, &restored.header);
      !status.ok()) {
    return absl::DataLossError(absl::StrCat(
        name, ": the snapshot's header is malformed: ", status.message()));
  }
  if (restored.header.lsn != lsn) {
    return absl::DataLossError(
        absl::StrCat(name, ": the snapshot's header is at lsn ",
                     restored.header.lsn, ", its records at ", lsn));
  }
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Restore(restored.header.identity.config, records.model);
  if (!model.ok()) {
    return absl::DataLossError(
        absl::StrCat(name, ": snapshot ", lsn, ": ", model.status().message()));
  }
  restored.model = *std::move(model);
  for (const std::string& note : restored.model->restore_notes()) {
    spdlog::warn("event=restore_note model={} note=\"{}\"",
                 restored.header.identity.name, note);
  }
  return restored;
}

}  // namespace streamreg
