// RunningMoments (core/base/running_moments.h): Welford's one-pass mean and
// population variance equal the two-pass ones, stay accurate about a large
// offset where the naive sum of squares loses every digit, and the scale
// is 1 where dividing by it would not be defined.
#include "core/base/running_moments.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(RunningMomentsTest, EqualsTheTwoPassMeanAndPopulationVariance) {
  std::mt19937_64 random(3);
  std::normal_distribution<double> normal(2.0, 5.0);
  std::vector<std::vector<double>> values(500, std::vector<double>(3));
  RunningMoments moments(3);
  for (std::vector<double>& value : values) {
    for (double& v : value) v = normal(random);
    moments.Add(value);
  }
  EXPECT_EQ(moments.count(), 500u);
  for (std::size_t i = 0; i < 3; ++i) {
    double mean = 0;
    for (const std::vector<double>& value : values) mean += value[i];
    mean /= values.size();
    double variance = 0;
    for (const std::vector<double>& value : values) {
      variance += (value[i] - mean) * (value[i] - mean);
    }
    variance /= values.size();
    EXPECT_NEAR(moments.mean()[i], mean, 1e-12 * std::abs(mean) + 1e-12);
    EXPECT_NEAR(moments.Variance(i), variance, 1e-10 * variance);
    EXPECT_NEAR(moments.ScaleOrOne(i), std::sqrt(variance),
                1e-10 * std::sqrt(variance));
  }
}

TEST(RunningMomentsTest, StaysAccurateAboutALargeOffset) {
  // 1e9 + {0, 1, 2, 3}: variance 1.25; E[x^2] - E[x]^2 in doubles would be
  // lost in rounding (the squares are 1e18, with ulps of 128).
  RunningMoments moments(1);
  for (double v : {0.0, 1.0, 2.0, 3.0}) {
    const double x = 1e9 + v;
    moments.Add({&x, 1});
  }
  EXPECT_DOUBLE_EQ(moments.mean()[0], 1e9 + 1.5);
  EXPECT_NEAR(moments.Variance(0), 1.25, 1e-9);
}

TEST(RunningMomentsTest, TheScaleIsOneWhereItIsNotYetKnownOrZero) {
  RunningMoments moments(2);
  EXPECT_EQ(moments.Variance(0), 0.0);
  EXPECT_EQ(moments.ScaleOrOne(0), 1.0);  // no values
  const double first[] = {4.0, 1e-100};
  moments.Add(first);
  EXPECT_EQ(moments.ScaleOrOne(0), 1.0);  // one value: no variance yet
  const double second[] = {6.0, -1e-100};
  moments.Add(second);
  EXPECT_EQ(moments.Variance(0), 1.0);
  EXPECT_EQ(moments.ScaleOrOne(0), 1.0);
  // A spread of 1e-100: below 2^-200, too small to divide by.
  EXPECT_GT(moments.Variance(1), 0.0);
  EXPECT_EQ(moments.ScaleOrOne(1), 1.0);
  const double third[] = {11.0, 0.0};
  moments.Add(third);
  EXPECT_NEAR(moments.ScaleOrOne(0), std::sqrt(26.0 / 3.0), 1e-12);
}

TEST(RunningMomentsTest,
     ItsSavedStateGoesOnExactlyAndOtherDimensionsAreRefused) {
  RunningMoments moments(2);
  const double a[] = {1.0, 2.0}, b[] = {3.0, -5.0}, c[] = {0.5, 0.25};
  moments.Add(a);
  moments.Add(b);
  std::string bytes;
  ByteWriter writer(&bytes);
  moments.Save(writer);
  RunningMoments restored(2);
  ByteReader reader(bytes);
  ASSERT_TRUE(restored.Load(reader));
  moments.Add(c);
  restored.Add(c);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(restored.mean()[i], moments.mean()[i]);
    EXPECT_EQ(restored.Variance(i), moments.Variance(i));
  }
  EXPECT_EQ(restored.count(), 3u);
  RunningMoments wider(3);
  ByteReader again(bytes);
  EXPECT_FALSE(wider.Load(again));
}

}  // namespace
}  // namespace streamreg
