// Durability of the hosting layer (server/hosting/model_storage.h): models come
// back after a crash exactly as a model that never stopped (snapshots, log
// segments, refits, retried ids); interrupted deletes and creates are
// finished; damage is reported and the model kept as failed; a full,
// read-only or failing disk refuses writes clearly and loses nothing
// acknowledged; snapshots and syncs run beside learning and predictions.
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/learn_batcher.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/model_storage.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// Hands `sample` to its model's group commit, as a Learn stream's message
// is; `done` gets its durability report.
void LearnInGroup(HostedModel& model, const Sample& sample,
                  std::function<void(LearnBatcher::Result)> done) {
  model.LearnInGroup({.sample = *model.model().Validate({&sample, 1}),
                      .ticket = model.Announce(AdmissionTicket(), 1),
                      .abandoned = {},
                      .done = std::move(done)});
}
namespace fs = std::filesystem;

std::vector<std::string> FilesIn(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class DurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = FreshDirectory();
    options_.file_system = &file_system_;
    options_.segment_bytes = 16 << 10;  // many segments
    options_.snapshot_every_samples = 1'000'000;
    Open();
  }
  void TearDown() override {
    Crash();
    fs::remove_all(directory_);
  }

  void Open() {
    storage_ = std::make_unique<ModelStorage>(directory_, options_);
    registry_ = std::make_unique<ModelRegistry>(
        limits_, HostingPools{&pool_, &learning_}, storage_.get());
    ASSERT_TRUE(registry_->Recover().ok());
  }
  // Drops everything in memory: only what each write put on disk remains.
  void Crash() {
    if (storage_ != nullptr) storage_->StopBackground();
    pool_.Drain();
    learning_.Drain();
    registry_.reset();
    storage_.reset();
  }
  void Restart() {
    Crash();
    Open();
  }

  // The model, once it has learned every sample acknowledged so far.
  std::shared_ptr<HostedModel> Find(const std::string& name) {
    absl::StatusOr<std::shared_ptr<HostedModel>> model = registry_->Find(name);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return nullptr;
    (*model)->CatchUp();
    return *model;
  }
  // Model "m", on a server restarted with `linger` (--learn-linger).
  std::shared_ptr<HostedModel> CreateLingering(absl::Duration linger) {
    options_.learn_linger = linger;
    Restart();
    if (!registry_->Create("m", BaseConfig(), {}).ok()) return nullptr;
    return Find("m");
  }
  std::string ModelDirectory(const std::string& name) {
    return directory_ + "/models/" + name;
  }

  std::string directory_;
  FaultInjectingFileSystem file_system_;
  StorageOptions options_;
  RegistryLimits limits_;
  WorkerPool pool_{2};
  WorkerPool learning_{2};
  std::unique_ptr<ModelStorage> storage_;
  std::unique_ptr<ModelRegistry> registry_;
};

