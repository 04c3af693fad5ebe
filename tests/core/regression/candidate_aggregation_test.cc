#include "core/regression/candidate_aggregation.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/cut_bytes.h"

namespace streamreg {
namespace {

TEST(CandidateAggregationTest, StartsUniform) {
  const CandidateAggregation aggregation(2, 4);
  for (std::size_t t = 0; t < 2; ++t) {
    for (double weight : aggregation.Weights(t)) EXPECT_EQ(weight, 0.25);
  }
  const std::vector<double> candidates = {1.0, 2.0, 3.0, 6.0};
  EXPECT_DOUBLE_EQ(aggregation.Combine(0, candidates), 3.0);
}

// One step by hand: candidates 0 and 2, truth 0. The combination is 1, the
// gradient 2, the regrets r = 2 (1 - p) = (2, -2); E = 2, V = 4, so
// eta = min(1/4, sqrt(ln 2 / 4)) = 1/4 and R = r - r^2/4 = (1, -3); the
// weights are proportional to exp(R/4): 1 / (1 + e^-1) for the first.
TEST(CandidateAggregationTest, FirstStepByHand) {
  CandidateAggregation aggregation(1, 2);
  const std::vector<double> candidates = {0.0, 2.0};
  aggregation.Add(0, candidates, 0.0);
  EXPECT_EQ(aggregation.added(0), 1u);
  EXPECT_NEAR(aggregation.Weights(0)[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(aggregation.Weights(0)[1], 1.0 / (1.0 + std::exp(1.0)), 1e-15);
  // Each target learns alone.
  aggregation.Add(0, candidates, 0.0);
  EXPECT_EQ(aggregation.added(0), 2u);
}

// Candidates that never differ from the combination teach nothing.
TEST(CandidateAggregationTest, AgreeingCandidatesStayUniform) {
  CandidateAggregation aggregation(1, 3);
  for (int i = 0; i < 10; ++i) {
    const double value = 0.1 * i;
    aggregation.Add(0, std::vector<double>(3, value), value + 1.0);
  }
  for (double weight : aggregation.Weights(0)) EXPECT_NEAR(weight, 1.0 / 3, 0);
}

struct StreamLosses {
  double combined = 0.0;
  std::vector<double> candidates;
  double best_mixture = 0.0;
};

// Runs `samples` samples of y ~ N(0, 1) with candidate c predicting
// y + bias[c] + noise[c] e_c, e_c ~ N(0, 1) independent or (`shared`) one
// draw for all, and sums the squared losses of the combination, of each
// candidate and of the fixed mixture `mixture`.
StreamLosses RunStream(CandidateAggregation& aggregation, int samples,
                       const std::vector<double>& bias,
                       const std::vector<double>& noise,
                       const std::vector<double>& mixture, unsigned seed,
                       bool shared = false) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  const std::size_t n = bias.size();
  StreamLosses losses;
  losses.candidates.assign(n, 0.0);
  std::vector<double> candidates(n);
  for (int i = 0; i < samples; ++i) {
    const double y = normal(random);
    const double common = normal(random);
    double mixed = 0.0;
    for (std::size_t c = 0; c < n; ++c) {
      const double e = shared ? common : normal(random);
      candidates[c] = y + bias[c] + noise[c] * e;
      losses.candidates[c] += std::pow(candidates[c] - y, 2);
      mixed += mixture[c] * candidates[c];
    }
    losses.combined += std::pow(aggregation.Combine(0, candidates) - y, 2);
    losses.best_mixture += std::pow(mixed - y, 2);
    aggregation.Add(0, candidates, y);
  }
  return losses;
}

// Candidates with one noise and growing biases: no mixture beats the first.
TEST(CandidateAggregationTest, FindsTheBestCandidate) {
  CandidateAggregation aggregation(1, 3);
  const StreamLosses losses =
      RunStream(aggregation, 20000, {0.0, 0.5, 1.0}, {0.3, 0.3, 0.3},
                {1.0, 0.0, 0.0}, 1, /*shared=*/true);
  EXPECT_GT(aggregation.Weights(0)[0], 0.95);
  // Its regret against the best grows like sqrt(T), not T: the losses
  // differ by 0.25 T = 5,000 for the second best.
  EXPECT_LT(losses.combined - losses.candidates[0], 200.0);
}

// Two candidates biased in opposite directions: their mean is far better
// than either, and the combination finds it (regret against the best
// convex combination, not just the best candidate).
TEST(CandidateAggregationTest, BeatsEveryCandidateWhereAMixtureDoes) {
  CandidateAggregation aggregation(1, 2);
  const StreamLosses losses =
      RunStream(aggregation, 20000, {1.0, -1.0}, {0.2, 0.2}, {0.5, 0.5}, 2);
  EXPECT_NEAR(aggregation.Weights(0)[0], 0.5, 0.05);
  EXPECT_LT(losses.combined, 0.1 * losses.candidates[0]);
  EXPECT_LT(losses.combined, 0.1 * losses.candidates[1]);
  EXPECT_LT(losses.combined - losses.best_mixture, 0.05 * losses.best_mixture);
}

// When the best candidate changes, the regrets against the combination are
// large at once: the weights move to the new best within a few thousand
// samples of a stream that favoured the other for 20,000.
TEST(CandidateAggregationTest, FollowsAChange) {
  CandidateAggregation aggregation(1, 2);
  RunStream(aggregation, 20000, {0.0, 0.3}, {0.3, 0.3}, {1.0, 0.0}, 3,
            /*shared=*/true);
  EXPECT_GT(aggregation.Weights(0)[0], 0.9);
  RunStream(aggregation, 3000, {0.3, 0.0}, {0.3, 0.3}, {0.0, 1.0}, 4,
            /*shared=*/true);
  EXPECT_GT(aggregation.Weights(0)[1], 0.9);
}

TEST(CandidateAggregationTest, ScaleFree) {
  CandidateAggregation unit(1, 3);
  CandidateAggregation scaled(1, 3);
  std::mt19937_64 random(5);
  std::normal_distribution<double> normal;
  for (int i = 0; i < 500; ++i) {
    const double y = normal(random);
    std::vector<double> candidates = {y + 0.3 * normal(random),
                                      y + 0.5 + 0.1 * normal(random), 0.0};
    unit.Add(0, candidates, y);
    for (double& candidate : candidates) candidate *= 1000.0;
    scaled.Add(0, candidates, 1000.0 * y);
  }
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(unit.Weights(0)[c], scaled.Weights(0)[c], 1e-9);
  }
}

TEST(CandidateAggregationTest, IgnoresANonFiniteTruth) {
  CandidateAggregation aggregation(1, 2);
  aggregation.Add(0, std::vector<double>{0.0, 1.0}, std::nan(""));
  EXPECT_EQ(aggregation.added(0), 0u);
  EXPECT_EQ(aggregation.Weights(0)[0], 0.5);
}

// The rule with recency p against its definition: BOA (the sums of the
// class comment without the fades) on the regrets weighted by s^p, the
// weights the same to rounding.
TEST(CandidateAggregationTest, RecencyIsBoaOnTheWeightedRegrets) {
  constexpr std::size_t kCandidates = 3;
  for (std::size_t p : {1u, 2u, 4u}) {
    CandidateAggregation aggregation(1, kCandidates, p);
    std::vector<double> range(kCandidates, 0.0), variance(kCandidates, 0.0),
        regret(kCandidates, 0.0), weights(kCandidates, 1.0 / kCandidates);
    std::mt19937_64 random(8 + p);
    std::normal_distribution<double> normal;
    for (int s = 1; s <= 300; ++s) {
      const double y = normal(random);
      // Candidate 0 improves along the stream, 1 stays, 2 is biased.
      const std::vector<double> candidates = {
          y + (2.0 - s / 160.0) * normal(random), y + 0.6 * normal(random),
          y + 0.4 + 0.2 * normal(random)};
      double combined = 0.0;
      for (std::size_t c = 0; c < kCandidates; ++c) {
        combined += weights[c] * candidates[c];
      }
      const double weight = std::pow(static_cast<double>(s), p);
      std::vector<double> log_weights(kCandidates);
      for (std::size_t c = 0; c < kCandidates; ++c) {
        const double r =
            weight * 2.0 * (combined - y) * (combined - candidates[c]);
        range[c] = std::max(range[c], std::abs(r));
        variance[c] += r * r;
        const double rate = std::min(1.0 / (2.0 * range[c]),
                                     std::sqrt(std::log(3.0) / variance[c]));
        regret[c] += r - rate * r * r;
        log_weights[c] = std::log(rate) + rate * regret[c];
      }
      const double largest =
          *std::max_element(log_weights.begin(), log_weights.end());
      double sum = 0.0;
      for (std::size_t c = 0; c < kCandidates; ++c) {
        weights[c] = std::exp(log_weights[c] - largest);
        sum += weights[c];
      }
      for (double& w : weights) w /= sum;
      aggregation.Add(0, candidates, y);
      for (std::size_t c = 0; c < kCandidates; ++c) {
        ASSERT_NEAR(aggregation.Weights(0)[c], weights[c], 1e-9)
            << "p " << p << " sample " << s << " candidate " << c;
      }
    }
  }
}

// A candidate that starts worst and ends best (as a local fit does while
// its neighbourhoods fill): weighing recent samples more, the weights
// follow it by the end of the stream; weighing every sample the same, the
// early losses still hold it back.
TEST(CandidateAggregationTest, RecencyFollowsACandidateThatImproves) {
  CandidateAggregation even(1, 2, 0);
  CandidateAggregation recent(1, 2, 2);
  std::mt19937_64 random(9);
  std::normal_distribution<double> normal;
  constexpr int kSamples = 400;
  for (int s = 1; s <= kSamples; ++s) {
    const double y = normal(random);
    const double shared = normal(random);
    const double improving = 1.5 * (1.0 - static_cast<double>(s) / kSamples);
    const std::vector<double> candidates = {y + (0.1 + improving) * shared,
                                            y + 0.5 * normal(random)};
    even.Add(0, candidates, y);
    recent.Add(0, candidates, y);
  }
  EXPECT_GT(recent.Weights(0)[0], 0.8);
  EXPECT_GT(recent.Weights(0)[0], even.Weights(0)[0] + 0.2);
}

TEST(CandidateAggregationTest, SavesExactly) {
  CandidateAggregation aggregation(2, 3, 2);
  RunStream(aggregation, 300, {0.0, 0.2, -0.4}, {0.3, 0.1, 0.2},
            {1.0, 0.0, 0.0}, 6);
  std::string bytes;
  ByteWriter out(&bytes);
  aggregation.Save(out);
  ByteReader in(bytes);
  std::optional<CandidateAggregation> loaded =
      CandidateAggregation::Load(in, 2, 3, 2);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->recency(), 2u);
  EXPECT_TRUE(in.done());
  for (std::size_t t = 0; t < 2; ++t) {
    for (std::size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(loaded->Weights(t)[c], aggregation.Weights(t)[c]);
    }
    EXPECT_EQ(loaded->added(t), aggregation.added(t));
  }
  // And it goes on the same way.
  const StreamLosses a = RunStream(aggregation, 100, {0.0, 0.2, -0.4},
                                   {0.3, 0.1, 0.2}, {1.0, 0.0, 0.0}, 7);
  const StreamLosses b = RunStream(*loaded, 100, {0.0, 0.2, -0.4},
                                   {0.3, 0.1, 0.2}, {1.0, 0.0, 0.0}, 7);
  EXPECT_EQ(a.combined, b.combined);

  ByteReader other_shape(bytes);
  EXPECT_FALSE(CandidateAggregation::Load(other_shape, 2, 4, 2));
  ExpectEveryCutLoadsAsNothing(bytes, [](ByteReader& reader) {
    return CandidateAggregation::Load(reader, 2, 3, 2);
  });
}

}  // namespace
}  // namespace streamreg
