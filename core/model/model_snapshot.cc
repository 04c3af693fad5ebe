// Model::CaptureSnapshot and Model::Restore: a model's whole state out and
// back in (core/model/model_snapshot.h has the format).
#include "core/model/model_snapshot.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"
#include "core/io/record_format.h"
#include "core/model/model.h"

namespace streamreg {
namespace {

constexpr std::uint32_t kStateVersion = 1;
constexpr std::uint8_t kNoRefresh = 0;
constexpr std::uint8_t kRefreshResult = 1;
constexpr std::uint8_t kRefreshJob = 2;

void SaveIndex(const MetricIndex& index, ByteWriter& out) {
  index.transform().Save(out);
  out.U64(index.generation());
  out.U64(index.waits());
  out.U8(index.rebuilding() ? 1 : 0);
  if (index.rebuilding()) index.rebuild_transform()->Save(out);
}

}  // namespace

absl::Status ModelSnapshot::Write(RecordWriter& out,
                                  std::uint64_t* records) const {
  std::string state = state_;
  ByteWriter tail(&state);
  if (!refresh_job_.empty()) {
    tail.U8(kRefreshJob);
    state += refresh_job_;
  } else if (refresh_.has_value()) {
    tail.U8(kRefreshResult);
    refresh_->get().Save(tail);
  } else {
    tail.U8(kNoRefresh);
  }
  if (absl::Status status = out.Add(kModelStateRecord, state); !status.ok()) {
    return status;
  }
  ++*records;
  const std::size_t d = rows_.x.width;
  const std::size_t m = rows_.y.width;
  const std::size_t n = rows_.x.size;
  constexpr std::size_t kRows = ChunkedRows<double>::kRowsPerChunk;
  std::string payload;
  for (std::size_t first = 0; first < n; first += kRows) {
    const std::size_t count = std::min(kRows, n - first);
    payload.clear();
    payload.reserve(12 + count * (d + m + 1) * sizeof(double));
    ByteWriter rows(&payload);
    rows.U64(first);
    rows.U32(static_cast<std::uint32_t>(count));
    for (std::size_t slot = first; slot < first + count; ++slot) {
      rows.RawDoubles({rows_.x.Row(slot), d});
      rows.RawDoubles({rows_.y.Row(slot), m});
      rows.U64(*rows_.ids.Row(slot));
    }
    if (absl::Status status = out.Add(kStoreRowsRecord, payload);
        !status.ok()) {
      return status;
    }
    ++*records;
  }
  return absl::OkStatus();
}

ModelSnapshot Model::CaptureSnapshot() const {
  std::lock_guard writer(writer_);
  ModelSnapshot snapshot;
  snapshot.samples_seen_ = store_.seen();
  ByteWriter out(&snapshot.state_);
  SaveState(out);
  if (refresh_.running()) {
    if (refresh_.job().has_value() &&
        config_.capacity.policy == CapacityPolicy::kUnbounded) {
      ByteWriter job(&snapshot.refresh_job_);
      GradientRefresh::SaveJob(*refresh_.job(), job);
    } else {
      snapshot.refresh_ = refresh_.result();
    }
  }
  snapshot.rows_ = store_.Share();
  return snapshot;
}

void Model::SaveState(ByteWriter& out) const {
  out.U32(kStateVersion);
  out.U64(config_.input_dim);
  out.U64(config_.num_targets());
  out.U64(predictions_.size());
  out.U8(gradient_index_ != nullptr ? 1 : 0);
  store_.SaveCounters(out);
  out.U64(store_.size());
  inputs_.Save(out);
  targets_.Save(out);
  gradients_.Save(out);
  since_refresh_.Save(out);
  gradient_selector_.Save(out);
  score_.Save(out);
  out.U64(gradient_swap_at_);
  out.U64(refresh_swap_at_);
  out.U64(refreshed_size_);
  out.U64(metric_refreshes_);
  if (gradient_index_ != nullptr) SaveIndex(*gradient_index_, out);
  for (const PredictionIndex& p : predictions_) {
    SaveIndex(*p.index, out);
    p.selector.Save(out);
    out.U64(p.swap_at);
  }
}

bool Model::LoadState(ByteReader& in, std::size_t* num_rows,
                      std::vector<SavedIndex>* indexes,
                      std::optional<GradientRefresh::Job>* refresh_job) {
  const std::size_t d = config_.input_dim;
  if (in.U32() != kStateVersion || in.U64() != d ||
      in.U64() != config_.num_targets() || in.U64() != predictions_.size() ||
      in.U8() != (gradient_index_ != nullptr ? 1 : 0)) {
    return false;
  }
  if (!store_.LoadCounters(in)) return false;
  *num_rows = in.U64();
  if (!inputs_.Load(in) || !targets_.Load(in) || !gradients_.Load(in) ||
      !since_refresh_.Load(in) || !gradient_selector_.Load(in) ||
      !score_.Load(in)) {
    return false;
  }
  gradient_swap_at_ = in.U64();
  refresh_swap_at_ = in.U64();
  refreshed_size_ = in.U64();
  metric_refreshes_ = in.U64();
  auto load_index = [&]() -> bool {
    std::optional<MetricTransform> live = MetricTransform::Load(in, d);
    if (!live) return false;
    SavedIndex saved{*std::move(live), 0, 0, std::nullopt};
    saved.generation = in.U64();
    saved.waits = in.U64();
    if (in.U8() != 0) {
      saved.rebuild = MetricTransform::Load(in, d);
      if (!saved.rebuild) return false;
    }
    indexes->push_back(std::move(saved));
    return in.ok();
  };
  if (gradient_index_ != nullptr && !load_index()) return false;
  for (PredictionIndex& p : predictions_) {
    if (!load_index() || !p.selector.Load(in)) return false;
    p.swap_at = in.U64();
  }
  switch (in.U8()) {
    case kNoRefresh:
      break;
    case kRefreshResult: {
      GradientStatistics result(d, config_.num_targets(),
                                config_.metric == MetricKind::kEgop);
      if (!result.Load(in)) return false;
      refresh_.Resume(std::move(result));
      break;
    }
    case kRefreshJob: {
      GradientRefresh::Job job{MetricTransform::Standardizing({}, {})};
      if (!GradientRefresh::LoadJob(in, d, &job)) return false;
      *refresh_job = std::move(job);
      break;
    }
    default:
      return false;
  }
  return in.done();
}

bool Model::LoadRows(absl::string_view payload) {
  const std::size_t d = config_.input_dim;
  const std::size_t m = config_.num_targets();
  ByteReader in(payload);
  const std::uint64_t first = in.U64();
  const std::uint32_t count = in.U32();
  if (!in.ok() || first != store_.size() ||
      in.remaining() != count * (d + m + 1) * sizeof(double)) {
    return false;
  }
  std::vector<double> x(d), y(m);
  for (std::size_t slot = first; slot < first + count; ++slot) {
    in.RawDoubles(x);
    in.RawDoubles(y);
    const std::uint64_t id = in.U64();
    store_.Put(slot, x, y, id);
  }
  return in.done();
}

void Model::RestoreIndexes(std::vector<SavedIndex> indexes) {
  const std::vector<MetricIndex*> all = AllIndexes();
  const std::size_t size = store_.size();
  // Each index is built from the same rows on a thread of its own.
  std::vector<std::thread> builders;
  for (std::size_t i = 0; i < all.size(); ++i) {
    builders.emplace_back([&, i] {
      all[i]->Restore(std::move(indexes[i].live), size, StoreRows(),
                      indexes[i].generation, indexes[i].waits);
    });
  }
  for (std::thread& builder : builders) builder.join();
  // A rebuild in progress at capture starts again; it takes over at the
  // sample count saved with it, with the same samples (an index holds
  // whatever is stored, however it was built).
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (indexes[i].rebuild) {
      all[i]->BeginRebuild(*std::move(indexes[i].rebuild), size, StoreRows());
    }
  }
}

