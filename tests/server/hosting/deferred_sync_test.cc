// DeferredSync (server/hosting/deferred_sync.h): reports held until one
// fsync covers them all, each given that fsync's status; a report held
// while the fsync runs waits for the next.
#include "server/hosting/deferred_sync.h"

#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(DeferredSyncTest, OneSyncReportsEveryHeldReportItsStatus) {
  DeferredSync deferred;
  std::vector<absl::Status> reported;
  const auto report = [&reported](const absl::Status& synced) {
    reported.push_back(synced);
  };
  // Only the first held asks for a sync to be scheduled.
  EXPECT_TRUE(deferred.Hold(report));
  EXPECT_FALSE(deferred.Hold(report));
  EXPECT_FALSE(deferred.Hold(report));
  int syncs = 0;
  deferred.Sync([&syncs] {
    ++syncs;
    return absl::DataLossError("disk full");
  });
  EXPECT_EQ(syncs, 1);
  ASSERT_EQ(reported.size(), 3u);
  for (const absl::Status& status : reported) {
    EXPECT_EQ(status, absl::DataLossError("disk full"));
  }
  // Nothing held: a sync reports nothing.
  deferred.Sync([&syncs] {
    ++syncs;
    return absl::OkStatus();
  });
  EXPECT_EQ(syncs, 2);
  EXPECT_EQ(reported.size(), 3u);
}

TEST(DeferredSyncTest, AReportHeldDuringASyncWaitsForTheNext) {
  DeferredSync deferred;
  std::vector<int> reported;
  ASSERT_TRUE(
      deferred.Hold([&](const absl::Status&) { reported.push_back(1); }));
  deferred.Sync([&] {
    // Appended after the fsync began: not covered by it, and the first of
    // the next group.
    EXPECT_TRUE(
        deferred.Hold([&](const absl::Status&) { reported.push_back(2); }));
    return absl::OkStatus();
  });
  EXPECT_EQ(reported, std::vector<int>{1});
  deferred.Sync([] { return absl::OkStatus(); });
  EXPECT_EQ(reported, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace streamreg
