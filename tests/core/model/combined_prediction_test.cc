// A model that combines its candidates (ModelConfig::combine): each
// prediction is the weighted sum of what the models of its candidates
// predict, the weights follow the candidates' errors, and a local linear
// candidate fits over the metric's leading coordinates unless the fit over
// all is clearly better.
#include "core/model/combined_prediction.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/model/model.h"
#include "core/regression/online_ridge.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using Rows = SampleRows<kDim, kTargets>;

// Target 0 is linear with a little noise (the base alone is best), target
// 1 a step with plateaus (the base alone is poor).
Rows LinearAndStep(std::size_t n) {
  Rows stream;
  std::mt19937_64 random(41);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double a = uniform(random), b = uniform(random), c = uniform(random);
    stream.x.insert(stream.x.end(), {a, b, c});
    stream.y.push_back(4 * a + 3 * b - 2 * c + 0.3 * uniform(random));
    stream.y.push_back(std::tanh(20 * a) + 0.05 * uniform(random));
  }
  return stream;
}

// Euclidean, every grid value scored on every sample: a model of one
// candidate sees the same neighbours, grid scores and choices as that
// candidate of the combining model, so predicts the same numbers.
ModelConfig CombinedConfig() {
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEuclidean;
  config.regressor = RegressorKind::kAuto;
  config.k_grid = {1, 2, 4, 8, 16, 32};
  config.full_grid_below = 1 << 20;
  config.per_target_base = true;
  config.combine = true;
  return config;
}

// The models of a combining model's candidates, having learned the same
// samples: k-NN and local linear with the base, the same without it, and
// the base alone (the same online ridge, fed alike).
struct CandidateModels {
  CandidateModels(const ModelConfig& config, const Rows& stream,
                  std::size_t learned)
      : ridge(kDim, kTargets, config.base_ridge, config.base_forgetting,
              config.base_relative_ridge) {
    for (const bool base : {true, false}) {
      for (const RegressorKind regressor :
           {RegressorKind::kNearest, RegressorKind::kLocalLinear}) {
        ModelConfig single = config;
        single.combine = false;
        single.per_target_base = false;
        single.regressor = regressor;
        single.linear_base = base;
        regressors.push_back(LearnedModel(single, stream, learned));
      }
    }
    for (std::size_t s = 0; s < learned; ++s) {
      ridge.Add(stream.input(s), stream.sample(s).y);
    }
  }
  // Candidate c's prediction of target t at x.
  double Predict(std::size_t c, std::span<const double> x,
                 std::size_t t) const {
    if (c < regressors.size()) return regressors[c]->Predict(x)->value[t];
    std::vector<double> base(kTargets);
    ridge.Predict(x, base);
    return base[t];
  }
  std::vector<std::unique_ptr<Model>> regressors;
  OnlineRidge ridge;
};

// A combining model and its candidates' models, having learned the first
// `learned` samples of LinearAndStep(total).
struct CombinedAndCandidates {
  CombinedAndCandidates(std::size_t learned, std::size_t total)
      : stream(LinearAndStep(total)),
        combined(LearnedModel(CombinedConfig(), stream, learned)),
        candidates(CombinedConfig(), stream, learned) {}
  const Rows stream;
  const std::unique_ptr<Model> combined;
  const CandidateModels candidates;
};

TEST(CombinedPredictionTest, IsTheWeightedSumOfItsCandidatesModels) {
  constexpr std::size_t kLearned = 1200;
  const CombinedAndCandidates models(kLearned, 1500);
  const Rows& stream = models.stream;
  const CandidateModels& candidates = models.candidates;
  const ModelStats stats = models.combined->stats();
  EXPECT_THAT(stats.candidates,
              ::testing::ElementsAre("knn+base", "local_linear+base", "knn",
                                     "local_linear", "base"));
  ASSERT_EQ(stats.candidate_weights.size(), kTargets);
  ASSERT_EQ(stats.answer_candidate_weights.size(), kTargets);
  for (std::size_t q = kLearned; q < stream.size(); ++q) {
    const Prediction got = *models.combined->Predict(stream.input(q));
    for (std::size_t t = 0; t < kTargets; ++t) {
      const std::vector<double>& weights = stats.candidate_weights[t];
      ASSERT_EQ(weights.size(), 5u);
      double expected = 0.0;
      std::uint32_t neighbors = 0;
      for (std::size_t c = 0; c < 5; ++c) {
        expected += weights[c] * candidates.Predict(c, stream.input(q), t);
      }
      for (const auto& regressor : candidates.regressors) {
        neighbors = std::max(neighbors,
                             regressor->Predict(stream.input(q))->neighbors[t]);
      }
      EXPECT_NEAR(got.value[t], expected, 1e-9)
          << "query " << q << ", target " << t;
      EXPECT_EQ(got.neighbors[t], neighbors);
    }
    // The next sample's prediction (a Learn answer) weighs the same
    // candidates with the weights learned from their prequential errors.
    const Prediction answer = *models.combined->Predict(
        stream.input(q), PredictOptions::ForNextSample());
    for (std::size_t t = 0; t < kTargets; ++t) {
      double expected = 0.0;
      for (std::size_t c = 0; c < 5; ++c) {
        expected += stats.answer_candidate_weights[t][c] *
                    candidates.Predict(c, stream.input(q), t);
      }
      EXPECT_NEAR(answer.value[t], expected, 1e-9)
          << "query " << q << ", target " << t;
    }
  }
  // Learned from other errors, the two sets of weights differ.
  EXPECT_NE(stats.answer_candidate_weights, stats.candidate_weights);
}