TEST_F(DurabilityTest, RecoversEveryModelExactlyAsIfItNeverStopped) {
  const Stream stream = MakeStream(2400, 3);
  const Stream queries = MakeStream(30, 4);
  ModelConfig gw = BusyConfig(BaseConfig());
  ModelConfig egop = BusyConfig(BaseConfig());
  egop.metric = MetricKind::kEgop;
  egop.regressor = RegressorKind::kNearest;
  egop.capacity = {CapacityPolicy::kReservoir, 700};
  egop.seed = 5;
  ModelConfig mlkr = BusyConfig(BaseConfig());
  mlkr.metric = MetricKind::kMlkr;
  mlkr.regressor = RegressorKind::kNearest;
  mlkr.linear_base = true;
  ASSERT_TRUE(registry_->Create("gw", gw, {}).ok());
  ASSERT_TRUE(registry_->Create("egop", egop, {"a", "b", "c"}).ok());
  ModelConfig glml = BusyConfig(BaseConfig());
  glml.metric = MetricKind::kGlml;
  glml.regressor = RegressorKind::kNearest;
  glml.linear_base = false;
  ASSERT_TRUE(registry_->Create("mlkr", mlkr, {}).ok());
  ASSERT_TRUE(registry_->Create("glml", glml, {}).ok());
  auto gw_reference = MakeModel(gw);
  auto egop_reference = MakeModel(egop);
  auto mlkr_reference = MakeModel(mlkr);
  auto glml_reference = MakeModel(glml);

  auto learn = [&](std::size_t begin, std::size_t end) {
    const std::vector<Sample> batch = Slice(stream, begin, end);
    for (const char* name : {"gw", "egop", "mlkr", "glml"}) {
      absl::StatusOr<LearnOutcome> outcome = Find(name)->Learn(batch, nullptr);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      ASSERT_EQ(outcome->accepted, batch.size());
    }
    ASSERT_TRUE(gw_reference->Learn(batch).ok());
    ASSERT_TRUE(egop_reference->Learn(batch).ok());
    ASSERT_TRUE(mlkr_reference->Learn(batch).ok());
    ASSERT_TRUE(glml_reference->Learn(batch).ok());
  };
  auto expect_both_same = [&] {
    ExpectSameModel(Find("gw")->model(), *gw_reference, queries);
    ExpectSameModel(Find("egop")->model(), *egop_reference, queries);
    ExpectSameModel(Find("mlkr")->model(), *mlkr_reference, queries);
    ExpectSameModel(Find("glml")->model(), *glml_reference, queries);
  };

  for (std::size_t s = 0; s < 700; s += 50) learn(s, s + 50);
  ASSERT_TRUE(Find("gw")->Snapshot().ok());  // mid-stream, mid-rebuild
  ASSERT_TRUE(Find("mlkr")->Snapshot().ok());
  ASSERT_TRUE(Find("glml")->Snapshot().ok());
  for (std::size_t s = 700; s < 1000; s += 50) learn(s, s + 50);
  ASSERT_TRUE(Find("mlkr")->Refit({}).ok());
  ASSERT_TRUE(mlkr_reference->Refit().ok());
  ASSERT_TRUE(Find("egop")->Refit({}).ok());
  ASSERT_TRUE(egop_reference->Refit().ok());
  for (std::size_t s = 1000; s < 1500; s += 50) learn(s, s + 50);
  // The log rolled over to several segments; the snapshot removed the
  // ones before it.
  EXPECT_GT(FilesIn(ModelDirectory("egop")).size(), 4u);
  EXPECT_THAT(FilesIn(ModelDirectory("gw")),
              ::testing::Contains(::testing::StartsWith("snapshot-")));

  Restart();
  expect_both_same();
  EXPECT_EQ(Find("egop")->input_names(),
            (std::vector<std::string>{"a", "b", "c"}));
  // A retried batch is still recognised, with the sequence it was learned
  // at.
  absl::StatusOr<LearnOutcome> retry =
      Find("gw")->Learn(Slice(stream, 1450, 1500), nullptr);
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->duplicates, 50u);
  EXPECT_EQ(retry->sequence.front(), 1451u);

  // Learning goes on after recovery, and survives the next crash too.
  for (std::size_t s = 1500; s < 1900; s += 50) learn(s, s + 50);
  ASSERT_TRUE(Find("egop")->Snapshot().ok());
  Restart();
  expect_both_same();
  for (std::size_t s = 1900; s < 2400; s += 100) learn(s, s + 100);
  Restart();
  expect_both_same();
}

