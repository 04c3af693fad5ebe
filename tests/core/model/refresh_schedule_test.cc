// The refresh schedule (core/model/refresh_schedule.h): how many samples
// a metric refresh estimates at.
#include "core/model/refresh_schedule.h"

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(RefreshScheduleTest,
     ARefreshEstimatesAtMostHalfTheSamplesBeforeItsTakeOver) {
  ModelConfig config;  // 16,384 at most; small stores below 2,048
  // A small store: every sample (the take-over lag, at most 64, does not
  // bound it).
  EXPECT_EQ(RefreshPoints(config, 1000), 2048u);
  // 30,500 samples take over a quarter later: half of 7,625 of them.
  EXPECT_EQ(RefreshPoints(config, 30'500), 3812u);
  // 200,000: the configured bound.
  EXPECT_EQ(RefreshPoints(config, 200'000), 16384u);
  config.metric_refresh_samples = 1000;
  EXPECT_EQ(RefreshPoints(config, 30'500), 1000u);
  config.metric_refresh_samples = 0;  // every sample, exactly
  EXPECT_EQ(RefreshPoints(config, 200'000), 0u);
}
}  // namespace
}  // namespace streamreg
