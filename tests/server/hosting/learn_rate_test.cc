// A model's measured learning rate: a running average of the time per
// sample over about the last 256 samples, each batch weighing as many
// samples as it has; and the number of samples learned in a wait.
#include "server/hosting/learn_rate.h"

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(LearnRateTest, AveragesTheTimePerSampleAndTurnsAWaitIntoSamples) {
  LearnRate rate;
  EXPECT_EQ(rate.samples_per_second(), 0.0);
  EXPECT_EQ(rate.SamplesIn(absl::Milliseconds(100)), 0u);  // unknown: none
  rate.Record(0, absl::Seconds(1));                        // ignored
  EXPECT_EQ(rate.samples_per_second(), 0.0);

  rate.Record(100, absl::Milliseconds(10));  // the first sets it: 0.1 ms
  EXPECT_DOUBLE_EQ(rate.samples_per_second(), 10'000.0);
  EXPECT_EQ(rate.SamplesIn(absl::Milliseconds(100)), 1000u);
  EXPECT_EQ(rate.SamplesIn(absl::ZeroDuration()), 0u);
  EXPECT_EQ(rate.SamplesIn(absl::Nanoseconds(1)), 1u);  // at least one

  // 256 samples at 2.1 ms weigh as much as the memory: halfway, 1.1 ms.
  rate.Record(256, absl::Microseconds(2100) * 256);
  EXPECT_NEAR(rate.samples_per_second(), 1.0 / 1.1e-3, 1e-6);
  // One sample moves it by 1/257 of the difference only.
  rate.Record(1, absl::Microseconds(100));
  EXPECT_NEAR(1.0 / rate.samples_per_second(), 1.1e-3 - 1e-3 / 257, 1e-12);
  EXPECT_EQ(rate.SamplesIn(absl::Milliseconds(100)),
            static_cast<std::uint64_t>(0.1 * rate.samples_per_second()));

  // A clock that did not move reads as a nanosecond a sample, not as an
  // infinite rate; an infinite wait is a bounded count.
  LearnRate instant;
  instant.Record(1000, absl::ZeroDuration());
  EXPECT_DOUBLE_EQ(instant.samples_per_second(), 1e9);
  EXPECT_NEAR(static_cast<double>(instant.SamplesIn(absl::Seconds(1))), 1e9,
              1.0);
  EXPECT_EQ(instant.SamplesIn(absl::InfiniteDuration()),
            std::uint64_t{1} << 62);
}

}  // namespace
}  // namespace streamreg
