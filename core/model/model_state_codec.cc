#include "core/model/model_state_codec.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/record_parts.h"
#include "core/model/model_snapshot.h"
#include "core/model/prediction.h"
#include "core/model/refresh_schedule.h"

namespace streamreg {
namespace {

// Version 2 added the honest error (its score and the recent slots); a
// version 1 state loads with neither (the honest error starts afresh).
// Version 3 added the linear base (a model saved before had none); version
// 4 the MLKR maps and their fit (a model saved before had none); version
// 5 the random-feature base and its rebuild (likewise); version 6 the
// store's size when its last rebuild started (0 before: the next rebuild
// on growth comes at once); version 7 the roots the random-feature base's
// variances come from (before: the ridge's as loaded); version 8 the
// intervals' calibration (before: none, it starts afresh); version 9 the
// calibration of the next sample's intervals (likewise); version 10 the
// take-over records applied to work still running (before: none, as every
// model took over at fixed counts); version 11 the weights of a combining
// model's candidates, for queries and for the next sample (none before: no
// model combined); version 12 the random-feature ridges' sums and
// Cholesky factors (before: the square root of P, converted on loading);
// version 13 the samples seen when the random-feature base's last rebuild
// started, which its rebuilds' budget counts from (before: 0, so the next
// rebuild due starts at once); version 14 the difficulty scale of the
// queries' intervals (before: none learned, it starts afresh); version 15
// the slots the queries' interval calibration leaves out (before: none, as
// no model had an interval lag); version 16 the queries' recalibration
// (before: none, as no model recalibrated); version 17 its nearest
// neighbours' ages (before: none counted, they count from the load on).
constexpr std::uint32_t kStateVersion = 17;

// The format the random-feature ridges of a state of `version` are in.
RidgeFormat RidgeFormatOf(std::uint32_t version) {
  return version >= 12 ? RidgeFormat::kSums : RidgeFormat::kSquareRoot;
}

// The most take-over records a state holds: one per piece of background
// work that can run at once (a metric refresh, an MLKR fit, a
// random-feature rebuild, the gradient index's and each prediction
// index's rebuild).
std::size_t MaxLoggedTakeOvers(const ModelState& state) {
  return 4 + state.predictions.size();
}

// An intervals' calibration into `out`, if it was calibrated at the
// settings the model's config has (or it is not the model's own).
bool LoadIntervals(ByteReader& in, const ModelState& state,
                   AdaptiveConformal* out) {
  std::optional<AdaptiveConformal> intervals =
      AdaptiveConformal::Load(in, state.config.num_targets());
  if (!intervals.has_value() ||
      intervals->options().level != state.config.interval_level ||
      intervals->options().window != state.config.interval_window ||
      intervals->options().step != state.config.interval_step) {
    return false;
  }
  *out = *std::move(intervals);
  return true;
}

void SaveIndex(const MetricIndex& index, ByteWriter& out) {
  index.transform().Save(out);
  out.U64(index.generation());
  out.U64(index.waits());
  out.U8(index.rebuilding() ? 1 : 0);
  if (index.rebuilding()) index.rebuild_transform()->Save(out);
}

bool LoadIndex(ByteReader& in, std::size_t dim,
               std::vector<SavedIndex>* indexes) {
  std::optional<MetricTransform> live = MetricTransform::Load(in, dim);
  if (!live) return false;
  SavedIndex saved{*std::move(live), 0, 0, std::nullopt};
  saved.generation = in.U64();
  saved.waits = in.U64();
  if (in.U8() != 0) {
    saved.rebuild = MetricTransform::Load(in, dim);
    if (!saved.rebuild) return false;
  }
  indexes->push_back(std::move(saved));
  return in.ok();
}

// The refresh that ends a state record.
bool LoadRefresh(ByteReader& in, ModelState& state, LoadedModelState* loaded)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  const ModelConfig& config = state.config;
  switch (static_cast<RefreshInSnapshot>(in.U8())) {
    case RefreshInSnapshot::kNone:
      return true;
    case RefreshInSnapshot::kResult: {
      GradientStatistics result(config.input_dim, config.num_targets(),
                                KeepsOuterProducts(config.metric));
      if (!result.Load(in)) return false;
      state.refresh.Resume(std::move(result));
      return true;
    }
    case RefreshInSnapshot::kJob: {
      GradientRefresh::Job job{MetricTransform::Standardizing({}, {})};
      if (!GradientRefresh::LoadJob(in, config.input_dim, &job)) return false;
      job.estimator = config.gradient_estimator;
      job.max_points = RefreshPoints(config, job.num_slots);
      loaded->refresh_job = std::move(job);
      return true;
    }
  }
  return false;
}

// The MLKR fit that ends a state record of version 4 and later.
bool LoadMlkrRefresh(ByteReader& in, ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  switch (static_cast<RefreshInSnapshot>(in.U8())) {
    case RefreshInSnapshot::kNone:
      return true;
    case RefreshInSnapshot::kResult: {
      std::vector<MlkrMap> result;
      if (!LoadMlkrMaps(in, state.config.input_dim, &result).ok()) {
        return false;
      }
      state.mlkr_refresh.Resume(std::move(result));
      return true;
    }
    case RefreshInSnapshot::kJob:
      return false;
  }
  return false;
}

// The random-feature base's rebuild that ends a state record of version 5
// and later.
bool LoadRandomFeatureRefresh(ByteReader& in, std::uint32_t version,
                              ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) {
  switch (static_cast<RefreshInSnapshot>(in.U8())) {
    case RefreshInSnapshot::kNone:
      return true;
    case RefreshInSnapshot::kResult: {
      std::optional<RandomFeatureFit> built = RandomFeatureFit::Load(
          in, state.config.input_dim, state.config.num_targets(),
          RidgeFormatOf(version));
      if (!built.has_value() || !state.config.random_feature_base) {
        return false;
      }
      state.random_refresh.Resume(*std::move(built));
      return true;
    }
    case RefreshInSnapshot::kJob:
      return false;
  }
  return false;
}

// The shape the state was saved with, which must be the model's: its
// inputs, targets, prediction indexes and whether it has a gradient index.
bool ShapeFits(ByteReader& in, const ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  return in.U64() == state.config.input_dim &&
         in.U64() == state.config.num_targets() &&
         in.U64() == state.predictions.size() &&
         in.U8() == (state.gradient_index != nullptr ? 1 : 0);
}

// The store's counters and the running statistics, through the linear
// base.
bool LoadStatistics(ByteReader& in, std::uint32_t version, ModelState& state,
                    LoadedModelState* loaded, RecordParts& parts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  if (!parts.Read("store counters", state.store.LoadCounters(in))) {
    return false;
  }
  loaded->num_rows = in.U64();
  if (!parts.Read("stored rows", true) ||
      !parts.Read("inputs", state.inputs.Load(in)) ||
      !parts.Read("targets", state.targets.Load(in)) ||
      !parts.Read("gradients", state.gradients.Load(in)) ||
      !parts.Read("gradients since the refresh",
                  state.since_refresh.Load(in)) ||
      !parts.Read("gradient selector", state.gradient_selector.Load(in)) ||
      !parts.Read("prequential score", state.score.Load(in))) {
    return false;
  }
  if (version >= 2 &&
      (!parts.Read("honest score", state.honest_score.Load(in)) ||
       !parts.Read("recent slots", state.recent.Load(in)))) {
    return false;
  }
  const bool has_base = version >= 3 && in.U8() == 1;
  return parts.Read("linear base", has_base == state.base.has_value() &&
                                       (!has_base || state.base->Load(in)));
}

// The take-over points and every index with its selector.
bool LoadIndexes(ByteReader& in, ModelState& state, LoadedModelState* loaded,
                 RecordParts& parts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  const std::size_t d = state.config.input_dim;
  TakeOverPoints& take_over = state.take_over;
  take_over.gradient_index = in.U64();
  take_over.refresh = in.U64();
  take_over.refreshed_size = in.U64();
  state.metric_refreshes = in.U64();
  if (!parts.Read("take-over points", true)) return false;
  if (state.gradient_index != nullptr &&
      !parts.Read("gradient index", LoadIndex(in, d, &loaded->indexes))) {
    return false;
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    if (!parts.Read(absl::StrCat("prediction index ", i),
                    LoadIndex(in, d, &loaded->indexes)) ||
        !parts.Read(absl::StrCat("selector ", i),
                    state.selectors[i].Load(in))) {
      return false;
    }
    take_over.prediction_indexes[i] = in.U64();
    if (!parts.Read(absl::StrCat("take-over point of index ", i), true)) {
      return false;
    }
  }
  return true;
}

// A combining model's weights (version 11 and later; none for another
// model).
bool LoadCombinations(ByteReader& in, ModelState& state, RecordParts& parts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  for (auto* combinations : {&state.combinations, &state.answer_combinations}) {
    for (CandidateAggregation& combination : *combinations) {
      std::optional<CandidateAggregation> loaded = CandidateAggregation::Load(
          in, combination.num_targets(), combination.num_candidates(),
          combination.recency());
      if (!parts.Read("candidates' weights", loaded.has_value())) return false;
      combination = *std::move(loaded);
    }
  }
  return true;
}

// The difficulty scale into the state, if it was learned at the horizon
// the model's config gives.
bool LoadDifficulty(ByteReader& in, ModelState& state, RecordParts& parts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  std::optional<DifficultyScale> difficulty = DifficultyScale::Load(
      in, state.config.num_targets(), kDifficultyFeatures);
  if (!parts.Read("difficulty scale",
                  difficulty.has_value() &&
                      difficulty->horizon() ==
                          static_cast<double>(state.config.interval_window))) {
    return false;
  }
  state.difficulty = *std::move(difficulty);
  return true;
}

// What versions 4 to 16 added: the MLKR maps, the random-feature base, the
// intervals, the logged take-overs, the candidates' weights, the
// difficulty scale, the interval lag's slots and the recalibration.
bool LoadLaterParts(ByteReader& in, std::uint32_t version, ModelState& state,
                    RecordParts& parts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  const std::size_t d = state.config.input_dim;
  TakeOverPoints& take_over = state.take_over;
  if (version >= 4) {
    take_over.mlkr_refresh = in.U64();
    take_over.mlkr_refreshed_size = in.U64();
    std::vector<MlkrMap> maps;
    if (!parts.Read("MLKR maps", LoadMlkrMaps(in, d, &maps).ok() &&
                                     maps.size() == state.predictions.size())) {
      return false;
    }
    state.mlkr_maps = std::move(maps);
  }
  if (version >= 5) {
    const std::uint8_t has_random_base = in.U8();
    if (has_random_base == 1 && state.random_base.has_value()) {
      state.random_base = RandomFeatureBase::Load(
          in, d, state.config.num_targets(),
          {.with_factors = version >= 7, .ridge = RidgeFormatOf(version)});
    }
    take_over.random_refresh = in.U64();
    if (version >= 6) take_over.random_rebuilt_size = in.U64();
    if (version >= 13) take_over.random_rebuilt_seen = in.U64();
    if (!parts.Read(
            "random-feature base",
            has_random_base == (state.random_base.has_value() ? 1 : 0))) {
      return false;
    }
  } else if (!parts.Read("random-feature base", !state.random_base)) {
    return false;
  }
  if ((version >= 8 &&
       !parts.Read("intervals", LoadIntervals(in, state, &state.intervals))) ||
      (version >= 9 &&
       !parts.Read("answers' intervals",
                   LoadIntervals(in, state, &state.answer_intervals)))) {
    return false;
  }
  state.logged_take_overs.clear();
  if (version < 10) return true;
  const std::uint64_t logged = in.U64();
  if (!parts.Read("logged take-overs", logged <= MaxLoggedTakeOvers(state))) {
    return false;
  }
  state.logged_take_overs.resize(logged);
  for (TakeOverKey& key : state.logged_take_overs) {
    if (!parts.Read("logged take-over", LoadTakeOverKey(in, &key).ok())) {
      return false;
    }
  }
  if (version >= 11 && !LoadCombinations(in, state, parts)) return false;
  if (version >= 14 && !LoadDifficulty(in, state, parts)) return false;
  if (version >= 15 &&
      !parts.Read("interval recent slots", state.interval_recent.Load(in))) {
    return false;
  }
  return version < 16 ||
         parts.Read("recalibration",
                    state.recalibration.Load(in, /*with_ages=*/version >= 17));
}

// The background work in progress that ends the record.
bool LoadRefreshes(ByteReader& in, std::uint32_t version, ModelState& state,
                   LoadedModelState* loaded, RecordParts& parts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock) {
  return parts.Read("metric refresh", LoadRefresh(in, state, loaded)) &&
         (version < 4 || parts.Read("MLKR fit", LoadMlkrRefresh(in, state))) &&
         (version < 5 ||
          parts.Read("random-feature rebuild",
                     LoadRandomFeatureRefresh(in, version, state)));
}

}  // namespace

