// Model snapshots: a model restored from a snapshot taken at any moment —
// also while a metric refresh or an index rebuild runs in the background —
// predicts, reports and goes on learning exactly as the model that never
// stopped, with its index trees read back as they were; damaged snapshots
// are refused, damaged index structures rebuilt.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/io/file_system.h"
#include "core/io/record_reader.h"
#include "core/io/record_writer.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

// Writes a snapshot to a file and restores a model from it (the file's
// records exactly as the server reads them back).
class SnapshotFile {
 public:
  SnapshotFile() { directory_ = FreshDirectory(); }
  ~SnapshotFile() { std::filesystem::remove_all(directory_); }

  void Write(const ModelSnapshot& snapshot) {
    auto file = FileSystem::Default()->NewWritableFile(directory_ + "/snap");
    ASSERT_TRUE(file.ok());
    RecordWriter writer(file->get());
    std::uint64_t records = 0;
    ASSERT_TRUE(snapshot.Write(writer, &records).ok());
    ASSERT_TRUE((*file)->Close().ok());
    auto readable = FileSystem::Default()->OpenReadable(directory_ + "/snap");
    ASSERT_TRUE(readable.ok());
    contents_ = std::string((*readable)->contents());
    const ModelSnapshotRecords read = Records();
    if (snapshot.builds_on().has_value()) {
      // The rows since its base only, and no whole tree: at most each
      // tree's changes.
      const std::size_t since =
          snapshot.samples_stored() - snapshot.builds_on()->rows;
      EXPECT_EQ(read.rows.size(), (since + 4095) / 4096);
      EXPECT_TRUE(read.indexes.empty());
      EXPECT_FALSE(read.base.empty());
      EXPECT_EQ(records, 2 + read.rows.size() + read.index_changes.size());
      return;
    }
    EXPECT_EQ(read.rows.size(), (snapshot.samples_stored() + 4095) / 4096);
    EXPECT_FALSE(read.indexes.empty());
    EXPECT_TRUE(read.base.empty());
    EXPECT_EQ(records, 1 + read.rows.size() + read.indexes.size());
  }

  // The records as the server collects them from the file.
  ModelSnapshotRecords Records() const {
    RecordReader reader(contents_, "snap");
    ModelSnapshotRecords records;
    RecordType type;
    absl::string_view payload;
    while (reader.Next(&type, &payload) == RecordReader::Result::kRecord) {
      if (type == kModelStateRecord) records.state = payload;
      if (type == kSnapshotBaseRecord) records.base = payload;
      if (type == kStoreRowsRecord) records.rows.push_back(payload);
      if (type == kIndexStructureRecord) records.indexes.push_back(payload);
      if (type == kIndexChangesRecord) {
        records.index_changes.push_back(payload);
      }
    }
    return records;
  }

  absl::StatusOr<std::unique_ptr<Model>> Restore(
      const ModelConfig& config) const {
    return Model::Restore(config, Records());
  }

  std::string& contents() { return contents_; }

 private:
  std::string directory_;
  std::string contents_;
};

std::size_t Bytes(const std::vector<absl::string_view>& payloads) {
  std::size_t bytes = 0;
  for (absl::string_view payload : payloads) bytes += payload.size();
  return bytes;
}

struct Case {
  const char* name;
  ModelConfig config;
};

// Models restored along a stream, each with the samples it had learned:
// at the end each learns on to the stream's end and must be the model
// that never stopped.
class RestoredAlong {
 public:
  void Add(std::unique_ptr<Model> model, std::size_t learned) {
    models_.push_back(std::move(model));
    learned_.push_back(learned);
  }
  void ExpectEachAsAtTheEnd(const Model& never_stopped, const Stream& stream,
                            const Stream& queries) {
    for (std::size_t r = 0; r < models_.size(); ++r) {
      SCOPED_TRACE(::testing::Message() << "restored at " << learned_[r]);
      LearnAll(*models_[r], stream, learned_[r], stream.size(), 53);
      ExpectSameModel(never_stopped, *models_[r], queries);
    }
  }

 private:
  std::vector<std::unique_ptr<Model>> models_;
  std::vector<std::size_t> learned_;
};

