// Prequential selection and scoring against sums worked out by hand.
#include "core/regression/prequential_selector.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(PrequentialSelectorTest, ForgettingNeverKeepsMoreThanTheRecentHalf) {
  EXPECT_EQ(EffectiveForgetting(0.999, 1), 0.0);
  EXPECT_EQ(EffectiveForgetting(0.999, 2), 0.0);
  EXPECT_DOUBLE_EQ(EffectiveForgetting(0.999, 4), 0.5);
  EXPECT_DOUBLE_EQ(EffectiveForgetting(0.999, 1000), 0.998);
  EXPECT_DOUBLE_EQ(EffectiveForgetting(0.999, 100000), 0.999);
  EXPECT_DOUBLE_EQ(EffectiveForgetting(1.0, 100000), 1.0 - 2e-5);
}

TEST(PrequentialSelectorTest, KeepsForgottenMeansPerValueAndTarget) {
  PrequentialSelector selector(3, 2, 0.5);
  // Three exact predictions first: the sums stay 0 while the weights grow
  // by the effective factors 0, 0, 1/3: 1, 1, 4/3.
  for (int i = 0; i < 3; ++i) {
    selector.Add(std::vector<double>{7, 7, 7, 7, 7, 7},
                 std::vector<double>{7, 7}, 3);
  }
  // Sample 4 (factor 0.5): truth (0, 10); grid predictions (1, 10),
  // (0, 12), (3, 9). Weights 5/3.
  selector.Add(std::vector<double>{1, 10, 0, 12, 3, 9},
               std::vector<double>{0, 10}, 3);
  // Sample 5 (factor 0.5): truth (1, 0); only values 0 and 1 predict it.
  // Their weights 11/6.
  selector.Add(std::vector<double>{1, 1, 3, 0, 0, 0}, std::vector<double>{1, 0},
               2);
  // Value 0: target 0: 0.5 * 1 + 0, target 1: 0.5 * 0 + 1.
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 0), 0.5 / (11.0 / 6));
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 1), 1.0 / (11.0 / 6));
  // Value 1: target 0: 0.5 * 0 + 4, target 1: 0.5 * 4 + 0.
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(1, 0), 4.0 / (11.0 / 6));
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(1, 1), 2.0 / (11.0 / 6));
  // Value 2 predicted sample 4 only: 9 and 1 over weight 5/3.
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(2, 0), 9.0 / (5.0 / 3));
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(2, 1), 1.0 / (5.0 / 3));
  EXPECT_EQ(selector.Best(0), 0u);
  EXPECT_EQ(selector.Best(1), 0u);
  // Means, target 0: 0.27, 2.18, 5.4; target 1: 0.55, 1.09, 0.6. Target 1
  // counted 100x less: target 0 decides; target 0 counted 100x less: value
  // 0 still leads on target 1.
  EXPECT_EQ(selector.BestOverall(std::vector<double>{1.0, 10.0}), 0u);
  EXPECT_EQ(selector.BestOverall(std::vector<double>{10.0, 1.0}), 0u);
}

TEST(PrequentialSelectorTest,
     UnevaluatedValuesAreNeverBestAndTiesPickTheFirst) {
  PrequentialSelector selector(3, 1, 1.0);
  EXPECT_EQ(selector.Best(0), 0u);
  // Only values 0 and 1 predict: errors 16 and 0.
  selector.Add(std::vector<double>{5, 1, 0}, std::vector<double>{1}, 2);
  EXPECT_EQ(selector.Best(0), 1u);
  EXPECT_TRUE(std::isnan(selector.MeanSquaredError(2, 0)));
  // All predict exactly (factor 0 at the second sample): values 1 and 2
  // both have mean error 0 — a tie, the smaller index wins.
  selector.Add(std::vector<double>{1, 1, 1}, std::vector<double>{1}, 3);
  EXPECT_EQ(selector.Best(0), 0u);  // value 0 forgot its 16, too
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(2, 0), 0.0);
  // A miss by value 0 (factor 1/3): it falls behind the others' zeros.
  selector.Add(std::vector<double>{4, 1, 1}, std::vector<double>{1}, 3);
  EXPECT_EQ(selector.Best(0), 1u);
  EXPECT_DOUBLE_EQ(selector.MeanSquaredError(0, 0), 9.0 / (4.0 / 3));
}

TEST(PrequentialScoreTest, NmseIsErrorOverTheForgottenVariance) {
  PrequentialScore score(1, 0.99);
  EXPECT_TRUE(std::isnan(score.Nmse(0)));
  // y alternates 0, 2 (variance 1); every prediction is off by 1.
  for (int i = 0; i < 2000; ++i) {
    const double y = i % 2 == 0 ? 0.0 : 2.0;
    score.Add(std::vector<double>{y + 1}, std::vector<double>{y});
  }
  EXPECT_DOUBLE_EQ(score.MeanSquaredError(0), 1.0);
  EXPECT_NEAR(score.Nmse(0), 1.0, 0.02);
  // Off by 0.5 from now on: after many half-lives the nMSE is 0.25.
  for (int i = 0; i < 2000; ++i) {
    const double y = i % 2 == 0 ? 0.0 : 2.0;
    score.Add(std::vector<double>{y + 0.5}, std::vector<double>{y});
  }
  EXPECT_NEAR(score.Nmse(0), 0.25, 0.01);
}

}  // namespace
}  // namespace streamreg