absl::Status LoadMlkrMaps(ByteReader& in, std::size_t dim,
                          std::vector<MlkrMap>* maps) {
  RecordParts parts(in, "MLKR maps");
  const std::uint64_t count = in.U64();
  if (!parts.Read("count", count <= in.remaining())) return parts.status();
  maps->resize(count);
  for (std::size_t m = 0; m < count; ++m) {
    if (!parts.Read(absl::StrCat("map ", m), (*maps)[m].Load(in, dim))) {
      return parts.status();
    }
  }
  return absl::OkStatus();
}

void SaveMlkrMaps(const std::vector<MlkrMap>& maps, ByteWriter& out) {
  out.U64(maps.size());
  for (const MlkrMap& map : maps) map.Save(out);
}

void SaveModelState(const ModelState& state, ByteWriter& out) {
  const TakeOverPoints& take_over = state.take_over;
  out.U32(kStateVersion);
  out.U64(state.config.input_dim);
  out.U64(state.config.num_targets());
  out.U64(state.predictions.size());
  out.U8(state.gradient_index != nullptr ? 1 : 0);
  state.store.SaveCounters(out);
  out.U64(state.store.size());
  state.inputs.Save(out);
  state.targets.Save(out);
  state.gradients.Save(out);
  state.since_refresh.Save(out);
  state.gradient_selector.Save(out);
  state.score.Save(out);
  state.honest_score.Save(out);
  state.recent.Save(out);
  out.U8(state.base.has_value() ? 1 : 0);
  if (state.base.has_value()) state.base->Save(out);
  out.U64(take_over.gradient_index);
  out.U64(take_over.refresh);
  out.U64(take_over.refreshed_size);
  out.U64(state.metric_refreshes);
  if (state.gradient_index != nullptr) SaveIndex(*state.gradient_index, out);
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    SaveIndex(*state.predictions[i].index, out);
    state.selectors[i].Save(out);
    out.U64(take_over.prediction_indexes[i]);
  }
  out.U64(take_over.mlkr_refresh);
  out.U64(take_over.mlkr_refreshed_size);
  SaveMlkrMaps(state.mlkr_maps, out);
  out.U8(state.random_base.has_value() ? 1 : 0);
  if (state.random_base.has_value()) state.random_base->Save(out);
  out.U64(take_over.random_refresh);
  out.U64(take_over.random_rebuilt_size);
  out.U64(take_over.random_rebuilt_seen);
  state.intervals.Save(out);
  state.answer_intervals.Save(out);
  out.U64(state.logged_take_overs.size());
  for (const TakeOverKey& key : state.logged_take_overs) {
    SaveTakeOverKey(key, out);
  }
  for (const auto* combinations :
       {&state.combinations, &state.answer_combinations}) {
    for (const CandidateAggregation& combination : *combinations) {
      combination.Save(out);
    }
  }
  state.difficulty.Save(out);
  state.interval_recent.Save(out);
  state.recalibration.Save(out);
}