std::vector<Case> Cases() {
  // BusyConfig: many captures land while background work is in progress.
  std::vector<Case> cases;
  cases.push_back({"kernel_gradient_weights", BusyConfig(BaseConfig())});
  ModelConfig egop = BusyConfig(BaseConfig());
  egop.metric = MetricKind::kEgop;
  egop.regressor = RegressorKind::kNearest;
  egop.per_target_metric = true;
  egop.capacity = {CapacityPolicy::kWindow, 1200};
  cases.push_back({"knn_egop_per_target_window", egop});
  ModelConfig reservoir = BusyConfig(BaseConfig());
  reservoir.metric = MetricKind::kEgop;
  reservoir.capacity = {CapacityPolicy::kReservoir, 1000};
  reservoir.seed = 17;
  cases.push_back({"kernel_egop_reservoir", reservoir});
  ModelConfig euclidean = BaseConfig();
  euclidean.metric = MetricKind::kEuclidean;
  euclidean.regressor = RegressorKind::kNearest;
  cases.push_back({"knn_euclidean", euclidean});
  ModelConfig forgetting = BusyConfig(BaseConfig());
  forgetting.metric_forgetting = 0.995;
  forgetting.selection_forgetting = 0.99;
  cases.push_back({"kernel_forgetting", forgetting});
  ModelConfig local_linear = BusyConfig(BaseConfig());
  local_linear.regressor = RegressorKind::kLocalLinear;
  local_linear.local_linear_ridge = 0.5;
  // Growth refreshes estimate at a stride of at most 128 samples.
  local_linear.metric_refresh_samples = 128;
  cases.push_back(
      {"local_linear_gradient_weights_strided_refresh", local_linear});
  ModelConfig linear_base = BusyConfig(BaseConfig());
  linear_base.regressor = RegressorKind::kNearest;
  linear_base.linear_base = true;
  linear_base.base_forgetting = 0.999;
  linear_base.capacity = {CapacityPolicy::kWindow, 1200};
  // At most half the window: 600.
  linear_base.interval_lag = 5000;
  cases.push_back({"knn_linear_base_window", linear_base});
  ModelConfig automatic = BusyConfig(BaseConfig());
  automatic.metric = MetricKind::kEgop;
  automatic.regressor = RegressorKind::kAuto;
  cases.push_back({"auto_egop", automatic});
  ModelConfig automatic_metric = BusyConfig(BaseConfig());
  automatic_metric.metric = MetricKind::kAuto;
  automatic_metric.regressor = RegressorKind::kAuto;
  automatic_metric.capacity = {CapacityPolicy::kWindow, 1500};
  cases.push_back({"auto_metric_auto_regressor_window", automatic_metric});
  ModelConfig base_per_target = BusyConfig(BaseConfig());
  base_per_target.metric = MetricKind::kGradientWeights;
  base_per_target.regressor = RegressorKind::kAuto;
  base_per_target.per_target_base = true;
  cases.push_back({"auto_gw_base_per_target", base_per_target});
  // Candidates combined: their weights restored exactly.
  ModelConfig combined = base_per_target;
  combined.metric = MetricKind::kMlkr;
  combined.combine = true;
  // Intervals that widen with difficulty: its scale restored exactly.
  combined.interval_difficulty = true;
  // Queries' intervals calibrated apart: the slots they leave out restored.
  combined.honest_lag = 50;
  combined.interval_lag = 300;
  // Local linear fits over the leading 2 of 3 coordinates beside all 3:
  // their choices restored with the selectors.
  combined.local_linear_leading = 2;
  cases.push_back({"auto_mlkr_base_per_target_combined", combined});
  ModelConfig mlkr = BusyConfig(BaseConfig());
  mlkr.metric = MetricKind::kMlkr;
  mlkr.regressor = RegressorKind::kNearest;
  mlkr.linear_base = true;
  cases.push_back({"knn_mlkr_linear_base", mlkr});
  // A random-feature base: rebuilt at each take-over of the first index,
  // its residuals swept (mid-sweep and mid-rebuild at some captures).
  ModelConfig random_features = BusyConfig(BaseConfig());
  random_features.metric = MetricKind::kMlkr;
  random_features.regressor = RegressorKind::kNearest;
  random_features.random_feature_base = true;
  random_features.random_feature_frequencies = 16;
  random_features.interval_difficulty = true;
  cases.push_back({"knn_mlkr_random_feature_base", random_features});
  ModelConfig random_window = BusyConfig(BaseConfig());
  random_window.regressor = RegressorKind::kAuto;
  random_window.random_feature_base = true;
  random_window.random_feature_frequencies = 8;
  random_window.per_target_base = true;
  random_window.base_forgetting = 0.999;
  random_window.capacity = {CapacityPolicy::kWindow, 1200};
  cases.push_back(
      {"auto_gw_random_feature_base_per_target_window", random_window});
  // The metric chosen per target, each index combining its candidates over
  // a random-feature base that follows the targets' choice: every index's
  // weights, and the base's coordinates, restored exactly.
  ModelConfig automatic_combined = BusyConfig(BaseConfig());
  automatic_combined.metric = MetricKind::kAuto;
  automatic_combined.regressor = RegressorKind::kAuto;
  automatic_combined.random_feature_base = true;
  automatic_combined.random_feature_frequencies = 8;
  automatic_combined.per_target_base = true;
  automatic_combined.combine = true;
  cases.push_back(
      {"auto_metric_random_feature_base_combined", automatic_combined});
  ModelConfig mlkr_rank = BusyConfig(BaseConfig());
  mlkr_rank.metric = MetricKind::kMlkr;
  mlkr_rank.mlkr_rank = 2;
  mlkr_rank.per_target_metric = true;
  mlkr_rank.interval_difficulty = true;
  mlkr_rank.capacity = {CapacityPolicy::kWindow, 1200};
  cases.push_back({"kernel_mlkr_rank2_per_target_window", mlkr_rank});
  ModelConfig glml = BusyConfig(BaseConfig());
  glml.metric = MetricKind::kGlml;
  glml.linear_base = false;
  glml.interval_difficulty = true;
  glml.honest_lag = 50;
  glml.interval_lag = 300;
  glml.base_forgetting = 0.999;
  glml.capacity = {CapacityPolicy::kWindow, 1200};
  cases.push_back({"kernel_glml_forgetting_window", glml});
  ModelConfig automatic_glml = BusyConfig(BaseConfig());
  automatic_glml.metric = MetricKind::kAuto;
  automatic_glml.regressor = RegressorKind::kNearest;
  automatic_glml.linear_base = false;
  cases.push_back({"knn_auto_metric_with_glml", automatic_glml});
  return cases;
}