TEST_F(DurabilityTest, FinishesDeletesAndCreatesACrashInterrupted) {
  const Stream stream = MakeStream(200, 3);
  ASSERT_TRUE(registry_->Create("deleted", BaseConfig(), {}).ok());
  ASSERT_TRUE(Find("deleted")->Learn(Slice(stream, 0, 100), nullptr).ok());
  // The delete record is logged; the crash comes before the files go.
  ASSERT_TRUE(Find("deleted")->journal()->AppendDelete().ok());
  // A creation that never completed: a torn create record.
  fs::create_directories(ModelDirectory("half"));
  std::ofstream(ModelDirectory("half") + "/wal-00000000000000000001.log")
      << "torn";
  // A deletion interrupted after the rename.
  fs::create_directories(directory_ + "/trash/old.123");
  std::ofstream(directory_ + "/trash/old.123/wal-00000000000000000001.log")
      << "x";
  ASSERT_TRUE(registry_->Create("kept", BaseConfig(), {}).ok());
  ASSERT_TRUE(Find("kept")->Learn(Slice(stream, 0, 50), nullptr).ok());

  Restart();
  EXPECT_EQ(registry_->size(), 1u);
  EXPECT_TRUE(registry_->failed().empty());
  EXPECT_EQ(registry_->Find("deleted").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(registry_->Find("half").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(FilesIn(directory_ + "/models"),
            (std::vector<std::string>{"kept"}));
  EXPECT_TRUE(FilesIn(directory_ + "/trash").empty());
  EXPECT_EQ(Find("kept")->model().samples_seen(), 50u);

  // A delete through the registry removes the files at once; the name can
  // be used again.
  ASSERT_TRUE(registry_->Delete("kept").ok());
  EXPECT_FALSE(fs::exists(ModelDirectory("kept")));
  ASSERT_TRUE(registry_->Create("kept", BaseConfig(), {}).ok());
  Restart();
  EXPECT_EQ(Find("kept")->model().samples_seen(), 0u);
}

TEST_F(DurabilityTest, ReportsDamageWithFileAndOffsetAndKeepsTheModelFailed) {
  const Stream stream = MakeStream(300, 3);
  ASSERT_TRUE(registry_->Create("damaged", BaseConfig(), {}).ok());
  ASSERT_TRUE(registry_->Create("torn", BaseConfig(), {}).ok());
  for (std::size_t s = 0; s < 150; s += 50) {
    ASSERT_TRUE(Find("damaged")->Learn(Slice(stream, s, s + 50), nullptr).ok());
    ASSERT_TRUE(Find("torn")->Learn(Slice(stream, s, s + 50), nullptr).ok());
  }
  Crash();
  // A damaged byte in the middle of the first segment of "damaged" (whole
  // records follow it), and a torn record at the end of "torn".
  const std::string segment =
      ModelDirectory("damaged") + "/wal-00000000000000000001.log";
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(segment) / 3));
    file.put('\x5a');
  }
  const std::string torn_segment =
      ModelDirectory("torn") + "/wal-00000000000000000001.log";
  const std::uintmax_t whole = fs::file_size(torn_segment);
  {
    // The first 30 bytes of a record (its own first one): a whole header
    // and a partial payload, as a write cut short leaves it.
    std::string start(30, '\0');
    std::ifstream(torn_segment, std::ios::binary).read(start.data(), 30);
    std::ofstream(torn_segment, std::ios::app | std::ios::binary) << start;
  }
  Open();

  // The torn tail is cut off; everything acknowledged is there.
  EXPECT_EQ(Find("torn")->model().samples_seen(), 150u);
  EXPECT_EQ(fs::file_size(torn_segment), whole);
  // The damaged model is failed, named with its file and offset.
  ASSERT_EQ(registry_->failed().size(), 1u);
  const absl::Status found = registry_->Find("damaged").status();
  EXPECT_EQ(found.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(found.message(), HasSubstr("wal-00000000000000000001.log"));
  EXPECT_THAT(found.message(), HasSubstr("at offset"));
  EXPECT_THAT(found.message(), HasSubstr("checksum mismatch"));
  EXPECT_EQ(registry_->Create("damaged", BaseConfig(), {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  // Its files are kept until it is deleted.
  EXPECT_TRUE(fs::exists(segment));
  ASSERT_TRUE(registry_->Delete("damaged").ok());
  EXPECT_FALSE(fs::exists(ModelDirectory("damaged")));
  EXPECT_TRUE(registry_->Create("damaged", BaseConfig(), {}).ok());
}

// Group commit: Learn messages that wait for the model's write queue
// together are logged in one record with one fsync (--sync=always), and
// every one of them is durable when it is answered.
TEST_F(DurabilityTest, LearnMessagesWaitingTogetherShareOneFsync) {
  const Stream stream = MakeStream(60, 3);
  ASSERT_TRUE(registry_->Create("m", BaseConfig(), {}).ok());
  std::shared_ptr<HostedModel> model = Find("m");
  const std::vector<Sample> samples = Slice(stream, 0, 40);
  // Running before the first Submit: the batcher's turns are urgent and
  // would run ahead of a blocker still queued.
  std::latch running(1);
  std::latch release(1);
  model->writes().Post([&] {
    running.count_down();
    release.wait();
  });
  running.wait();
  std::atomic<int> answered = 0;
  std::latch all_answered(static_cast<std::ptrdiff_t>(samples.size()));
  for (const Sample& sample : samples) {
    LearnInGroup(*model, sample, [&](LearnBatcher::Result result) {
      EXPECT_TRUE(result.status.ok());
      ++answered;
      all_answered.count_down();
    });
  }
  const int syncs_before = file_system_.file_syncs.load();
  release.count_down();
  all_answered.wait();
  EXPECT_EQ(answered.load(), 40);
  EXPECT_EQ(file_system_.file_syncs.load() - syncs_before, 1);
  // One by one, each pays its own.
  for (std::size_t s = 40; s < 50; ++s) {
    ASSERT_TRUE(model->Learn(Slice(stream, s, s + 1), nullptr).ok());
  }
  EXPECT_EQ(file_system_.file_syncs.load() - syncs_before, 11);
  model.reset();
  Restart();
  EXPECT_EQ(Find("m")->model().samples_seen(), 50u);
}

// --learn-linger: a Learn stream's samples are logged and learned at once,
// and those sent within the linger of the first (here 5, 10 ms apart,
// within 2 s) share one fsync, each reported durable only after it; under
// --sync=interval nothing waits (an append costs no fsync).
TEST_F(DurabilityTest, StreamedSamplesAreLearnedAtOnceAndShareADeferredFsync) {
  const Stream stream = MakeStream(60, 3);
  std::shared_ptr<HostedModel> model = CreateLingering(absl::Seconds(2));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->journal()->learn_linger(), absl::Seconds(2));
  const int syncs_before = file_system_.file_syncs.load();
  const std::vector<Sample> samples = Slice(stream, 0, 5);
  std::atomic<int> durable = 0;
  std::latch all_durable(5);
  for (const Sample& sample : samples) {
    LearnInGroup(*model, sample, [&](LearnBatcher::Result result) {
      EXPECT_TRUE(result.status.ok());
      EXPECT_EQ(file_system_.file_syncs.load() - syncs_before, 1);
      ++durable;
      all_durable.count_down();
    });
    absl::SleepFor(absl::Milliseconds(10));
  }
  model->CatchUp();
  EXPECT_EQ(model->model().samples_seen(), 5u);
  EXPECT_EQ(durable.load(), 0);  // the fsync is still to come
  EXPECT_EQ(file_system_.file_syncs.load() - syncs_before, 0);
  all_durable.wait();
  EXPECT_EQ(file_system_.file_syncs.load() - syncs_before, 1);
  model.reset();
  Restart();
  EXPECT_EQ(Find("m")->model().samples_seen(), 5u);

  options_.sync = SyncPolicy{.mode = SyncPolicy::Mode::kInterval,
                             .interval = absl::Milliseconds(5)};
  Restart();
  EXPECT_EQ(Find("m")->journal()->learn_linger(), absl::ZeroDuration());
}

// A deferred fsync that fails: the samples it covered were learned and are
// reported not durable with the disk's error, and the log refuses what
// comes after (what reached the disk is unknown).
TEST_F(DurabilityTest, AFailedDeferredFsyncReportsItsSamplesNotDurable) {
  const Stream stream = MakeStream(60, 3);
  std::shared_ptr<HostedModel> model = CreateLingering(absl::Milliseconds(20));
  ASSERT_NE(model, nullptr);
  file_system_.sync_error = EIO;
  const std::vector<Sample> samples = Slice(stream, 0, 3);
  std::latch all_reported(3);
  for (const Sample& sample : samples) {
    LearnInGroup(*model, sample, [&](LearnBatcher::Result result) {
      EXPECT_EQ(result.status.code(), absl::StatusCode::kUnavailable)
          << result.status;
      EXPECT_TRUE(result.sync_deferred);
      all_reported.count_down();
    });
  }
  all_reported.wait();
  model->CatchUp();
  EXPECT_EQ(model->model().samples_seen(), 3u);
  const absl::Status after =
      model->Learn(Slice(stream, 3, 4), nullptr).status();
  EXPECT_EQ(after.code(), absl::StatusCode::kUnavailable) << after;
  file_system_.sync_error = 0;
}

TEST_F(DurabilityTest, AFullOrFailingDiskRefusesWritesAndLosesNothing) {
  const Stream stream = MakeStream(400, 3);
  ASSERT_TRUE(registry_->Create("m", BaseConfig(), {}).ok());
  auto learn = [&](std::size_t begin, std::size_t end) {
    return Find("m")->Learn(Slice(stream, begin, end), nullptr).status();
  };
  ASSERT_TRUE(learn(0, 100).ok());

  file_system_.append_error = ENOSPC;
  const absl::Status full = learn(100, 150);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("No space left on device"));
  EXPECT_THAT(full.message(), HasSubstr("wal-"));
  EXPECT_EQ(Find("m")->model().samples_seen(), 100u);  // nothing learned
  // Room again: the same batch goes through (its half-written record was
  // cut off, so the log stays whole).
  file_system_.append_error = 0;
  ASSERT_TRUE(learn(100, 150).ok());

  // A failing fsync: the write is refused, and so is every later one —
  // what reached the disk is unknown — until a restart.
  file_system_.sync_error = EIO;
  const absl::Status failing = learn(150, 200);
  EXPECT_EQ(failing.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(failing.message(), HasSubstr("Input/output error"));
  EXPECT_EQ(Find("m")->model().samples_seen(), 150u);
  file_system_.sync_error = 0;
  const absl::Status after = learn(200, 250);
  EXPECT_EQ(after.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(after.message(), HasSubstr("until the server restarts"));
  // Predictions go on.
  EXPECT_TRUE(Find("m")->model().Predict(stream.input(0)).ok());

  // A read-only disk: creating a model fails and leaves nothing behind.
  file_system_.create_error = EROFS;
  const absl::Status read_only =
      registry_->Create("new", BaseConfig(), {}).status();
  EXPECT_EQ(read_only.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read_only.message(), HasSubstr("Read-only file system"));
  EXPECT_EQ(registry_->Find("new").status().code(),
            absl::StatusCode::kNotFound);
  file_system_.create_error = 0;

  Restart();
  // Every acknowledged sample is back (the refused batch whose record
  // reached the file may be too: it was never acknowledged).
  const std::uint64_t recovered = Find("m")->model().samples_seen();
  EXPECT_GE(recovered, 150u);
  absl::StatusOr<LearnOutcome> again =
      Find("m")->Learn(Slice(stream, 0, 150), nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->duplicates, 150u);
  EXPECT_FALSE(fs::exists(ModelDirectory("new")));
}

TEST_F(DurabilityTest, SnapshotsAndSyncsRunBesideLearningAndPredictions) {
  Crash();
  options_.sync =
      SyncPolicy{SyncPolicy::Mode::kInterval, absl::Milliseconds(2)};
  options_.snapshot_every_samples = 300;
  Open();
  ModelRegistry* registry = registry_.get();
  storage_->Start([registry] { return registry->List("", 100); });
  const Stream stream = MakeStream(3000, 9);
  const Stream queries = MakeStream(20, 10);
  const ModelConfig config = BusyConfig(BaseConfig());
  ASSERT_TRUE(registry_->Create("m", config, {}).ok());
  auto reference = MakeModel(config);
  std::shared_ptr<HostedModel> model = Find("m");
  std::atomic<bool> learning = true;
  std::thread reader([&] {
    while (learning) {
      (void)model->model().Predict(queries.input(0));
      (void)model->model().stats();
    }
  });
  for (std::size_t s = 0; s < stream.size(); s += 20) {
    const std::vector<Sample> batch = Slice(stream, s, s + 20);
    ASSERT_TRUE(model->Learn(batch, nullptr).ok());
    ASSERT_TRUE(reference->Learn(batch).ok());
  }
  learning = false;
  reader.join();
  model.reset();
  storage_->Stop();  // a clean shutdown: a last snapshot
  const std::vector<std::string> files = FilesIn(ModelDirectory("m"));
  EXPECT_THAT(files, ::testing::Contains(::testing::StartsWith("snapshot-")));
  Restart();
  ExpectSameModel(Find("m")->model(), *reference, queries);
}

// Under the logged take-over rule a model's background work takes over
// where its journal recorded it done (server/hosting/hosted_model.h,
// RecordDoneWork) while it learns a Learn stream's samples, and at its
// fixed counts in an Ingest batch: a model that crashed is recovered —
// from a snapshot taken mid-stream and the journal after it, or from the
// journal alone — exactly as it was, bit for bit. Fed by a Learn stream
// alone, its learning never waited for its work.
TEST_F(DurabilityTest, ALoggedModelTakesOverWhereItsJournalSays) {
  const Stream stream = MakeStream(1600, 13);
  const Stream queries = MakeStream(30, 14);
  struct Logged {
    const char* name;
    MetricKind metric;
    bool snapshot;
  };
  const std::vector<Logged> models = {
      {"mlkr", MetricKind::kMlkr, true},
      {"gw", MetricKind::kGradientWeights, false}};
  for (const Logged& logged : models) {
    ModelConfig config = BusyConfig(BaseConfig());
    config.metric = logged.metric;
    config.take_over = TakeOverRule::kLogged;
    ASSERT_TRUE(registry_->Create(logged.name, config, {}).ok());
  }
  // A Learn stream in small writes, each carrying the records of the work
  // found done since the one before; the second half of the stream has
  // an Ingest batch of 100 every 200 samples.
  for (std::size_t s = 0; s < stream.size();) {
    if (s == 800) {
      for (const Logged& logged : models) {
        if (logged.snapshot) {
          ASSERT_TRUE(Find(logged.name)->Snapshot().ok());
        }
      }
    }
    const bool ingest = s >= 800 && s % 200 == 0;
    const std::size_t end = s + (ingest ? 100 : 20);
    for (const Logged& logged : models) {
      std::shared_ptr<HostedModel> model = Find(logged.name);
      absl::StatusOr<ValidatedSamples> batch =
          model->model().Validate(Slice(stream, s, end));
      ASSERT_TRUE(batch.ok()) << batch.status();
      absl::StatusOr<LearnOutcome> outcome =
          model->Learn(*batch, nullptr, WriteOptions{.streamed = !ingest});
      ASSERT_TRUE(outcome.ok()) << outcome.status();
    }
    if (s == 780) {
      // The Learn stream's first half: learning never waited.
      for (const Logged& logged : models) {
        SCOPED_TRACE(logged.name);
        std::shared_ptr<HostedModel> model = Find(logged.name);
        const ModelStats stats = model->model().stats();
        EXPECT_GT(stats.index_rebuilds, 2u);
        EXPECT_GT(stats.metric_refreshes, 0u);
        EXPECT_EQ(stats.rebuild_waits, 0u);
        EXPECT_EQ(stats.refresh_waits, 0u);
        EXPECT_EQ(model->background_work_waits().count(), 0u);
      }
    }
    s = end;
  }
  std::vector<std::vector<Prediction>> before;
  std::vector<ModelStats> stats_before;
  for (const Logged& logged : models) {
    SCOPED_TRACE(logged.name);
    std::shared_ptr<HostedModel> model = Find(logged.name);
    const ModelStats stats = model->model().stats();
    before.push_back(PredictAll(model->model(), queries));
    stats_before.push_back(stats);
  }
  Restart();
  for (std::size_t m = 0; m < models.size(); ++m) {
    SCOPED_TRACE(models[m].name);
    const Model& recovered = Find(models[m].name)->model();
    ExpectSamePredictions(PredictAll(recovered, queries), before[m]);
    const ModelStats stats = recovered.stats();
    EXPECT_EQ(stats.samples_seen, stats_before[m].samples_seen);
    EXPECT_EQ(stats.prequential_mse, stats_before[m].prequential_mse);
    EXPECT_EQ(stats.index_rebuilds, stats_before[m].index_rebuilds);
    EXPECT_EQ(stats.metric_refreshes, stats_before[m].metric_refreshes);
  }
}

}  // namespace
}  // namespace streamreg