absl::Status LoadModelState(ByteReader& in, ModelState& state,
                            LoadedModelState* loaded) {
  RecordParts parts(in, "model state");
  const std::uint32_t version = in.U32();
  if (!parts.Read("version", version >= 1 && version <= kStateVersion) ||
      !parts.Read("shape", ShapeFits(in, state)) ||
      !LoadStatistics(in, version, state, loaded, parts) ||
      !LoadIndexes(in, state, loaded, parts) ||
      !LoadLaterParts(in, version, state, parts) ||
      !LoadRefreshes(in, version, state, loaded, parts) || !parts.End()) {
    return parts.status();
  }
  return absl::OkStatus();
}

void SaveStoreRows(const SampleStore::Rows& rows, std::size_t first,
                   std::size_t count, std::string* payload) {
  const std::size_t d = rows.x.width;
  const std::size_t m = rows.y.width;
  payload->reserve(payload->size() + 12 + count * (d + m + 1) * sizeof(double));
  ByteWriter out(payload);
  out.U64(first);
  out.U32(static_cast<std::uint32_t>(count));
  for (std::size_t slot = first; slot < first + count; ++slot) {
    out.RawDoubles({rows.x.Row(slot), d});
    out.RawDoubles({rows.y.Row(slot), m});
    out.U64(*rows.ids.Row(slot));
  }
}

