// The model a server starts hosting a replica with, on a real three-node
// NATS JetStream cluster: from its log's create entry while it has no
// snapshot (the follower to read on from entry 2), from its newest
// snapshot chain once it has one (from the entry after it), and refused
// while the log holds no create entry or starts otherwise.
#include "server/cluster/replica_model.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/log_entries.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

class ReplicaModelTest : public NatsClusterTest {
 protected:
  void SetUp() override {
    NatsClusterTest::SetUp();
    ASSERT_NE(client_, nullptr);
    config_ = BaseConfig();
    config_.metric = MetricKind::kEuclidean;
    absl::StatusOr<LogStream> log =
        Retried([&] { return LogStream::Open(*client_, "arm", {}); });
    ASSERT_TRUE(log.ok()) << log.status();
    log_.emplace(*std::move(log));
    snapshots_.emplace(SnapshotStore::Open(*client_, "arm", {}));
  }

  void Append(const std::string& id, const std::string& payload) {
    ASSERT_TRUE(Retried([&] { return log_->Append(id, payload); }).ok());
  }
  void AppendCreate() {
    Append("arm/create",
           EncodeCreateEntry({"arm", absl::FromUnixSeconds(1), config_, {}}));
  }
  void AppendSamples(std::size_t begin, std::size_t end) {
    const std::vector<Sample> batch = Slice(stream_, begin, end);
    Append(BatchMessageId("arm", batch, ""), EncodeSamplesEntry(batch));
  }

  const Stream stream_ = MakeStream(200, 9);
  ModelConfig config_;
  WorkerPool pool_{2};
  ModelRegistry registry_{RegistryLimits{}, HostingPools{&pool_, &pool_},
                          nullptr};
  std::optional<LogStream> log_;
  std::optional<SnapshotStore> snapshots_;
};

TEST_F(ReplicaModelTest, WithoutASnapshotItIsMadeFromTheCreateEntry) {
  AppendCreate();
  AppendSamples(0, 50);  // entry 2
  absl::StatusOr<ReplicaModel> made =
      MakeReplicaModel(registry_, "arm", *log_, *snapshots_);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->from, 2u);
  EXPECT_EQ(made->stored, 2u);
  EXPECT_EQ(made->model->name(), "arm");
  EXPECT_EQ(made->model->model().samples_seen(), 0u);  // the follower's
  EXPECT_EQ(made->model->log_applied(), 1u);
}

TEST_F(ReplicaModelTest, WithASnapshotItIsMadeFromItAndReadsOnAfter) {
  AppendCreate();
  AppendSamples(0, 100);    // entry 2
  AppendSamples(100, 150);  // entry 3
  // A snapshot through entry 2: a model that learned its samples.
  std::unique_ptr<Model> learned = LearnedModel(config_, stream_, 100);
  auto hosted = std::make_shared<HostedModel>(
      "arm", std::move(learned), std::vector<std::string>{},
      absl::FromUnixSeconds(1),
      HostedModel::Limits{.max_samples = 0, .dedup_window = 10000},
      HostingPools{&pool_, &pool_});
  hosted->log_writer()->NoteApplied(2);  // as a replica that applied entry 2
  absl::StatusOr<HostedModel::LogSnapshot> snapshot = hosted->CaptureForLog();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_EQ(snapshot->log_sequence, 2u);
  ASSERT_TRUE(
      Retried([&] { return snapshots_->Put(2, snapshot->bytes); }).ok());

  absl::StatusOr<ReplicaModel> made =
      MakeReplicaModel(registry_, "arm", *log_, *snapshots_);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->from, 3u);
  EXPECT_EQ(made->stored, 3u);
  EXPECT_EQ(made->model->model().samples_seen(), 100u);
}

TEST_F(ReplicaModelTest, ALogWithoutItsCreateEntryIsRefused) {
  absl::StatusOr<ReplicaModel> empty =
      MakeReplicaModel(registry_, "arm", *log_, *snapshots_);
  EXPECT_TRUE(absl::IsNotFound(empty.status())) << empty.status();
  AppendSamples(0, 10);  // entry 1, not a create entry
  absl::StatusOr<ReplicaModel> damaged =
      MakeReplicaModel(registry_, "arm", *log_, *snapshots_);
  EXPECT_TRUE(absl::IsDataLoss(damaged.status())) << damaged.status();
}

}  // namespace
}  // namespace streamreg