TEST(ModelSnapshotTest, RestoredModelsBehaveExactlyAsTheModelThatGoesOn) {
  const Stream stream = MakeStream(3000, 5);
  const Stream queries = MakeStream(40, 6);
  const std::vector<std::size_t> capture_at = {37, 370, 1110, 1554, 2368};
  std::size_t captured_busy = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto model = MakeModel(c.config);
    RestoredAlong restored;
    std::size_t learned = 0;
    for (std::size_t at : capture_at) {
      LearnAll(*model, stream, learned, at);
      learned = at;
      const ModelStats stats = model->stats();
      captured_busy += stats.rebuild_in_progress ? 1 : 0;
      const std::vector<Prediction> now = PredictAll(*model, queries);
      SnapshotFile file;
      const ModelSnapshot snapshot = model->CaptureSnapshot();
      EXPECT_EQ(snapshot.samples_seen(), at);
      // The model learns on while the snapshot is written.
      LearnAll(*model, stream, at, at + 25);
      file.Write(snapshot);
      absl::StatusOr<std::unique_ptr<Model>> back = file.Restore(c.config);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ((*back)->stats().samples_seen, at);
      // Every index was read back from its structure.
      EXPECT_THAT((*back)->restore_notes(), ::testing::IsEmpty());
      ExpectSamePredictions(PredictAll(**back, queries), now);
      // A snapshot without structures (as older ones) builds the trees.
      ModelSnapshotRecords without = file.Records();
      without.indexes.clear();
      absl::StatusOr<std::unique_ptr<Model>> built =
          Model::Restore(c.config, without);
      ASSERT_TRUE(built.ok()) << built.status();
      ExpectSamePredictions(PredictAll(**built, queries), now);
      LearnAll(**back, stream, at, at + 25);
      learned = at + 25;
      restored.Add(*std::move(back), learned);
    }
    LearnAll(*model, stream, learned, stream.size(), 11);
    if (c.config.random_feature_base) {
      // Rebuilt at take-overs along the way (some caught mid-way).
      EXPECT_GT(model->stats().base_rebuilds, 5u);
    }
    restored.ExpectEachAsAtTheEnd(*model, stream, queries);
  }
  // Some captures happened while background work was in flight.
  EXPECT_GT(captured_busy, 3u);
}

// The records of a chain of snapshots, oldest first.
std::vector<ModelSnapshotRecords> RecordsOf(
    const std::vector<std::unique_ptr<SnapshotFile>>& chain) {
  std::vector<ModelSnapshotRecords> records;
  for (const auto& file : chain) records.push_back(file->Records());
  return records;
}

// A model that moves no index to new coordinates (so any snapshot can be
// built on).
ModelConfig EuclideanNearestConfig() {
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEuclidean;
  config.regressor = RegressorKind::kNearest;
  return config;
}

// A whole snapshot of `model` as it is, then snapshots built on it in a
// chain, each once the model has learned `stream` on to the next of
// `at` (from `learned`).
struct WholeAndChain {
  SnapshotFile whole;
  std::vector<std::unique_ptr<SnapshotFile>> chain;
  std::vector<ModelSnapshotRecords> links() const { return RecordsOf(chain); }
};
std::unique_ptr<WholeAndChain> SnapshotChain(
    Model& model, const Stream& stream, std::size_t learned,
    const std::vector<std::size_t>& at) {
  auto snapshots = std::make_unique<WholeAndChain>();
  const ModelSnapshot whole = model.CaptureSnapshot();
  snapshots->whole.Write(whole);
  SnapshotBase base = whole.AsBase();
  for (std::size_t next : at) {
    LearnAll(model, stream, learned, next);
    learned = next;
    const std::optional<ModelSnapshot> later = model.CaptureSnapshotSince(base);
    EXPECT_TRUE(later.has_value()) << "at " << next;
    if (!later.has_value()) break;
    snapshots->chain.push_back(std::make_unique<SnapshotFile>());
    snapshots->chain.back()->Write(*later);
    base = later->AsBase();
  }
  return snapshots;
}

