// ModelSnapshot::Write, Model::CaptureSnapshot and Model::Restore: a model's
// whole state out and back in (core/model/model_snapshot.h has the format,
// core/model/model_state_codec.h the bytes).
#include "core/model/model_snapshot.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"
#include "core/model/model.h"
#include "core/model/model_state_codec.h"

namespace streamreg {
namespace {

template <class T>
bool IsReady(const std::shared_future<T>& result) {
  return result.valid() &&
         result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Each index's live tree, then each one's rebuilt tree (n + i), from the
// snapshot's structure records and then its chain's changes; none if a
// record is malformed (every index is then rebuilt from the stored
// samples, and a note says so).
std::vector<CoverTree::StructureReader> ReadIndexStructures(
    const ModelSnapshotRecords& records, std::size_t indexes,
    std::size_t input_dim, std::vector<std::string>* notes) {
  std::vector<CoverTree::StructureReader> structures;
  for (std::size_t i = 0; i < 2 * indexes; ++i) {
    structures.emplace_back(input_dim);
  }
  for (std::size_t r = 0; r < records.indexes.size(); ++r) {
    const absl::Status loaded_structure =
        LoadIndexStructure(records.indexes[r], &structures);
    if (records.done_with) records.done_with(records.indexes[r]);
    if (!loaded_structure.ok()) {
      notes->push_back(
          absl::StrCat("index structure record ", r, " is malformed (",
                       loaded_structure.message(),
                       "); every index rebuilt from the stored samples"));
      structures.clear();
      return structures;
    }
  }
  if (structures.empty()) return structures;
  for (std::string& note :
       LoadIndexChanges(records.chain_index_changes, indexes, &structures,
                        records.done_with)) {
    notes->push_back(std::move(note));
  }
  return structures;
}

}  // namespace

std::string SnapshotBase::Encode() const {
  std::string out;
  ByteWriter writer(&out);
  writer.U64(samples_seen);
  writer.U64(rows);
  writer.U64(tree_rows);
  writer.U64(index_generations.size());
  for (std::uint64_t generation : index_generations) writer.U64(generation);
  return out;
}

bool SnapshotBase::Decode(absl::string_view payload) {
  ByteReader reader(payload);
  samples_seen = reader.U64();
  rows = reader.U64();
  tree_rows = reader.U64();
  const std::uint64_t count = reader.U64();
  if (!reader.ok() || count > reader.remaining() / sizeof(std::uint64_t)) {
    return false;
  }
  index_generations.resize(count);
  for (std::uint64_t& generation : index_generations) {
    generation = reader.U64();
  }
  return reader.done() && tree_rows <= rows && rows <= samples_seen;
}

ModelSnapshotRecords ModelSnapshotRecords::BuiltOn(
    const ModelSnapshotRecords& whole,
    const std::vector<ModelSnapshotRecords>& later) {
  ModelSnapshotRecords records = whole;
  for (const ModelSnapshotRecords& next : later) {
    records.state = next.state;
    records.base = next.base;
    records.rows.insert(records.rows.end(), next.rows.begin(), next.rows.end());
    records.chain_index_changes.push_back(next.index_changes);
  }
  return records;
}

SnapshotBase ModelSnapshot::AsBase() const {
  const std::uint64_t rows = rows_.x.size;
  if (builds_on_.has_value()) {  // (tree_rows stays the chain's whole one's)
    std::vector<CoverTree::ChangeMark> marks = tree_marks_;
    for (std::size_t i = 0; i < marks.size(); ++i) {
      // A tree without changes here ends its line of changes.
      if (i >= index_changes_.size() || !index_changes_[i].has_value()) {
        marks[i] = CoverTree::ChangeMark{};
      }
    }
    return {.samples_seen = samples_seen_,
            .rows = rows,
            .tree_rows = builds_on_->tree_rows,
            .index_generations = builds_on_->index_generations,
            .tree_marks = std::move(marks)};
  }
  return {.samples_seen = samples_seen_,
          .rows = rows,
          .tree_rows = rows,
          .index_generations = index_generations_,
          .tree_marks = tree_marks_};
}

absl::Status ModelSnapshot::Write(RecordWriter& out,
                                  std::uint64_t* records) const {
  std::string state = state_;
  ByteWriter tail(&state);
  if (!refresh_job_.empty()) {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kJob));
    state += refresh_job_;
  } else if (refresh_.has_value()) {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kResult));
    refresh_->get().Save(tail);
  } else {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kNone));
  }
  if (mlkr_refresh_.has_value()) {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kResult));
    SaveMlkrMaps(mlkr_refresh_->get(), tail);
  } else {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kNone));
  }
  if (random_refresh_.has_value()) {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kResult));
    random_refresh_->Save(tail);
  } else {
    tail.U8(static_cast<std::uint8_t>(RefreshInSnapshot::kNone));
  }
  if (absl::Status status = out.Add(kModelStateRecord, state); !status.ok()) {
    return status;
  }
  ++*records;
  if (builds_on_.has_value()) {
    if (absl::Status status =
            out.Add(kSnapshotBaseRecord, builds_on_->Encode());
        !status.ok()) {
      return status;
    }
    ++*records;
  }
  const std::size_t n = rows_.x.size;
  constexpr std::size_t kRows = ChunkedRows<double>::kRowsPerChunk;
  std::string payload;
  const std::size_t since = builds_on_.has_value() ? builds_on_->rows : 0;
  for (std::size_t first = since; first < n; first += kRows) {
    payload.clear();
    SaveStoreRows(rows_, first, std::min(kRows, n - first), &payload);
    if (absl::Status status = out.Add(kStoreRowsRecord, payload);
        !status.ok()) {
      return status;
    }
    ++*records;
  }
  const auto add = [&](const std::string& structure) {
    ++*records;
    return out.Add(kIndexStructureRecord, structure);
  };
  const auto add_changes = [&](const std::string& changes) {
    ++*records;
    return out.Add(kIndexChangesRecord, changes);
  };
  for (std::size_t i = 0; i < index_changes_.size(); ++i) {
    if (!index_changes_[i].has_value()) continue;
    const absl::Status status = SaveIndexChanges(
        static_cast<std::uint32_t>(i), *index_changes_[i], add_changes);
    if (!status.ok()) return status;
  }
  const std::size_t n_indexes = indexes_.size();
  for (std::size_t i = 0; i < n_indexes; ++i) {
    const absl::Status status =
        SaveIndexStructure(static_cast<std::uint32_t>(i), indexes_[i], add);
    if (!status.ok()) return status;
  }
  for (std::size_t i = 0; i < rebuilt_.size(); ++i) {
    if (!rebuilt_[i].has_value()) continue;
    const absl::Status status = SaveIndexStructure(
        static_cast<std::uint32_t>(n_indexes + i), *rebuilt_[i], add);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::size_t ModelSnapshot::rebuilt_trees() const {
  return std::count_if(rebuilt_.begin(), rebuilt_.end(),
                       [](const std::optional<CoverTree::Structure>& s) {
                         return s.has_value();
                       });
}

ModelSnapshot Model::CaptureSnapshot() const {
  MutexLock writer(&state_.writer);
  SharedLock lock(state_.lock);
  return CaptureLocked(std::nullopt);
}

std::optional<ModelSnapshot> Model::CaptureSnapshotSince(
    const SnapshotBase& base) const {
  MutexLock writer(&state_.writer);
  SharedLock lock(state_.lock);
  if (!CanBuildOn(base)) return std::nullopt;
  return CaptureLocked(base);
}

bool Model::CanBuildOn(const SnapshotBase& base) const {
  // Every sample since the base stored in a slot of its own after the
  // base's rows (slots are filled in order until a bounded store is full).
  const std::uint64_t seen = state_.store.seen();
  const std::uint64_t stored = state_.store.size();
  if (seen < base.samples_seen || stored < base.rows ||
      stored - base.rows != seen - base.samples_seen) {
    return false;
  }
  const std::vector<MetricIndex*> indexes = state_.AllIndexes();
  if (indexes.size() != base.index_generations.size()) return false;
  for (std::size_t i = 0; i < indexes.size(); ++i) {
    if (indexes[i]->generation() != base.index_generations[i]) return false;
  }
  return true;
}

ModelSnapshot Model::CaptureLocked(
    const std::optional<SnapshotBase>& base) const {
  ModelSnapshot snapshot;
  snapshot.samples_seen_ = state_.store.seen();
  snapshot.builds_on_ = base;
  ByteWriter out(&snapshot.state_);
  SaveModelState(state_, out);
  const GradientRefresh& refresh = state_.refresh;
  if (refresh.running()) {
    // An unbounded store still holds the job's rows: unless the result is
    // in already, the job is saved rather than waited for.
    if (refresh.job().has_value() && !IsReady(refresh.result()) &&
        config_.capacity.policy == CapacityPolicy::kUnbounded) {
      ByteWriter job(&snapshot.refresh_job_);
      GradientRefresh::SaveJob(*refresh.job(), job);
    } else {
      snapshot.refresh_ = refresh.result();
    }
  }
  if (state_.mlkr_refresh.running()) {
    snapshot.mlkr_refresh_ = state_.mlkr_refresh.result();
  }
  // (Waits until the rebuild has learned every sample fed it.)
  if (state_.random_refresh.running()) {
    snapshot.random_refresh_ = state_.random_refresh.Capture();
  }
  snapshot.rows_ = state_.store.Share();
  const std::vector<MetricIndex*> indexes = state_.AllIndexes();
  for (std::size_t i = 0; i < indexes.size(); ++i) {
    MetricIndex& index = *indexes[i];
    snapshot.index_generations_.push_back(index.generation());
    if (base.has_value()) {  // the base's trees, changed since
      const CoverTree::ChangeMark since = i < base->tree_marks.size()
                                              ? base->tree_marks[i]
                                              : CoverTree::ChangeMark{};
      ConcurrentCoverTree::MarkedChanges changes =
          index.ShareMarkedChanges(since);
      snapshot.index_changes_.push_back(std::move(changes.changes));
      snapshot.tree_marks_.push_back(changes.mark);
      continue;
    }
    ConcurrentCoverTree::MarkedStructure structure =
        index.ShareMarkedStructure();
    snapshot.indexes_.push_back(std::move(structure.structure));
    snapshot.tree_marks_.push_back(structure.mark);
    snapshot.rebuilt_.push_back(index.ShareRebuiltStructure());
  }
  return snapshot;
}

bool Model::BackgroundWorkSettled() const {
  MutexLock writer(&state_.writer);
  if (state_.refresh.running() && !IsReady(state_.refresh.result())) {
    return false;
  }
  if (state_.mlkr_refresh.running() && !state_.mlkr_refresh.Done()) {
    return false;
  }
  for (const MetricIndex* index : state_.AllIndexes()) {
    if (index->RebuildStillBuilding()) return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<Model>> Model::Restore(
    ModelConfig config, const ModelSnapshotRecords& records) {
  if (absl::Status status = CompleteAndValidate(&config); !status.ok()) {
    return status;
  }
  std::optional<SnapshotBase> base;
  if (!records.base.empty()) {
    base.emplace();
    if (!base->Decode(records.base)) {
      return absl::DataLossError("the snapshot's base record is malformed");
    }
  }
  std::unique_ptr<Model> model(new Model(std::move(config)));
  ModelState& state = model->state_;
  MutexLock writer(&state.writer);
  LoadedModelState loaded;
  {
    ExclusiveLock lock(state.lock);
    ByteReader in(records.state);
    if (absl::Status status = LoadModelState(in, state, &loaded);
        !status.ok()) {
      return status;
    }
    for (std::size_t r = 0; r < records.rows.size(); ++r) {
      if (absl::Status status = LoadStoreRows(records.rows[r], state);
          !status.ok()) {
        return absl::DataLossError(absl::StrCat(
            "stored rows record ", r, " is malformed: ", status.message()));
      }
      if (records.done_with) records.done_with(records.rows[r]);
    }
    if (state.store.size() != loaded.num_rows) {
      return absl::DataLossError(
          absl::StrCat("the snapshot holds ", state.store.size(), " of ",
                       loaded.num_rows, " stored samples"));
    }
  }
  if (loaded.refresh_job.has_value() &&
      loaded.refresh_job->num_slots > loaded.num_rows) {
    return absl::DataLossError("the metric refresh reads missing samples");
  }
  if (base.has_value() &&
      (base->rows > loaded.num_rows || base->tree_rows > base->rows ||
       base->index_generations.size() != loaded.indexes.size())) {
    return absl::DataLossError(
        "the snapshot's base does not fit the model it builds on");
  }
  std::vector<CoverTree::StructureReader> structures =
      ReadIndexStructures(records, loaded.indexes.size(),
                          model->config_.input_dim, &model->restore_notes_);
  for (std::string& note :
       RestoreIndexes(state, std::move(loaded.indexes), std::move(structures),
                      base.has_value() ? &*base : nullptr)) {
    model->restore_notes_.push_back(std::move(note));
  }
  if (absl::Status status = state.IndexFailure(); !status.ok()) {
    return absl::DataLossError(absl::StrCat(
        "the stored samples cannot be indexed: ", status.message()));
  }
  {
    SharedLock lock(state.lock);
    model->restored_base_ = SnapshotBase{.samples_seen = state.store.seen(),
                                         .rows = state.store.size(),
                                         .tree_rows = state.store.size(),
                                         .index_generations = {},
                                         .tree_marks = {}};
  }
  for (MetricIndex* index : state.AllIndexes()) {
    model->restore_insertions_ += index->restore_insertions();
    model->restored_base_->index_generations.push_back(index->generation());
    model->restored_base_->tree_marks.push_back(index->MarkRestoredTree());
  }
  // Background work starts once the indexes (which the model needs to
  // serve) have every core.
  if (loaded.refresh_job.has_value()) {
    const std::size_t slots = loaded.refresh_job->num_slots;
    state.refresh.Start(*std::move(loaded.refresh_job),
                        state.RefreshRows(slots));
  }
  return model;
}

}  // namespace streamreg
