// The window of recent sample ids a model deduplicates against: the last
// `capacity` ids with the position each was first written at.
#include "server/hosting/recent_sample_ids.h"

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(RecentSampleIdsTest, RemembersTheLastCapacityIdsWithTheirSequence) {
  RecentSampleIds ids(3);
  for (std::uint64_t id = 1; id <= 5; ++id) ids.Remember(id * 10, id);
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_FALSE(ids.Find(10).has_value());
  EXPECT_FALSE(ids.Find(20).has_value());
  EXPECT_EQ(ids.Find(30), 3u);
  EXPECT_EQ(ids.Find(50), 5u);
  ids.Remember(50, 99);  // already known: keeps its first position
  EXPECT_EQ(ids.Find(50), 5u);
  RecentSampleIds none(0);
  none.Remember(1, 1);
  EXPECT_FALSE(none.Find(1).has_value());
}

}  // namespace
}  // namespace streamreg
