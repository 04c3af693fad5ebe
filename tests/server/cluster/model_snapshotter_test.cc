// The snapshots of a replica this server snapshots, on a real three-node
// NATS JetStream cluster: a whole one once enough samples were applied,
// increments built on it between, nothing when nothing is due, and the
// increment a stopping server takes of what was applied since.
#include "server/cluster/model_snapshotter.h"

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/log_follower.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/cluster_parts.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

constexpr absl::Duration kWait = absl::Seconds(30);

class ModelSnapshotterTest : public NatsClusterTest {
 protected:
  void SetUp() override {
    NatsClusterTest::SetUp();
    ASSERT_NE(client_, nullptr);
    // A fixed metric: no index of the model moves to a new build (after
    // which an increment would be refused for a whole snapshot).
    config_ = BaseConfig();
    config_.metric = MetricKind::kEuclidean;
    std::optional<LogStream> log = LogWithCreateEntry(*client_, "arm", config_);
    ASSERT_TRUE(log.has_value());
    hosted_ = HostedModelOf("arm", config_, {&writes_, &learning_});
    replica_ = std::make_shared<HostedReplica>(
        *std::move(log), SnapshotStore::Open(*client_, "arm", {}), hosted_,
        /*replayed_from=*/2,
        ReplicatedLog::Options{.writer = "server-a/1",
                               .append_timeout = kWait});
    replica_->Follow(
        LogFollower::Start(replica_->log(), ApplierOf(*hosted_), 2, 0));
    replica_->snapshots_here = true;
  }

  // Learns samples [begin, end) of the stream through the replica's log,
  // in batches of `batch`.
  void Learn(std::size_t begin, std::size_t end, std::size_t batch = 40) {
    for (std::size_t b = begin; b < end; b += batch) {
      const std::vector<Sample> samples =
          Slice(stream_, b, std::min(end, b + batch));
      absl::StatusOr<ValidatedSamples> valid =
          hosted_->model().Validate(samples);
      ASSERT_TRUE(valid.ok()) << valid.status();
      absl::StatusOr<LearnOutcome> outcome =
          replica_->AppendSamples(*valid, {.deadline = absl::Now() + kWait});
      ASSERT_TRUE(outcome.ok()) << outcome.status();
    }
    hosted_->CatchUp();
    // A whole snapshot waits for the model's background work (an MLKR fit,
    // an index build) unless twice as many samples came: settled first, so
    // that what is due is put.
    const absl::Time deadline = absl::Now() + kWait;
    while (!hosted_->model().BackgroundWorkSettled() &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_TRUE(hosted_->model().BackgroundWorkSettled());
  }

  void SnapshotDue(ModelSnapshotter& snapshotter) {
    snapshotter.SnapshotDue({replica_}, std::stop_token());
  }

  // The newest snapshot the store holds, with its increments.
  SnapshotStore::Snapshot Newest() {
    absl::StatusOr<SnapshotStore::Snapshot> newest =
        replica_->snapshots().Newest();
    EXPECT_TRUE(newest.ok()) << newest.status();
    return newest.ok() ? *std::move(newest) : SnapshotStore::Snapshot{};
  }

  static ModelSnapshotter::Options Every200Increments50() {
    return {.every_samples = 200,
            .interval = absl::Hours(1),
            .increment_samples = 50};
  }

  const Stream stream_ = MakeStream(400, 5);
  ModelConfig config_;
  WorkerPool writes_{2};
  WorkerPool learning_{2};
  std::shared_ptr<HostedModel> hosted_;
  std::shared_ptr<HostedReplica> replica_;
};

TEST_F(ModelSnapshotterTest, AWholeSnapshotThenIncrementsBuiltOnIt) {
  ModelSnapshotter snapshotter(Every200Increments50());
  Learn(0, 160);  // log entries 2-5
  SnapshotDue(snapshotter);
  EXPECT_EQ(snapshotter.counters().snapshots.load(), 0u);  // not due yet
  Learn(160, 200);                                         // entry 6
  SnapshotDue(snapshotter);
  EXPECT_EQ(snapshotter.counters().snapshots.load(), 1u);
  EXPECT_EQ(snapshotter.counters().increments.load(), 0u);
  EXPECT_EQ(replica_->snapshot_through.load(), 6u);
  SnapshotStore::Snapshot newest = Newest();
  EXPECT_EQ(newest.log_sequence, 6u);
  EXPECT_TRUE(newest.increments.empty());

  Learn(200, 260, /*batch=*/30);  // entries 7, 8
  SnapshotDue(snapshotter);
  EXPECT_EQ(snapshotter.counters().snapshots.load(), 1u);
  EXPECT_EQ(snapshotter.counters().increments.load(), 1u);
  EXPECT_EQ(replica_->snapshot_through.load(), 8u);
  newest = Newest();
  EXPECT_EQ(newest.log_sequence, 6u);
  ASSERT_EQ(newest.increments.size(), 1u);
  EXPECT_EQ(newest.newest_log_sequence(), 8u);

  // Nothing new: nothing put.
  SnapshotDue(snapshotter);
  EXPECT_EQ(snapshotter.counters().snapshots.load(), 1u);
  EXPECT_EQ(snapshotter.counters().increments.load(), 1u);
  EXPECT_EQ(snapshotter.counters().failures.load(), 0u);
}

TEST_F(ModelSnapshotterTest, ALeavingServerSnapshotsWhatItAppliedSince) {
  ModelSnapshotter snapshotter(Every200Increments50());
  Learn(0, 200);  // entries 2-6
  SnapshotDue(snapshotter);
  ASSERT_EQ(snapshotter.counters().snapshots.load(), 1u);
  Learn(200, 220);  // entry 7: fewer samples than an increment's
  SnapshotDue(snapshotter);
  EXPECT_EQ(snapshotter.counters().increments.load(), 0u);
  snapshotter.SnapshotBeforeLeaving({replica_});
  EXPECT_EQ(snapshotter.counters().increments.load(), 1u);
  EXPECT_EQ(Newest().newest_log_sequence(), 7u);
  // It stopped applying the log first: writes go elsewhere now.
  absl::StatusOr<ValidatedSamples> valid =
      hosted_->model().Validate(Slice(stream_, 220, 230));
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_TRUE(absl::IsUnavailable(
      replica_->AppendSamples(*valid, {.deadline = absl::Now() + kWait})
          .status()));
}

TEST_F(ModelSnapshotterTest, WholeSnapshotsOnlyWithoutIncrements) {
  ModelSnapshotter snapshotter({.every_samples = 100,
                                .interval = absl::Hours(1),
                                .increment_samples = 0});
  Learn(0, 120);  // entries 2-4
  SnapshotDue(snapshotter);
  Learn(120, 240);  // entries 5-7
  SnapshotDue(snapshotter);
  EXPECT_EQ(snapshotter.counters().snapshots.load(), 2u);
  EXPECT_EQ(snapshotter.counters().increments.load(), 0u);
  const SnapshotStore::Snapshot newest = Newest();
  EXPECT_EQ(newest.log_sequence, 7u);
  EXPECT_TRUE(newest.increments.empty());
  // Two kept: the log through the older one's last entry is compacted.
  absl::StatusOr<std::uint64_t> first = replica_->log().FirstSequence();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 5u);
}

}  // namespace
}  // namespace streamreg