// A snapshot built on an earlier one (a whole one, or a chain of them
// built on a whole one) holds only what changed since (the state, the
// newer rows and the tree nodes written) and, restored with the records of
// those it builds on, gives the model the whole snapshot of the same moment
// would: it predicts, reports and learns on exactly as the model that never
// stopped, its trees node for node the model's at capture. Where the whole
// one's trees or the rows before are no longer the model's, none is built.
TEST(ModelSnapshotTest, ASnapshotBuiltOnAnotherRestoresAsAWholeOne) {
  const Stream stream = MakeStream(3000, 5);
  const Stream queries = MakeStream(40, 6);
  const std::vector<std::size_t> capture_at = {905, 1000, 1300, 1700};
  std::size_t built = 0, built_busy = 0, longest_chain = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto model = MakeModel(c.config);
    LearnAll(*model, stream, 0, 900);
    SnapshotFile whole;
    const ModelSnapshot whole_snapshot = model->CaptureSnapshot();
    whole.Write(whole_snapshot);
    SnapshotBase base = whole_snapshot.AsBase();
    EXPECT_EQ(base.samples_seen, 900u);
    EXPECT_EQ(base.rows, base.tree_rows);
    std::vector<std::unique_ptr<SnapshotFile>> chain;
    RestoredAlong restored;
    std::size_t learned = 900;
    for (std::size_t at : capture_at) {
      LearnAll(*model, stream, learned, at);
      learned = at;
      std::optional<ModelSnapshot> later = model->CaptureSnapshotSince(base);
      const std::size_t capacity =
          c.config.capacity.policy == CapacityPolicy::kUnbounded
              ? stream.size()
              : c.config.capacity.limit;
      if (at > capacity) {
        // Samples replaced stored ones (or were not kept) since the base.
        EXPECT_FALSE(later.has_value());
      }
      if (!later.has_value()) continue;
      ++built;
      built_busy += model->stats().rebuild_in_progress ? 1 : 0;
      const std::vector<Prediction> now = PredictAll(*model, queries);
      chain.push_back(std::make_unique<SnapshotFile>());
      chain.back()->Write(*later);
      longest_chain = std::max(longest_chain, chain.size());
      EXPECT_FALSE(chain.back()->Records().index_changes.empty());
      // The trees as a whole snapshot now would save them.
      std::optional<SnapshotFile> same_moment;
      if (!model->stats().rebuild_in_progress) {
        same_moment.emplace();
        same_moment->Write(model->CaptureSnapshot());
        // The changes, not every node.
        EXPECT_LT(Bytes(chain.back()->Records().index_changes),
                  Bytes(same_moment->Records().indexes));
      }
      // The next one builds on this one; the trees stay the whole one's.
      base = later->AsBase();
      EXPECT_EQ(base.tree_rows, whole_snapshot.AsBase().rows);
      absl::StatusOr<std::unique_ptr<Model>> back = Model::Restore(
          c.config,
          ModelSnapshotRecords::BuiltOn(whole.Records(), RecordsOf(chain)));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ((*back)->stats().samples_seen, at);
      EXPECT_THAT((*back)->restore_notes(), ::testing::IsEmpty());
      EXPECT_EQ((*back)->restore_insertions(), 0u);
      ExpectSamePredictions(PredictAll(**back, queries), now);
      if (same_moment.has_value()) {  // node for node
        SnapshotFile restored_trees;
        restored_trees.Write((*back)->CaptureSnapshot());
        EXPECT_EQ(restored_trees.Records().indexes,
                  same_moment->Records().indexes);
      }
      LearnAll(**back, stream, at, at + 25);
      LearnAll(*model, stream, at, at + 25);
      learned = at + 25;
      restored.Add(*std::move(back), learned);
    }
    LearnAll(*model, stream, learned, stream.size(), 11);
    restored.ExpectEachAsAtTheEnd(*model, stream, queries);
  }
  // Every case builds on its whole snapshot at first (the busy ones move
  // their indexes to new coordinates within a hundred samples or so;
  // take-overs come at fixed sample counts, so these counts do not vary);
  // some while a rebuild was in progress, which the restored model builds
  // again; some in chains of all four.
  EXPECT_GE(built, 20u);
  EXPECT_GT(built_busy, 0u);
  EXPECT_EQ(longest_chain, capture_at.size());
}

// A chain goes on while a whole snapshot is taken (a cluster puts
// increments on the chain before it while the whole one is being put): a
// link built on the chain's last, after a whole capture that closed a
// mark of its own on the trees, still holds every change since that link;
// and one built on the whole capture holds every change since it, those
// of the links built meanwhile included.
TEST(ModelSnapshotTest, AChainGoesOnWhileAWholeSnapshotIsTaken) {
  const Stream stream = MakeStream(1040, 5);
  const Stream queries = MakeStream(40, 6);
  std::size_t built = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto model = MakeModel(c.config);
    // Restored from `records`, the model as it is now, no row inserted.
    const auto restored_as_now =
        [&](const ModelSnapshotRecords& records) -> std::unique_ptr<Model> {
      absl::StatusOr<std::unique_ptr<Model>> back =
          Model::Restore(c.config, records);
      EXPECT_TRUE(back.ok()) << back.status();
      if (!back.ok()) return nullptr;
      EXPECT_EQ((*back)->stats().samples_seen, model->stats().samples_seen);
      EXPECT_THAT((*back)->restore_notes(), ::testing::IsEmpty());
      EXPECT_EQ((*back)->restore_insertions(), 0u);
      ExpectSamePredictions(PredictAll(**back, queries),
                            PredictAll(*model, queries));
      return *std::move(back);
    };
    LearnAll(*model, stream, 0, 900);
    SnapshotFile old_whole, link;
    const ModelSnapshot old_whole_snapshot = model->CaptureSnapshot();
    old_whole.Write(old_whole_snapshot);
    LearnAll(*model, stream, 900, 930);
    const std::optional<ModelSnapshot> link_snapshot =
        model->CaptureSnapshotSince(old_whole_snapshot.AsBase());
    if (link_snapshot.has_value()) link.Write(*link_snapshot);
    LearnAll(*model, stream, 930, 960);
    SnapshotFile whole;
    const ModelSnapshot whole_snapshot = model->CaptureSnapshot();
    whole.Write(whole_snapshot);
    LearnAll(*model, stream, 960, 1000);
    std::optional<ModelSnapshot> during;
    if (link_snapshot.has_value()) {
      during = model->CaptureSnapshotSince(link_snapshot->AsBase());
    }
    SnapshotFile during_file;
    if (during.has_value()) {
      during_file.Write(*during);
      restored_as_now(ModelSnapshotRecords::BuiltOn(
          old_whole.Records(), {link.Records(), during_file.Records()}));
    }
    LearnAll(*model, stream, 1000, 1040);
    const std::optional<ModelSnapshot> after =
        model->CaptureSnapshotSince(whole_snapshot.AsBase());
    if (!after.has_value()) continue;
    SnapshotFile after_file;
    after_file.Write(*after);
    const std::unique_ptr<Model> back = restored_as_now(
        ModelSnapshotRecords::BuiltOn(whole.Records(), {after_file.Records()}));
    ASSERT_NE(back, nullptr);
    if (!model->stats().rebuild_in_progress) {  // node for node
      SnapshotFile same_moment, restored_trees;
      same_moment.Write(model->CaptureSnapshot());
      restored_trees.Write(back->CaptureSnapshot());
      EXPECT_EQ(restored_trees.Records().indexes,
                same_moment.Records().indexes);
    }
    built += during.has_value() ? 1 : 0;
  }
  // The configurations that build both links (the busy ones move their
  // indexes to new coordinates meanwhile; take-overs come at fixed sample
  // counts, so this does not vary with timing — only with the schedule:
  // since the random-feature base's rebuilds have a budget, one such
  // configuration's metric, learned from residuals under the base, moves
  // its index between the links).
  EXPECT_GE(built, 4u);
}