// On data it has not seen, the combination is about as good as the best
// of its candidates on each target, and better than most: its weights
// follow their errors (the plane alone weighs nothing on the step).
TEST(CombinedPredictionTest, PredictsAboutAsWellAsTheBestCandidate) {
  constexpr std::size_t kLearned = 3000;
  const CombinedAndCandidates models(kLearned, 4000);
  const Rows& stream = models.stream;
  std::vector<double> combined_error(kTargets, 0.0);
  std::vector<std::vector<double>> candidate_error(
      5, std::vector<double>(kTargets, 0.0));
  for (std::size_t q = kLearned; q < stream.size(); ++q) {
    const Prediction got = *models.combined->Predict(stream.input(q));
    for (std::size_t t = 0; t < kTargets; ++t) {
      const double y = stream.sample(q).y[t];
      combined_error[t] += std::pow(got.value[t] - y, 2);
      for (std::size_t c = 0; c < 5; ++c) {
        candidate_error[c][t] +=
            std::pow(models.candidates.Predict(c, stream.input(q), t) - y, 2);
      }
    }
  }
  for (std::size_t t = 0; t < kTargets; ++t) {
    double best = candidate_error[0][t];
    std::size_t worse = 0;
    for (std::size_t c = 0; c < 5; ++c) {
      best = std::min(best, candidate_error[c][t]);
      if (candidate_error[c][t] > combined_error[t]) ++worse;
    }
    EXPECT_LT(combined_error[t], 1.1 * best) << "target " << t;
    EXPECT_GE(worse, 3u) << "target " << t;
  }
  const ModelStats stats = models.combined->stats();
  ASSERT_EQ(stats.candidate_weights.size(), kTargets);
  double sum = 0.0;
  for (double weight : stats.candidate_weights[1]) sum += weight;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_LT(stats.candidate_weights[1][4], 0.01);
}

// Under GLML each target searches alone, under its own metric at the
// query, and combines what it found.
TEST(CombinedPredictionTest, CombinesUnderGlmlToo) {
  constexpr std::size_t kLearned = 800;
  const Rows stream = LinearAndStep(900);
  ModelConfig config = CombinedConfig();
  config.metric = MetricKind::kGlml;
  config.linear_base = false;
  config.per_target_base = false;
  const auto combined = LearnedModel(config, stream, kLearned);
  std::vector<std::unique_ptr<Model>> candidates;
  for (const RegressorKind regressor :
       {RegressorKind::kNearest, RegressorKind::kLocalLinear}) {
    ModelConfig single = config;
    single.combine = false;
    single.regressor = regressor;
    candidates.push_back(LearnedModel(single, stream, kLearned));
  }
  const ModelStats stats = combined->stats();
  EXPECT_THAT(stats.candidates, ::testing::ElementsAre("knn", "local_linear"));
  for (std::size_t q = kLearned; q < stream.size(); ++q) {
    const Prediction got = *combined->Predict(stream.input(q));
    const Prediction knn = *candidates[0]->Predict(stream.input(q));
    const Prediction local = *candidates[1]->Predict(stream.input(q));
    for (std::size_t t = 0; t < kTargets; ++t) {
      const std::vector<double>& weights = stats.candidate_weights[t];
      EXPECT_NEAR(got.value[t],
                  weights[0] * knn.value[t] + weights[1] * local.value[t], 1e-9)
          << "query " << q << ", target " << t;
    }
  }
}

