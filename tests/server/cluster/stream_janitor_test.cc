// The streams nobody will read again, removed on a real three-node NATS
// JetStream cluster: an abandoned log and its snapshots, and the orphans
// a sweep finds while this server is the first live one (and only then),
// the streams a placement reads kept.
#include "server/cluster/stream_janitor.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/snapshot_store.h"
#include "tests/support/cluster_parts.h"

namespace streamreg {
namespace {

class StreamJanitorTest : public NatsPlacementsTest {
 protected:
  void SetUp() override {
    NatsPlacementsTest::SetUp();
    janitor_ =
        std::make_unique<StreamJanitor>(*client_, *placements_, absl::Hours(1));
  }

  // Makes generation `generation` of model `name`'s log, with an entry,
  // and its snapshot stream, with a snapshot.
  void MakeStreams(const std::string& name, std::uint64_t generation) {
    LogStream log = LogStream::Attach(*client_, name, {}, generation);
    ASSERT_TRUE(Retried([&] { return log.Ensure(absl::ZeroDuration()); }).ok());
    ASSERT_TRUE(Retried([&] { return log.Append(name + "/1", "entry"); }).ok());
    SnapshotStore snapshots =
        SnapshotStore::Open(*client_, name, {}, generation);
    ASSERT_TRUE(Retried([&] { return snapshots.Put(1, "snapshot"); }).ok());
  }

  // Whether the cluster holds the stream of that name.
  bool Exists(const std::string& stream) {
    absl::StatusOr<std::vector<std::string>> names =
        Retried([&] { return client_->StreamNames("listing"); });
    EXPECT_TRUE(names.ok()) << names.status();
    return names.ok() &&
           std::find(names->begin(), names->end(), stream) != names->end();
  }

  // Places `name` on `servers` with its log at `generation`.
  std::unique_ptr<StreamJanitor> janitor_;
};

TEST_F(StreamJanitorTest, AnAbandonedLogAndItsSnapshotsAreRemoved) {
  MakeStreams("arm", 1);
  MakeStreams("arm", 2);
  ASSERT_TRUE(Exists(LogStream::StreamName("arm", 1)));
  janitor_->Abandon("arm", 1);
  janitor_->Abandon("arm", 1);  // once is enough
  EXPECT_EQ(janitor_->abandoned(), 1u);
  // Tried until it is gone (a try may time out while the cluster elects).
  for (int round = 0; round < 30 && janitor_->abandoned() > 0; ++round) {
    janitor_->RemoveAbandoned();
    if (janitor_->abandoned() > 0) {
      absl::SleepFor(StreamJanitor::kAbandonedRetryPause);
    }
  }
  EXPECT_EQ(janitor_->abandoned(), 0u);
  EXPECT_FALSE(Exists(LogStream::StreamName("arm", 1)));
  EXPECT_FALSE(Exists(SnapshotStore::StreamName("arm", 1)));
  EXPECT_TRUE(Exists(LogStream::StreamName("arm", 2)));
  EXPECT_TRUE(Exists(SnapshotStore::StreamName("arm", 2)));
}

TEST_F(StreamJanitorTest, OnlyTheFirstLiveServerSweepsOrphans) {
  MakeStreams("arm", 1);   // below its placement's generation: an orphan
  MakeStreams("arm", 2);   // its placement's
  MakeStreams("hand", 1);  // no placement: not made by this cluster's creates
  Place(*placements_, "arm", {"server-a:1"}, 2);
  janitor_->SweepOrphansIfDue(/*first_live=*/false);
  EXPECT_EQ(janitor_->orphans_removed(), 0u);
  EXPECT_TRUE(Exists(LogStream::StreamName("arm", 1)));

  janitor_->SweepOrphansIfDue(/*first_live=*/true);
  EXPECT_EQ(janitor_->orphans_removed(), 2u);  // the log and its snapshots
  EXPECT_FALSE(Exists(LogStream::StreamName("arm", 1)));
  EXPECT_FALSE(Exists(SnapshotStore::StreamName("arm", 1)));
  EXPECT_TRUE(Exists(LogStream::StreamName("arm", 2)));
  EXPECT_TRUE(Exists(LogStream::StreamName("hand", 1)));

  // Deleted (no servers): its streams are orphans too, at the next sweep
  // due (an hour on).
  Place(*placements_, "arm", {}, 2);
  janitor_->SweepOrphansIfDue(/*first_live=*/true);
  EXPECT_TRUE(Exists(LogStream::StreamName("arm", 2)));
}

}  // namespace
}  // namespace streamreg
