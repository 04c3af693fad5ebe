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

}  // namespace

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
  const std::size_t n = rows_.x.size;
  constexpr std::size_t kRows = ChunkedRows<double>::kRowsPerChunk;
  std::string payload;
  for (std::size_t first = 0; first < n; first += kRows) {
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
  ModelSnapshot snapshot;
  snapshot.samples_seen_ = state_.store.seen();
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
  for (const MetricIndex* index : state_.AllIndexes()) {
    snapshot.indexes_.push_back(index->ShareStructure());
    snapshot.rebuilt_.push_back(index->ShareRebuiltStructure());
  }
  return snapshot;
}

bool Model::BackgroundWorkSettled() const {
  MutexLock writer(&state_.writer);
  if (state_.refresh.running() && !IsReady(state_.refresh.result())) {
    return false;
  }
  if (state_.mlkr_refresh.running() && !IsReady(state_.mlkr_refresh.result())) {
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
  std::unique_ptr<Model> model(new Model(std::move(config)));
  ModelState& state = model->state_;
  MutexLock writer(&state.writer);
  LoadedModelState loaded;
  {
    ExclusiveLock lock(state.lock);
    ByteReader in(records.state);
    if (!LoadModelState(in, state, &loaded)) {
      return absl::DataLossError(
          "the model state record does not fit the model's configuration");
    }
    for (std::size_t r = 0; r < records.rows.size(); ++r) {
      if (!LoadStoreRows(records.rows[r], state)) {
        return absl::DataLossError(
            absl::StrCat("stored rows record ", r, " is malformed"));
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
  // Each index's live tree, then each one's rebuilt tree (n + i).
  std::vector<CoverTree::StructureReader> structures;
  for (std::size_t i = 0; i < 2 * loaded.indexes.size(); ++i) {
    structures.emplace_back(model->config_.input_dim);
  }
  for (std::size_t r = 0; r < records.indexes.size(); ++r) {
    const bool loaded_structure =
        LoadIndexStructure(records.indexes[r], &structures);
    if (records.done_with) records.done_with(records.indexes[r]);
    if (!loaded_structure) {
      model->restore_notes_.push_back(
          absl::StrCat("index structure record ", r,
                       " is malformed; every index rebuilt from the stored "
                       "samples"));
      structures.clear();
      break;
    }
  }
  for (std::string& note : RestoreIndexes(state, std::move(loaded.indexes),
                                          std::move(structures))) {
    model->restore_notes_.push_back(std::move(note));
  }
  if (absl::Status status = state.IndexFailure(); !status.ok()) {
    return absl::DataLossError(absl::StrCat(
        "the stored samples cannot be indexed: ", status.message()));
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