// A local linear candidate's grid value: the fit over all coordinates only
// where its honest error is more than kFullFitMargin below that of the fit
// over the leading ones at the same k.
TEST(CombinedPredictionTest,
     ALocalLinearCandidateTakesTheLeadingFitWithinTheMargin) {
  // Grid values: 16 over 8, 16 over all, 32 over 8, 32 over all.
  const ModelConfig config = LeadingCoordinatesConfig({16, 32});
  ASSERT_EQ(config.GridSize(), 4u);
  // A selector that has scored one sample (truth 0) with these errors.
  const auto scored = [&](std::vector<double> errors) {
    PrequentialSelector selector(config.GridSize(), 1, 1.0);
    selector.Add(errors, std::vector<double>{0.0}, errors.size());
    return selector;
  };
  const double margin = 1.0 + kFullFitMargin;
  // The full fit at k = 32 is best; the leading one there within the margin.
  const PrequentialSelector close =
      scored({1.0, 0.9, 0.5 * std::sqrt(0.99 * margin), 0.5});
  ASSERT_EQ(close.Best(0), 3u);
  EXPECT_EQ(CandidateGridValue(config, close, 0, 0), 2u);
  // Outside the margin: the full fit.
  const PrequentialSelector clear =
      scored({1.0, 0.9, 0.5 * std::sqrt(1.01 * margin), 0.5});
  EXPECT_EQ(CandidateGridValue(config, clear, 0, 0), 3u);
  // A best fit over the leading coordinates stays.
  const PrequentialSelector leading = scored({1.0, 0.9, 0.4, 0.5});
  EXPECT_EQ(CandidateGridValue(config, leading, 0, 0), 2u);
  // Without a choice of coordinates (another metric, or k-NN), the best.
  ModelConfig euclidean = config;
  euclidean.metric = MetricKind::kEuclidean;
  const PrequentialSelector two = [&] {
    PrequentialSelector selector(euclidean.GridSize(), 1, 1.0);
    selector.Add(std::vector<double>{0.6, 0.5}, std::vector<double>{0.0}, 2);
    return selector;
  }();
  EXPECT_EQ(CandidateGridValue(euclidean, two, 0, 0), 1u);
  ModelConfig nearest = config;
  nearest.regressor = RegressorKind::kAuto;  // variant 0 is k-NN
  const PrequentialSelector both = [&] {
    PrequentialSelector selector(nearest.GridSize(), 2, 1.0);
    // Per grid value, k-NN's error then local linear's.
    selector.Add(std::vector<double>{1.0, 1.0, 0.9, 0.9, 0.52, 0.52, 0.5, 0.5},
                 std::vector<double>{0.0, 0.0}, 4);
    return selector;
  }();
  EXPECT_EQ(CandidateGridValue(nearest, both, 0, 0), both.Best(0));
  EXPECT_EQ(CandidateGridValue(nearest, both, 1, 0), 2u);
}

// With the metric chosen per target (METRIC_AUTO), each index combines its
// own candidates, and every index learns its weights for every target on
// every scored sample, chosen or not: a target predicts what a model of
// the metric it chose would, its weights included.
TEST(CombinedPredictionTest, CombinesWithinTheMetricEachTargetChooses) {
  constexpr std::size_t kLearned = 1500;
  const Rows stream = LinearAndStep(1600);
  ModelConfig config = CombinedConfig();
  config.metric = MetricKind::kAuto;
  const auto automatic = LearnedModel(config, stream, kLearned);
  const ModelStats stats = automatic->stats();
  ASSERT_EQ(stats.candidate_weights.size(), kTargets);
  for (std::size_t t = 0; t < kTargets; ++t) {
    SCOPED_TRACE(::testing::Message() << "target " << t << " chose "
                                      << MetricKindName(stats.metric[t]));
    ASSERT_NE(stats.metric[t], MetricKind::kAuto);
    ModelConfig fixed_config = config;
    fixed_config.metric = stats.metric[t];
    const auto fixed = LearnedModel(fixed_config, stream, kLearned);
    const ModelStats fixed_stats = fixed->stats();
    EXPECT_EQ(stats.candidate_weights[t], fixed_stats.candidate_weights[t]);
    EXPECT_EQ(stats.answer_candidate_weights[t],
              fixed_stats.answer_candidate_weights[t]);
    for (std::size_t q = kLearned; q < stream.size(); ++q) {
      EXPECT_NEAR(automatic->Predict(stream.input(q))->value[t],
                  fixed->Predict(stream.input(q))->value[t], 1e-9)
          << "query " << q;
    }
  }
  // The step's target is better served by a learned metric than by the
  // standardized inputs (its weight is on the first input alone).
  EXPECT_NE(stats.metric[1], MetricKind::kEuclidean);
}

TEST(CombinedPredictionTest, NeedsTwoCandidates) {
  ModelConfig config = CombinedConfig();
  config.linear_base = false;
  config.per_target_base = false;
  config.regressor = RegressorKind::kNearest;
  EXPECT_EQ(Model::Create(config).status().message(),
            "combine: needs two candidates or more: a linear base, or the "
            "regressor auto");
}

}  // namespace
}  // namespace streamreg