absl::Status LoadStoreRows(absl::string_view payload, ModelState& state) {
  const std::size_t d = state.config.input_dim;
  const std::size_t m = state.config.num_targets();
  ByteReader in(payload);
  const std::uint64_t first = in.U64();
  const std::uint32_t count = in.U32();
  if (!in.ok()) return in.Finish("stored rows");
  if (first != state.store.size()) {
    return absl::DataLossError(absl::StrCat("stored rows: start at slot ",
                                            first, ", the store holds ",
                                            state.store.size()));
  }
  const std::size_t size = count * (d + m + 1) * sizeof(double);
  if (in.remaining() != size) {
    return absl::DataLossError(
        absl::StrCat("stored rows: ", count, " rows of ", d, " inputs and ", m,
                     " targets need ", size, " bytes after byte ",
                     in.position(), ", ", in.remaining(), " follow"));
  }
  std::vector<double> x(d), y(m);
  for (std::size_t slot = first; slot < first + count; ++slot) {
    in.RawDoubles(x);
    in.RawDoubles(y);
    const std::uint64_t id = in.U64();
    state.store.Put(slot, x, y, id);
  }
  return in.Finish("stored rows");
}

namespace {

enum class StructurePart : std::uint8_t { kHeader = 0, kNodes = 1 };

std::string StructurePayload(std::uint32_t index, StructurePart part) {
  std::string payload;
  ByteWriter out(&payload);
  out.U32(index);
  out.U8(static_cast<std::uint8_t>(part));
  return payload;
}

}  // namespace