absl::StatusOr<std::unique_ptr<Model>> Model::Restore(
    ModelConfig config, const ModelSnapshotRecords& records) {
  if (absl::Status status = CompleteAndValidate(&config); !status.ok()) {
    return status;
  }
  std::unique_ptr<Model> model(new Model(std::move(config)));
  ByteReader state(records.state);
  std::size_t num_rows = 0;
  std::vector<SavedIndex> indexes;
  std::optional<GradientRefresh::Job> refresh_job;
  if (!model->LoadState(state, &num_rows, &indexes, &refresh_job)) {
    return absl::DataLossError(
        "the model state record does not fit the model's configuration");
  }
  for (std::size_t r = 0; r < records.rows.size(); ++r) {
    if (!model->LoadRows(records.rows[r])) {
      return absl::DataLossError(
          absl::StrCat("stored rows record ", r, " is malformed"));
    }
  }
  if (model->store_.size() != num_rows) {
    return absl::DataLossError(absl::StrCat("the snapshot holds ",
                                            model->store_.size(), " of ",
                                            num_rows, " stored samples"));
  }
  if (refresh_job.has_value() && refresh_job->num_slots > num_rows) {
    return absl::DataLossError("the metric refresh reads missing samples");
  }
  model->RestoreIndexes(std::move(indexes));
  // Background work starts once the indexes (which the model needs to
  // serve) have every core.
  if (refresh_job.has_value()) {
    model->refresh_.Start(*std::move(refresh_job), model->StoreRows());
  }
  return model;
}

}  // namespace streamreg