// A snapshot built on another is refused (DATA_LOSS) with a damaged base
// record, or with any other records than those of the chain it builds on.
TEST(ModelSnapshotTest, ASnapshotBuiltOnAnotherNeedsItsOwnChain) {
  const Stream stream = MakeStream(900, 5);
  const ModelConfig config = EuclideanNearestConfig();
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, 500);
  SnapshotFile earlier;
  earlier.Write(model->CaptureSnapshot());
  LearnAll(*model, stream, 500, 600);
  const std::unique_ptr<WholeAndChain> snapshots =
      SnapshotChain(*model, stream, 600, {700, 900});
  const SnapshotFile& whole = snapshots->whole;
  const std::vector<ModelSnapshotRecords> links = snapshots->links();
  ASSERT_EQ(links.size(), 2u);
  EXPECT_TRUE(Model::Restore(
                  config, ModelSnapshotRecords::BuiltOn(whole.Records(), links))
                  .ok());
  const auto refused = [&](const ModelSnapshotRecords& records) {
    const absl::Status status = Model::Restore(config, records).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    return std::string(status.message());
  };
  // Another whole one, a link left out.
  refused(ModelSnapshotRecords::BuiltOn(earlier.Records(), links));
  refused(ModelSnapshotRecords::BuiltOn(whole.Records(), {links[1]}));
  ModelSnapshotRecords damaged =
      ModelSnapshotRecords::BuiltOn(whole.Records(), links);
  const std::string cut(damaged.base.substr(0, damaged.base.size() - 1));
  damaged.base = cut;
  EXPECT_THAT(refused(damaged), ::testing::HasSubstr("base record"));
}

// A chain's tree changes are used while each link has them: where a link
// has none for a tree (saved by a server that did not save them, or after
// the tree was replaced), or they are damaged, the rows stored after the
// last changes used are inserted (or the tree built) instead, with the
// same predictions.
TEST(ModelSnapshotTest, ALinkWithoutTreeChangesHasItsRowsInserted) {
  const Stream stream = MakeStream(1500, 5);
  const Stream queries = MakeStream(40, 6);
  const ModelConfig config = EuclideanNearestConfig();
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, 600);
  const std::unique_ptr<WholeAndChain> snapshots =
      SnapshotChain(*model, stream, 600, {1000, 1500});
  const SnapshotFile& whole = snapshots->whole;
  const std::vector<Prediction> now = PredictAll(*model, queries);
  const auto restored = [&](const std::vector<ModelSnapshotRecords>& links,
                            std::size_t insertions, bool noted) {
    absl::StatusOr<std::unique_ptr<Model>> back = Model::Restore(
        config, ModelSnapshotRecords::BuiltOn(whole.Records(), links));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ((*back)->restore_insertions(), insertions);
    EXPECT_EQ((*back)->restore_notes().empty(), !noted);
    ExpectSamePredictions(PredictAll(**back, queries), now);
  };
  const std::vector<ModelSnapshotRecords> links = snapshots->links();
  ASSERT_EQ(links.size(), 2u);
  restored(links, 0, false);
  // The last link without: its 500 rows inserted.
  std::vector<ModelSnapshotRecords> without = links;
  without[1].index_changes.clear();
  restored(without, 500, false);
  // The first: the second's changes no longer apply, 900 rows inserted.
  without = links;
  without[0].index_changes.clear();
  restored(without, 900, false);
  // The last damaged: refused and said so, its tree built from the rows.
  std::vector<ModelSnapshotRecords> damaged = links;
  ASSERT_GE(damaged[1].index_changes.size(), 2u);
  const std::string cut(damaged[1].index_changes[1].substr(
      0, damaged[1].index_changes[1].size() - 1));
  damaged[1].index_changes[1] = cut;
  restored(damaged, 0, true);
}

