// Prequential selection and scoring against sums worked out by hand.
#include "core/prequential_selector.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(PrequentialSelectorTest, KeepsForgottenMeansPerValueAndTarget) {
  PrequentialSelector selector(3, 2, 0.5);
  // Sample 1: truth (0, 10); grid predictions (1, 10), (0, 12), (3, 9).
  selector.Add(std::vector<double>{1, 10, 0, 12, 3, 9},
               std::vector<double>{0, 10}, 3);
  // Sample 2: truth (1, 0); only the first two values predict it.
  selector.Add(std::vector<double>{1, 1, 3, 0, 0, 0}, std::vector<double>{1, 0},
               2);
  // Value 0: weight 0.5 + 1; errors target 0: 0.5 * 1 + 0 = 0.5,
  // target 1: 0.5 * 0 + 1 = 1.
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 0), 0.5 / 1.5);
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 1), 1.0 / 1.5);
  // Value 1: target 0: 0.5 * 0 + 4, target 1: 0.5 * 4 + 0.
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(1, 0), 4.0 / 1.5);
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(1, 1), 2.0 / 1.5);
  // Value 2 predicted once: 9 and 1 over weight 1.
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(2, 0), 9.0);
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(2, 1), 1.0);
  EXPECT_EQ(selector.Best(0), 0u);
  EXPECT_EQ(selector.Best(1), 0u);
  // Target 1 counted 100x less: target 0 decides.
  EXPECT_EQ(selector.BestOverall(std::vector<double>{1.0, 10.0}), 0u);
  // Target 0 counted 100x less: means 0.67, 1.33, 1.0 for target 1.
  EXPECT_EQ(selector.BestOverall(std::vector<double>{10.0, 1.0}), 0u);
}

TEST(PrequentialSelectorTest,
     UnevaluatedValuesAreNeverBestAndTiesPickTheFirst) {
  PrequentialSelector selector(3, 1, 1.0);
  EXPECT_EQ(selector.Best(0), 0u);
  selector.Add(std::vector<double>{5, 1, 0}, std::vector<double>{1}, 2);
  EXPECT_EQ(selector.Best(0), 1u);
  EXPECT_TRUE(std::isnan(selector.MeanSquaredError(2, 0)));
  selector.Add(std::vector<double>{1, 1, 1}, std::vector<double>{1}, 3);
  // Values 1 and 2 both have mean error 0 (over 2 and 1 samples): a tie,
  // the smaller index wins.
  EXPECT_EQ(selector.Best(0), 1u);
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 0), 8.0);
}

TEST(PrequentialScoreTest, NmseIsErrorOverTheForgottenVariance) {
  PrequentialScore score(1, 1.0);
  EXPECT_TRUE(std::isnan(score.Nmse(0)));
  const double truth[] = {1, 2, 3, 4};
  const double predicted[] = {0, 2, 3, 5};
  for (int i = 0; i < 4; ++i) {
    score.Add(std::vector<double>{predicted[i]}, std::vector<double>{truth[i]});
  }
  // MSE = 2 / 4; variance of 1..4 = 1.25.
  EXPECT_DOUBLE_EQ(score.MeanSquaredError(0), 0.5);
  EXPECT_NEAR(score.Nmse(0), 0.5 / 1.25, 1e-12);
}

}  // namespace
}  // namespace streamreg