absl::Status SaveIndexStructure(
    std::uint32_t index, const CoverTree::Structure& structure,
    const std::function<absl::Status(const std::string&)>& add) {
  std::string payload = StructurePayload(index, StructurePart::kHeader);
  ByteWriter header(&payload);
  structure.EncodeHeader(header);
  if (absl::Status status = add(payload); !status.ok()) return status;
  constexpr std::size_t kNodes = 4096;
  for (std::size_t first = 0; first < structure.node_slots(); first += kNodes) {
    payload = StructurePayload(index, StructurePart::kNodes);
    ByteWriter nodes(&payload);
    structure.EncodeNodes(
        first, std::min(kNodes, structure.node_slots() - first), nodes);
    if (absl::Status status = add(payload); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status SaveIndexChanges(
    std::uint32_t index, const CoverTree::Changes& changes,
    const std::function<absl::Status(const std::string&)>& add) {
  const std::vector<std::uint32_t> changed = changes.ChangedNodes();
  std::string payload = StructurePayload(index, StructurePart::kHeader);
  ByteWriter header(&payload);
  changes.EncodeHeader(changed, header);
  if (absl::Status status = add(payload); !status.ok()) return status;
  constexpr std::size_t kNodes = 4096;
  const std::span<const std::uint32_t> all(changed);
  for (std::size_t first = 0; first < all.size(); first += kNodes) {
    payload = StructurePayload(index, StructurePart::kNodes);
    ByteWriter nodes(&payload);
    changes.EncodeNodes(
        all.subspan(first, std::min(kNodes, all.size() - first)), nodes);
    if (absl::Status status = add(payload); !status.ok()) return status;
  }
  return absl::OkStatus();
}

std::vector<std::string> LoadIndexChanges(
    const std::vector<std::vector<absl::string_view>>& links, std::size_t n,
    std::vector<CoverTree::StructureReader>* readers,
    const std::function<void(absl::string_view)>& done_with) {
  std::vector<std::string> notes;
  n = std::min(n, readers->size());
  // Whether each tree takes the next link's changes.
  std::vector<bool> following(n);
  for (std::size_t i = 0; i < n; ++i) following[i] = (*readers)[i].complete();
  for (std::size_t link = 0; link < links.size(); ++link) {
    std::vector<bool> changed(n, false);
    for (absl::string_view payload : links[link]) {
      ByteReader in(payload);
      const std::uint32_t index = in.U32();
      const auto part = static_cast<StructurePart>(in.U8());
      if (in.ok() && index < n && following[index]) {
        CoverTree::StructureReader& reader = (*readers)[index];
        const bool header = part == StructurePart::kHeader;
        const bool read =
            header ? !changed[index] && reader.ReadChangesHeader(in)
                   : part == StructurePart::kNodes && changed[index] &&
                         reader.ReadChangedNodes(in);
        changed[index] = true;
        if (!read) {
          following[index] = false;
          notes.push_back(absl::StrCat(
              "index ", index, ": the tree changes of increment ", link + 1,
              " do not fit its tree; it is built from the stored samples"));
        }
      }
      if (done_with) done_with(payload);
    }
    for (std::size_t i = 0; i < n; ++i) {
      following[i] = following[i] && changed[i];
    }
  }
  return notes;
}

absl::Status LoadIndexStructure(
    absl::string_view payload,
    std::vector<CoverTree::StructureReader>* readers) {
  ByteReader in(payload);
  RecordParts parts(in, "index structure");
  const std::uint32_t index = in.U32();
  const std::uint8_t part = in.U8();
  if (!parts.Read(absl::StrCat("tree ", index), index < readers->size())) {
    return parts.status();
  }
  CoverTree::StructureReader& reader = (*readers)[index];
  switch (static_cast<StructurePart>(part)) {
    case StructurePart::kHeader:
      parts.Read(absl::StrCat("tree ", index, "'s header"),
                 reader.ReadHeader(in));
      return parts.status();
    case StructurePart::kNodes:
      parts.Read(absl::StrCat("tree ", index, "'s nodes"),
                 reader.ReadNodes(in));
      return parts.status();
  }
  return absl::DataLossError(
      absl::StrCat("index structure: tree ", index, ": unknown part ", part));
}

std::vector<std::string> RestoreIndexes(
    ModelState& state, std::vector<SavedIndex> indexes,
    std::vector<CoverTree::StructureReader> structures,
    const SnapshotBase* base) {
  const std::vector<MetricIndex*> all = state.AllIndexes();
  const std::size_t size = [&] {
    SharedLock lock(state.lock);
    return state.store.size();
  }();
  // Each index is restored from the same rows on a thread of its own.
  std::vector<std::thread> builders;
  std::vector<absl::Status> refused(all.size());
  // The structure numbered `i` if the snapshot held it.
  const auto structure_of = [&](std::size_t i) {
    return i < structures.size() && structures[i].header_read() ? &structures[i]
                                                                : nullptr;
  };
  // A base's trees are of the generations it saved, over its rows.
  const auto live_structure_of = [&](std::size_t i) {
    if (base != nullptr &&
        base->index_generations[i] != indexes[i].generation) {
      return static_cast<CoverTree::StructureReader*>(nullptr);
    }
    return structure_of(i);
  };
  // A chain's trees cover the rows up to their last changes.
  const auto structure_slots =
      [&](std::size_t i) -> std::optional<std::size_t> {
    const CoverTree::StructureReader* structure = live_structure_of(i);
    if (base == nullptr || structure == nullptr) return std::nullopt;
    return structure->size();
  };
  for (std::size_t i = 0; i < all.size(); ++i) {
    builders.emplace_back([&, i] {
      refused[i] =
          all[i]->Restore(std::move(indexes[i].live), size, state.StoreRows(),
                          indexes[i].generation, indexes[i].waits,
                          live_structure_of(i), structure_slots(i));
    });
  }
  for (std::thread& builder : builders) builder.join();
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!refused[i].ok()) {
      notes.push_back(absl::StrCat("index ", i, ": ", refused[i].message(),
                                   "; rebuilt from the stored samples"));
    }
  }
  // A rebuild in progress at capture takes over at the sample count saved
  // with it: its tree read back if it had caught up by then, else built
  // again with the same samples (an index holds whatever is stored, however
  // it was built).
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!indexes[i].rebuild) continue;
    // (A base's rebuilt trees are of a rebuild since taken over.)
    CoverTree::StructureReader* rebuilt =
        base != nullptr ? nullptr : structure_of(all.size() + i);
    const absl::Status status = all[i]->RestoreRebuild(
        *std::move(indexes[i].rebuild), size, state.StoreRows(), rebuilt);
    if (!status.ok()) {
      notes.push_back(absl::StrCat(
          "index ", i, "'s rebuilt tree: ", status.message(), "; built again"));
    }
  }
  return notes;
}

}  // namespace streamreg