// A model restored from a chain goes on with it: a snapshot built on the
// restored model (its restored_base()) extends the chain it was restored
// from, with the changes of every tree read back exactly as saved; a tree
// that had rows inserted on restore is not, and gets its rows since
// inserted at the next restore.
TEST(ModelSnapshotTest, ARestoredModelBuildsOnTheChainItWasRestoredFrom) {
  const Stream stream = MakeStream(1300, 5);
  const Stream queries = MakeStream(40, 6);
  const ModelConfig config = EuclideanNearestConfig();
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, 600);
  EXPECT_FALSE(model->restored_base().has_value());
  const std::unique_ptr<WholeAndChain> snapshots =
      SnapshotChain(*model, stream, 600, {1000});
  const SnapshotFile& whole = snapshots->whole;
  LearnAll(*model, stream, 1000, stream.size());
  const std::vector<Prediction> at_the_end = PredictAll(*model, queries);

  for (const bool link_with_changes : {true, false}) {
    SCOPED_TRACE(link_with_changes ? "as saved" : "rows inserted");
    std::vector<ModelSnapshotRecords> links = snapshots->links();
    ASSERT_EQ(links.size(), 1u);
    if (!link_with_changes) links[0].index_changes.clear();
    absl::StatusOr<std::unique_ptr<Model>> back = Model::Restore(
        config, ModelSnapshotRecords::BuiltOn(whole.Records(), links));
    ASSERT_TRUE(back.ok()) << back.status();
    const std::optional<SnapshotBase> base = (*back)->restored_base();
    ASSERT_TRUE(base.has_value());
    EXPECT_EQ(base->samples_seen, 1000u);
    LearnAll(**back, stream, 1000, stream.size());
    const std::optional<ModelSnapshot> next =
        (*back)->CaptureSnapshotSince(*base);
    ASSERT_TRUE(next.has_value());
    std::vector<std::unique_ptr<SnapshotFile>> longer;
    longer.push_back(std::make_unique<SnapshotFile>());
    longer.back()->Write(*next);
    EXPECT_EQ(longer.back()->Records().index_changes.empty(),
              !link_with_changes);
    links.push_back(longer.back()->Records());
    absl::StatusOr<std::unique_ptr<Model>> again = Model::Restore(
        config, ModelSnapshotRecords::BuiltOn(whole.Records(), links));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_THAT((*again)->restore_notes(), ::testing::IsEmpty());
    EXPECT_EQ((*again)->restore_insertions(), link_with_changes ? 0u : 700u);
    ExpectSamePredictions(PredictAll(**again, queries), at_the_end);
  }
}

TEST(ModelSnapshotTest, RefusesDamagedOrMismatchedSnapshots) {
  const Stream stream = MakeStream(600, 5);
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEgop;
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size());
  SnapshotFile file;
  file.Write(model->CaptureSnapshot());
  ASSERT_TRUE(file.Restore(config).ok());

  ModelConfig other = config;
  other.metric = MetricKind::kGradientWeights;
  EXPECT_EQ(file.Restore(other).status().code(), absl::StatusCode::kDataLoss);
  ModelConfig wider = config;
  wider.input_dim = kDim + 1;
  EXPECT_EQ(file.Restore(wider).status().code(), absl::StatusCode::kDataLoss);

  // Without its last rows record the snapshot is refused, not half-loaded.
  ModelSnapshotRecords records = file.Records();
  records.rows.pop_back();
  const absl::Status partial = Model::Restore(config, records).status();
  EXPECT_EQ(partial.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(partial.message(), ::testing::HasSubstr("stored samples"));
}

// A damaged state record is refused, naming the part that did not decode
// and the byte it began at, and the rows record its slot.
TEST(ModelSnapshotTest, ADamagedRecordNamesItsPartAndByte) {
  const Stream stream = MakeStream(600, 5);
  const ModelConfig config = BaseConfig();
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size());
  SnapshotFile file;
  file.Write(model->CaptureSnapshot());
  const ModelSnapshotRecords whole = file.Records();
  const std::string state(whole.state);
  for (std::size_t cut = 0; cut < state.size(); cut += 1 + cut / 8) {
    ModelSnapshotRecords records = whole;
    records.state = absl::string_view(state).substr(0, cut);
    const absl::Status status = Model::Restore(config, records).status();
    ASSERT_EQ(status.code(), absl::StatusCode::kDataLoss) << cut;
    const std::string message(status.message());
    EXPECT_THAT(message, ::testing::StartsWith("model state: ")) << cut;
    // Cut short, or a length inside that promises more than follows.
    EXPECT_THAT(message,
                ::testing::AnyOf(
                    ::testing::EndsWith(": truncated"),
                    ::testing::EndsWith(": malformed, or not of this model")))
        << cut;
    // The part named began at or before the cut.
    const std::size_t at = message.find(" at byte ");
    ASSERT_NE(at, std::string::npos) << message;
    EXPECT_LE(std::stoul(message.substr(at + 9)), cut) << message;
  }
  // The shape saved (after the version) is not the model's.
  std::string other_shape = state;
  other_shape[4] = 7;  // input_dim
  ModelSnapshotRecords records = whole;
  records.state = other_shape;
  EXPECT_EQ(Model::Restore(config, records).status().message(),
            "model state: shape at byte 4: malformed, or not of this model");
  // A rows record that does not start where the store ends: the first
  // again.
  records = whole;
  records.rows.push_back(records.rows.front());
  EXPECT_EQ(Model::Restore(config, records).status().message(),
            absl::StrCat("stored rows record ", whole.rows.size(),
                         " is malformed: stored rows: start at slot 0, the "
                         "store holds 600"));
}

