#ifndef STREAMREG_CORE_MODEL_MODEL_SNAPSHOT_H_
#define STREAMREG_CORE_MODEL_MODEL_SNAPSHOT_H_

#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/index/cover_tree.h"
#include "core/io/record_format.h"
#include "core/io/record_writer.h"
#include "core/metric/gradient_statistics.h"
#include "core/metric/mlkr_map.h"
#include "core/model/random_feature_refresh.h"
#include "core/model/sample_store.h"

namespace streamreg {

// The record types of a model's own state in a snapshot file (the file's
// other records belong to whoever writes it: server/storage/journal_records.h
// uses the other numbers).
inline constexpr RecordType kModelStateRecord{11};
inline constexpr RecordType kStoreRowsRecord{12};
inline constexpr RecordType kIndexStructureRecord{14};
inline constexpr RecordType kSnapshotBaseRecord{15};
inline constexpr RecordType kIndexChangesRecord{16};

// What a snapshot holds that a later one may build on
// (Model::CaptureSnapshotSince): the samples it had learned and stored,
// and, of the whole snapshot at the start of its chain (itself, if it is
// whole), the rows its trees cover and each index's generation (its count
// of take-overs) they are of. In memory only (not encoded): each live
// tree's mark at the snapshot's capture, of those whose structure the
// snapshot holds, whole or as changes (others' marks are of no tree).
struct SnapshotBase {
  std::uint64_t samples_seen = 0;
  std::uint64_t rows = 0;
  std::uint64_t tree_rows = 0;
  std::vector<std::uint64_t> index_generations;   // AllIndexes() order
  std::vector<CoverTree::ChangeMark> tree_marks;  // AllIndexes() order

  std::string Encode() const;
  bool Decode(absl::string_view payload);
};

// A model's whole state at one sample count, taken by Model::CaptureSnapshot
// in microseconds (the learner pauses only for that) and written later, on
// any thread, while the model goes on learning: the small state is encoded
// at capture, the stored samples are shared copy-on-write, and a metric
// refresh still running is waited for by Write, not by the learner.
//
// On disk (core/io/record_format.h) it is one kModelStateRecord — every
// running sum, count, selection error, standardization, index transform
// and take-over point, the reservoir's random state — followed by
// kStoreRowsRecord records of up to 4096 samples each (a metric refresh in
// progress is saved as its job when the store is unbounded and its result
// was not in yet at capture — restarted on restore, taking over at the
// same sample count — and otherwise as its result, which Write then waits
// for):
//   first slot u64, count u32, then per slot: x (d doubles), y (m doubles),
//   sample id u64;
// then, per index, kIndexStructureRecord records with its live cover
// tree's structure (model_state_codec.h; the nodes shared copy-on-write at
// capture like the rows), so that a restore reads the trees back instead
// of building them by insertion, and, for each of the n indexes whose
// background rebuild had caught up at capture, its new tree's structure
// numbered n + i (restored, it takes over without being built again).
// Snapshots without them (older ones) still restore, building the trees.
// Model::Restore reads them back into a model that then learns, predicts
// and reports exactly as the one captured would have.
//
// A snapshot built on an earlier one (Model::CaptureSnapshotSince: a
// whole one, or one built on a whole one, and so on: a chain) holds the
// kModelStateRecord, then one kSnapshotBaseRecord (its base:
// SnapshotBase::Encode), then the rows stored since the base only, then
// per index whose live tree is still the one the base saved (and the base
// held it, whole or as changes), kIndexChangesRecord records with the
// nodes written since (model_state_codec.h): restored together with the
// records of the snapshots it builds on (ModelSnapshotRecords::BuiltOn),
// each tree is the whole one's with every link's changes applied in turn,
// and where a link has none for it, the rows stored after the last it had
// inserted.
class ModelSnapshot {
 public:
  // Samples the model had learned at capture.
  std::uint64_t samples_seen() const { return samples_seen_; }
  std::size_t samples_stored() const { return rows_.x.size; }
  // What a later snapshot may build on this one as.
  SnapshotBase AsBase() const;
  // The snapshot it builds on, if any.
  const std::optional<SnapshotBase>& builds_on() const { return builds_on_; }
  // Rebuilt trees (of rebuilds caught up at capture) the snapshot holds.
  std::size_t rebuilt_trees() const;
  // Whether a metric refresh was in progress at capture, and whether it is
  // saved as its job (computed again on restore) rather than its result.
  bool refresh_in_progress() const {
    return !refresh_job_.empty() || refresh_.has_value();
  }
  bool refresh_saved_as_job() const { return !refresh_job_.empty(); }

  // Appends the records (adding their number to *records); waits for a
  // refresh in progress at capture.
  absl::Status Write(RecordWriter& out, std::uint64_t* records) const;

 private:
  friend class Model;
  ModelSnapshot() = default;

  std::uint64_t samples_seen_ = 0;
  std::optional<SnapshotBase> builds_on_;
  std::vector<std::uint64_t> index_generations_;  // AllIndexes() order
  std::string state_;  // kModelStateRecord without the refresh
  // A refresh in progress: its job (an unbounded store still holds its
  // rows, so a restored model starts it again) or, for other stores, its
  // result to come.
  std::string refresh_job_;
  std::optional<std::shared_future<GradientStatistics>> refresh_;
  // An MLKR fit in progress: its result, waited for likewise.
  std::optional<std::shared_future<std::vector<MlkrMap>>> mlkr_refresh_;
  // A random-feature base's rebuild in progress, as far as it got.
  std::optional<RandomFeatureRefresh::Built> random_refresh_;
  SampleStore::Rows rows_;
  std::vector<CoverTree::Structure> indexes_;  // AllIndexes() order
  // Of a snapshot built on another: each live tree's changes since the
  // base, where it has them (AllIndexes() order).
  std::vector<std::optional<CoverTree::Changes>> index_changes_;
  // Each live tree's mark at capture (AllIndexes() order).
  std::vector<CoverTree::ChangeMark> tree_marks_;
  // Per index, its rebuilt tree (ShareRebuiltStructure).
  std::vector<std::optional<CoverTree::Structure>> rebuilt_;
};

// The records of a snapshot as read back (views into the file).
struct ModelSnapshotRecords {
  absl::string_view state;
  // The kSnapshotBaseRecord of a snapshot built on another (empty for a
  // whole one).
  absl::string_view base;
  std::vector<absl::string_view> rows;
  std::vector<absl::string_view> indexes;  // kIndexStructureRecord payloads
  // A snapshot built on another: its kIndexChangesRecord payloads.
  std::vector<absl::string_view> index_changes;
  // A chain (BuiltOn): each later link's index_changes, oldest first.
  std::vector<std::vector<absl::string_view>> chain_index_changes;
  // Called, when set, with each rows and structure payload once
  // Model::Restore has read it (ReadableFile::DoneWith, for a file read
  // record by record).
  std::function<void(absl::string_view)> done_with;

  // What Model::Restore reads for the last of `later` (a chain built on
  // `whole`, oldest first): its state and base record, the rows of each in
  // turn, whole's index structures and each later one's changes to them.
  static ModelSnapshotRecords BuiltOn(
      const ModelSnapshotRecords& whole,
      const std::vector<ModelSnapshotRecords>& later);
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_SNAPSHOT_H_
