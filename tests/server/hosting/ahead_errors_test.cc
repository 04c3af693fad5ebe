// Predictions sent ahead of their ticks (server/hosting/ahead_errors.h):
// each scored once, when the sample it names comes, against the interval it
// was sent with; calibrated on their own errors once enough are scored;
// only the latest kWaiting wait for their samples.
#include "server/hosting/ahead_errors.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/answer_test_support.h"

namespace streamreg {
namespace {

// A prediction sent ahead is scored once, when the sample it names comes,
// against the interval it was sent with.
TEST(AheadErrorsTest, APredictionAheadIsScoredWhenItsSampleComes) {
  AheadErrors ahead(1, AnswerOptions());
  Prediction sent = AnswerOf({1.0});  // [0, 2]: too few scored to change it
  ahead.Sent(7, &sent);
  EXPECT_EQ(sent.lower[0], 0.0);
  EXPECT_EQ(sent.upper[0], 2.0);
  Prediction other = AnswerOf({5.0});
  ahead.Sent(8, &other);
  const std::vector<double> inside = {1.5};
  const std::vector<double> outside = {8.0};
  ahead.Arrived({inside, inside, 0});  // no id: nothing to score
  ahead.Arrived({inside, inside, 9});  // no prediction sent for it
  EXPECT_EQ(ahead.figures().answers, 0u);
  ahead.Arrived({inside, inside, 7});
  ahead.Arrived({inside, inside, 7});  // scored once
  ahead.Arrived({outside, outside, 8});
  const AnswerErrors::Figures figures = ahead.figures();
  EXPECT_EQ(figures.answers, 2u);
  EXPECT_DOUBLE_EQ(figures.interval_coverage[0], 0.5);
  // (0.5^2 + 3^2) / 2 over the variance of {1.5, 8}.
  EXPECT_DOUBLE_EQ(figures.mse[0], (0.25 + 9.0) / 2);
  EXPECT_DOUBLE_EQ(figures.nmse[0], ((0.25 + 9.0) / 2) / (3.25 * 3.25));
}

// Once enough are scored, a prediction sent ahead gets the interval its
// own errors give, as an answer scored with the same errors would.
TEST(AheadErrorsTest, PredictionsAheadAreCalibratedOnTheirOwnErrors) {
  AheadErrors ahead(1, AnswerOptions());
  AnswerErrors same(1, AnswerOptions());
  std::mt19937_64 random(3);
  std::normal_distribution<double> normal;
  for (std::uint64_t id = 1; id <= 300; ++id) {
    Prediction sent = AnswerOf({0.0});
    Prediction twin = sent;
    ahead.Sent(id, &sent);
    same.Calibrate(&twin);
    EXPECT_EQ(sent.lower[0], twin.lower[0]) << id;
    EXPECT_EQ(sent.upper[0], twin.upper[0]) << id;
    const std::vector<double> y = {3.0 * normal(random)};
    ahead.Arrived({y, y, id});
    same.Score(twin, y);
  }
  Prediction next = AnswerOf({0.0});
  ahead.Sent(301, &next);
  // About the 90% quantile of |3 N(0, 1)| (4.93), not the +-1 it was sent
  // with.
  EXPECT_GT(next.upper[0], 3.5);
  EXPECT_LT(next.upper[0], 6.5);
  EXPECT_EQ(next.lower[0], -next.upper[0]);
}

// At most kWaiting predictions wait for their sample: the oldest are
// dropped, never scored.
TEST(AheadErrorsTest, OnlyTheLatestPredictionsWaitForTheirSamples) {
  AheadErrors ahead(1, AnswerOptions());
  for (std::uint64_t id = 1; id <= AheadErrors::kWaiting + 1; ++id) {
    Prediction sent = AnswerOf({0.0});
    ahead.Sent(id, &sent);
  }
  const std::vector<double> y = {0.5};
  ahead.Arrived({y, y, 1});  // dropped
  EXPECT_EQ(ahead.figures().answers, 0u);
  ahead.Arrived({y, y, 2});
  ahead.Arrived({y, y, AheadErrors::kWaiting + 1});
  EXPECT_EQ(ahead.figures().answers, 2u);
}

}  // namespace
}  // namespace streamreg