// An index structure that does not fit is never trusted: the model is
// restored with that tree built from the stored samples, and says so.
TEST(ModelSnapshotTest, ADamagedIndexStructureIsRebuiltNotTrusted) {
  const Stream stream = MakeStream(900, 5);
  const Stream queries = MakeStream(30, 6);
  const ModelConfig config = BaseConfig();
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size());
  const std::vector<Prediction> now = PredictAll(*model, queries);
  SnapshotFile file;
  file.Write(model->CaptureSnapshot());

  // Every parent distance of the first nodes record changed (after index
  // u32, part u8, first u64, count u32: 48 bytes a node, the parent
  // distance at byte 8 of each).
  ModelSnapshotRecords records = file.Records();
  std::size_t nodes_record = 0;
  while (records.indexes[nodes_record][4] != 1) ++nodes_record;
  std::string damaged(records.indexes[nodes_record]);
  for (std::size_t at = 17 + 8; at + 8 <= damaged.size(); at += 48) {
    const double wrong = 12345.0;
    std::memcpy(damaged.data() + at, &wrong, sizeof wrong);
  }
  records.indexes[nodes_record] = damaged;
  absl::StatusOr<std::unique_ptr<Model>> back = Model::Restore(config, records);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ((*back)->restore_notes().size(), 1u);
  EXPECT_THAT((*back)->restore_notes()[0],
              ::testing::HasSubstr("rebuilt from the stored samples"));
  ExpectSamePredictions(PredictAll(**back, queries), now);

  // A record cut short: every index is built from the samples.
  records = file.Records();
  std::string cut(records.indexes.back());
  cut.pop_back();
  records.indexes.back() = cut;
  back = Model::Restore(config, records);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT((*back)->restore_notes()[0], ::testing::HasSubstr("malformed"));
  ExpectSamePredictions(PredictAll(**back, queries), now);
}

// The records without the rebuilt trees' structures (numbered from the
// number of live trees on), as a snapshot of the same moment taken while
// those rebuilds were still building would hold.
ModelSnapshotRecords WithoutRebuiltTrees(ModelSnapshotRecords records,
                                         std::size_t rebuilt_trees) {
  std::size_t trees = 0;  // header records: live and rebuilt trees
  for (absl::string_view payload : records.indexes) {
    trees += payload[4] == 0 ? 1 : 0;
  }
  const std::size_t live = trees - rebuilt_trees;
  std::erase_if(records.indexes, [&](absl::string_view payload) {
    ByteReader in(payload);
    return in.U32() >= live;
  });
  return records;
}

