// The refresh schedule (core/model/refresh_schedule.h): how many samples
// a metric refresh estimates at, and when the random-feature base's
// rebuilds are paid for.
#include "core/model/refresh_schedule.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/metric/metric_transform.h"
#include "core/model/random_feature_refresh.h"
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

// A rebuild starts once the samples learned since the last one started
// pay for it, at kRandomBaseRebuildBudget each, or four times a sample's sums
// where those cost more (D = 512: 547,000 multiply-adds) — without which the
// rebuild of a growing store would never be paid for.
TEST(RefreshScheduleTest, ARandomFeatureRebuildIsPaidForByTheSamplesSince) {
  ModelConfig config;
  config.input_dim = 21;
  config.random_feature_frequencies = 64;
  const MetricTransform coordinates = MetricTransform::Standardizing(
      std::vector<double>(21, 0.0), std::vector<double>(21, 1.0));
  // (The smallest number of samples learned that pays for `job`.)
  const auto paid_after = [](const RandomFeatureRefresh::Job& job) {
    std::uint64_t learned = 0;
    while (!RandomBaseRebuildAffordable(job, learned)) ++learned;
    return learned;
  };
  // At the flat budget.
  const RandomFeatureRefresh::Job large =
      RandomFeatureJob(config, coordinates, 30'000);
  EXPECT_EQ(paid_after(large), static_cast<std::uint64_t>(std::ceil(
                                   RandomFeatureRefresh::MultiplyAdds(large) /
                                   kRandomBaseRebuildBudget)));
  EXPECT_EQ(paid_after(large), 944u);
  // With D = 512 a sample's sums cost more than the flat budget: paid for
  // at four times that, within a quarter of the store and a few thousand
  // samples more.
  config.random_feature_frequencies = 512;
  const RandomFeatureRefresh::Job wide =
      RandomFeatureJob(config, coordinates, 30'000);
  const double sample = RandomFeatureRefresh::SampleMultiplyAdds(wide);
  ASSERT_GT(sample, kRandomBaseRebuildBudget);
  const std::uint64_t wide_after = paid_after(wide);
  EXPECT_EQ(wide_after, static_cast<std::uint64_t>(
                            std::ceil(RandomFeatureRefresh::MultiplyAdds(wide) /
                                      (kRandomBaseRebuildPasses * sample))));
  EXPECT_LT(wide_after, 30'000u / 4 + 4096u);
}

}  // namespace
}  // namespace streamreg