// Learns `stream` one sample at a time, after each waiting until the
// model's background work has settled (as scheduled snapshots do) and
// capturing it, until a capture from the 300th sample on is `wanted`;
// none if no capture was. *learned: the samples learned.
std::optional<ModelSnapshot> CaptureSettledWhen(
    Model& model, const Stream& stream, std::size_t* learned,
    const std::function<bool(const ModelSnapshot&)>& wanted) {
  for (*learned = 0; *learned < stream.size();) {
    LearnAll(model, stream, *learned, *learned + 1);
    ++*learned;
    for (int wait = 0; wait < 5000 && !model.BackgroundWorkSettled(); ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(model.BackgroundWorkSettled()) << "at " << *learned;
    ModelSnapshot snapshot = model.CaptureSnapshot();
    if (*learned >= 300 && wanted(snapshot)) return snapshot;
  }
  return std::nullopt;
}

// A background rebuild that had caught up with learning when the snapshot
// was taken is saved with its new tree: restored, it takes over at the
// sample count it was due at without being built again, and the model
// goes on exactly as the one captured; without that tree, the restore
// builds it again, with the same results.
TEST(ModelSnapshotTest, ARebuildThatHadCaughtUpIsReadBackNotBuiltAgain) {
  const Stream stream = MakeStream(2000, 5);
  const Stream queries = MakeStream(30, 6);
  const ModelConfig config = BusyConfig(BaseConfig());
  auto model = MakeModel(config);
  // A rebuild catches up long before its take-over.
  std::size_t learned = 0;
  const std::optional<ModelSnapshot> snapshot = CaptureSettledWhen(
      *model, stream, &learned,
      [](const ModelSnapshot& s) { return s.rebuilt_trees() > 0; });
  ASSERT_TRUE(snapshot.has_value());
  SnapshotFile file;
  file.Write(*snapshot);

  absl::StatusOr<std::unique_ptr<Model>> read_back = file.Restore(config);
  ASSERT_TRUE(read_back.ok()) << read_back.status();
  EXPECT_THAT((*read_back)->restore_notes(), ::testing::IsEmpty());
  absl::StatusOr<std::unique_ptr<Model>> built_again = Model::Restore(
      config, WithoutRebuiltTrees(file.Records(), snapshot->rebuilt_trees()));
  ASSERT_TRUE(built_again.ok()) << built_again.status();
  EXPECT_THAT((*built_again)->restore_notes(), ::testing::IsEmpty());

  // Taking the rebuilds over now: only the second restore built trees.
  for (Model* m : {read_back->get(), built_again->get()}) m->FinishRebuilds();
  EXPECT_EQ((*built_again)->stats().index_builds_timed -
                (*read_back)->stats().index_builds_timed,
            snapshot->rebuilt_trees());
  EXPECT_EQ((*read_back)->stats().index_builds_timed, 0u);
  ExpectSameModel(**read_back, **built_again, queries);

  // Restored again, each learns on past the take-over exactly as the model.
  read_back = file.Restore(config);
  ASSERT_TRUE(read_back.ok()) << read_back.status();
  LearnAll(*model, stream, learned, stream.size(), 7);
  LearnAll(**read_back, stream, learned, stream.size(), 29);
  ExpectSameModel(*model, **read_back, queries);
}

// A snapshot captured once the model's background work has settled
// (Model::BackgroundWorkSettled, what scheduled snapshots wait for) holds
// a metric refresh in progress as its result, and any rebuild's new tree:
// restored, the model computes and builds nothing again, and goes on
// exactly as the one captured.
TEST(ModelSnapshotTest, ASettledCaptureLeavesARestoreNothingToRedo) {
  const Stream stream = MakeStream(2000, 5);
  const Stream queries = MakeStream(30, 6);
  // Unbounded store; gradient weights, whose refresh it catches running.
  ModelConfig config = BusyConfig(BaseConfig());
  config.metric = MetricKind::kGradientWeights;
  auto model = MakeModel(config);
  std::size_t learned = 0;
  const std::optional<ModelSnapshot> snapshot = CaptureSettledWhen(
      *model, stream, &learned,
      [](const ModelSnapshot& s) { return s.refresh_in_progress(); });
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_FALSE(snapshot->refresh_saved_as_job());
  SnapshotFile file;
  file.Write(*snapshot);

  absl::StatusOr<std::unique_ptr<Model>> back = file.Restore(config);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE((*back)->BackgroundWorkSettled());
  (*back)->FinishRebuilds();
  EXPECT_EQ((*back)->stats().index_builds_timed, 0u);
  back = file.Restore(config);
  ASSERT_TRUE(back.ok()) << back.status();
  LearnAll(*model, stream, learned, stream.size(), 7);
  LearnAll(**back, stream, learned, stream.size(), 29);
  ExpectSameModel(*model, **back, queries);
}

TEST(ModelSnapshotTest, CaptureCopiesNoStoredSample) {
  // Copy-on-write: capturing shares the stored rows and the index trees'
  // nodes; a write afterwards leaves the snapshot's view unchanged.
  const Stream stream = MakeStream(5000, 8);
  ModelConfig config = BaseConfig();
  config.capacity = {CapacityPolicy::kWindow, 4500};
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, 4600);
  SnapshotFile before_more, after_more;
  const ModelSnapshot snapshot = model->CaptureSnapshot();
  before_more.Write(snapshot);
  LearnAll(*model, stream, 4600, 5000);  // overwrites window slots
  after_more.Write(snapshot);
  EXPECT_EQ(before_more.contents(), after_more.contents());
}

// Under TakeOverRule::kLogged, the take-over records a model applied to
// work still running are part of its state: a model restored from a
// snapshot taken with records pending takes that work over where the
// model that went on does, with no record after the snapshot.
TEST(ModelSnapshotTest, TakeOverRecordsPendingAtASnapshotAreRestored) {
  const Stream stream = MakeStream(1200, 9);
  const Stream queries = MakeStream(40, 10);
  ModelConfig config = BusyConfig(BaseConfig());
  config.metric = MetricKind::kMlkr;
  config.take_over = TakeOverRule::kLogged;
  auto model = MakeModel(config);
  // Every piece of work recorded as it starts (it then takes over at its
  // fixed count), up to a moment with records pending.
  std::size_t learned = 0;
  std::size_t pending = 0;
  while (learned < 600 || pending == 0) {
    ASSERT_LT(learned, stream.size() - 200);
    pending = 0;
    for (const UnrecordedWork& work : model->UnrecordedTakeOvers()) {
      EXPECT_TRUE(model->ApplyTakeOverRecord(work.key));
      ++pending;
    }
    LearnAll(*model, stream, learned, learned + 1);
    ++learned;
  }
  SnapshotFile file;
  file.Write(model->CaptureSnapshot());
  absl::StatusOr<std::unique_ptr<Model>> back = file.Restore(config);
  ASSERT_TRUE(back.ok()) << back.status();
  const std::uint64_t rebuilds = model->stats().index_rebuilds;
  const std::uint64_t refreshes = model->stats().metric_refreshes;
  // No record from here on: only the pending ones take over.
  LearnAll(*model, stream, learned, stream.size(), 1);
  LearnAll(**back, stream, learned, stream.size(), 1);
  EXPECT_GT(model->stats().index_rebuilds + model->stats().metric_refreshes,
            rebuilds + refreshes);
  ExpectSameModel(*model, **back, queries);
}

}  // namespace
}  // namespace streamreg
