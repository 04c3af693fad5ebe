// ModelConfig (core/model/model_config.h): every field's error names it,
// enum names parse and list the choices, the MLKR budget and the scoring
// stride follow their definitions, and every older encoding loads with
// the values its models had.
#include "core/model/model_config.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/model_settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST(ModelConfigTest, ErrorsNameTheField) {
  ModelConfig config = BaseConfig();
  config.input_dim = 0;
  EXPECT_THAT(Model::Create(config).status().message(), HasSubstr("input_dim"));
  config = BaseConfig();
  config.target_names = {"a", "a"};
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("target_names[1]"));
  config = BaseConfig();
  config.bandwidth_grid = {0.5, 0.2};
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("bandwidth_grid[1]"));
  config = BaseConfig();
  config.capacity = {CapacityPolicy::kWindow, 0};
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("capacity.limit"));
  config = BaseConfig();
  config.selection_forgetting = 1.5;
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("selection_forgetting"));
  config = BaseConfig();
  config.metric = MetricKind::kAuto;
  config.per_target_metric = true;
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("per_target_metric"));
  config = BaseConfig();
  config.metric_refresh_samples = 63;
  EXPECT_EQ(Model::Create(config).status().message(),
            "metric_refresh_samples: 0 (every stored sample) or at least 64, "
            "got 63");
  config.metric_refresh_samples = 0;
  EXPECT_TRUE(Model::Create(config).ok());
  config = BaseConfig();
  config.random_feature_base = true;
  config.linear_base = false;
  EXPECT_EQ(Model::Create(config).status().message(),
            "random_feature_base: needs the base on (linear_base)");
  config.linear_base = true;
  config.random_feature_frequencies = 1300;
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("random_feature_base.frequencies: at least 1, and 1 + "
                        "input_dim + 2 x it at most 2560"));
  config.random_feature_frequencies = 64;
  config.random_feature_ridges = {0.1, -1.0};
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("random_feature_base.ridges[1]"));
  config.random_feature_ridges = {};
  EXPECT_THAT(
      Model::Create(config).status().message(),
      HasSubstr("random_feature_base.ridges: 1 to 64 candidates, got 0"));
  config.random_feature_ridges = {0.1};
  EXPECT_TRUE(Model::Create(config).ok());
  config = BaseConfig();
  for (const double level : {0.0, 1.0, -0.5, std::nan("")}) {
    config.interval_level = level;
    EXPECT_THAT(Model::Create(config).status().message(),
                HasSubstr("interval_level: must be in (0, 1)"));
  }
  config.interval_level = 0.95;
  config.interval_window = 0;
  EXPECT_EQ(Model::Create(config).status().message(),
            "interval_window: 1 to 100000, got 0");
  config.interval_window = 100;
  config.interval_step = 1.0;
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("interval_step: must be in [0, 1)"));
  config.interval_step = 0.0;
  EXPECT_TRUE(Model::Create(config).ok());
}
TEST(ModelConfigTest, ChoicesParseByNameAndErrorsListTheNames) {
  for (RegressorKind kind :
       {RegressorKind::kNearest, RegressorKind::kKernel,
        RegressorKind::kLocalLinear, RegressorKind::kAuto}) {
    EXPECT_EQ(*ParseRegressorKind(RegressorKindName(kind)), kind);
  }
  for (MetricKind kind :
       {MetricKind::kEuclidean, MetricKind::kGradientWeights, MetricKind::kEgop,
        MetricKind::kAuto, MetricKind::kMlkr, MetricKind::kGlml}) {
    EXPECT_EQ(*ParseMetricKind(MetricKindName(kind)), kind);
  }
  for (CapacityPolicy policy :
       {CapacityPolicy::kUnbounded, CapacityPolicy::kWindow,
        CapacityPolicy::kReservoir}) {
    EXPECT_EQ(*ParseCapacityPolicy(CapacityPolicyName(policy)), policy);
  }
  EXPECT_EQ(ParseMetricKind("manhattan").status().message(),
            "metric: unknown value 'manhattan' (expected one of euclidean, "
            "gw, egop, auto, mlkr, glml)");
  EXPECT_THAT(ParseKernel("cosine").status().message(),
              HasSubstr("box, triangular, epanechnikov, gaussian"));
}

TEST(ModelConfigTest, AnMlkrFitDoesEveryEvaluationWithinItsBudget) {
  ModelConfig config;
  config.mlkr_fit_steps = 60;
  config.mlkr_fit_budget = 60 * 2048;
  // Within the budget: every evaluation.
  EXPECT_EQ(config.MlkrFitSteps(100), 60u);
  EXPECT_EQ(config.MlkrFitSteps(2048), 60u);
  // Beyond it: budget / samples read, rounded down.
  EXPECT_EQ(config.MlkrFitSteps(2049), 59u);
  EXPECT_EQ(config.MlkrFitSteps(4096), 30u);
  EXPECT_EQ(config.MlkrFitSteps(5000), 24u);
  // Never fewer than kMinBudgetedMlkrSteps.
  EXPECT_EQ(config.MlkrFitSteps(20000), kMinBudgetedMlkrSteps);
  // Nor more than mlkr_fit_steps, when that is below the floor.
  config.mlkr_fit_steps = 8;
  EXPECT_EQ(config.MlkrFitSteps(20000), 8u);
  // No budget: every evaluation at any size.
  config.mlkr_fit_steps = 60;
  config.mlkr_fit_budget = 0;
  EXPECT_EQ(config.MlkrFitSteps(1000000), 60u);
}

TEST(ModelConfigTest, TheScoringStrideDoublesWithTheStoreUpToItsMaximum) {
  ModelConfig config;
  EXPECT_EQ(config.max_scoring_stride, 8u);
  const std::size_t first = ModelConfig::kScoreEverySampleBelow;
  EXPECT_EQ(config.ScoringStride(0), 1u);
  EXPECT_EQ(config.ScoringStride(first - 1), 1u);
  EXPECT_EQ(config.ScoringStride(first), 2u);
  EXPECT_EQ(config.ScoringStride(2 * first - 1), 2u);
  EXPECT_EQ(config.ScoringStride(2 * first), 4u);
  EXPECT_EQ(config.ScoringStride(4 * first), 8u);
  EXPECT_EQ(config.ScoringStride(1'000'000'000), 8u);
  config.max_scoring_stride = 1;
  EXPECT_EQ(config.ScoringStride(1'000'000'000), 1u);
  config.max_scoring_stride = 3;  // not a power of two: the cap as it is
  EXPECT_EQ(config.ScoringStride(first), 2u);
  EXPECT_EQ(config.ScoringStride(2 * first), 3u);
  EXPECT_EQ(config.ScoringStride(1'000'000'000), 3u);
  config = BaseConfig();
  config.max_scoring_stride = 0;
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("max_scoring_stride: 1 to 1024, got 0"));
  config.max_scoring_stride = 1025;
  EXPECT_THAT(Model::Create(config).status().message(),
              HasSubstr("max_scoring_stride"));
}

TEST(ModelConfigTest,
     LocalLinearFitsChooseCoordinatesWhereTheMetricOrdersThem) {
  ModelConfig config = LeadingCoordinatesConfig({16, 32, 64});
  // Each k over the leading 8 coordinates, then over all of them.
  EXPECT_EQ(config.CoordinateChoices(), 2u);
  EXPECT_EQ(config.GridSize(), 6u);
  const std::vector<std::pair<std::size_t, std::size_t>> expected = {
      {16, 8}, {16, 0}, {32, 8}, {32, 0}, {64, 8}, {64, 0}};
  for (std::size_t g = 0; g < expected.size(); ++g) {
    EXPECT_EQ(config.FitAt(g).k, expected[g].first) << g;
    EXPECT_EQ(config.FitAt(g).coordinates, expected[g].second) << g;
    EXPECT_EQ(config.KAt(g), expected[g].first) << g;
  }
  config.regressor = RegressorKind::kAuto;
  config.metric = MetricKind::kEgop;
  EXPECT_EQ(config.CoordinateChoices(), 2u);
  // One fit per k: k-NN or the kernel alone, a metric whose coordinates
  // are the inputs in their order, no leading count, or as many as the
  // inputs.
  const auto one_fit = [](ModelConfig changed) {
    EXPECT_EQ(changed.CoordinateChoices(), 1u);
    EXPECT_EQ(changed.FitAt(2).k, changed.k_grid[2]);
    EXPECT_EQ(changed.FitAt(2).coordinates, 0u);
  };
  for (RegressorKind regressor :
       {RegressorKind::kNearest, RegressorKind::kKernel}) {
    ModelConfig changed = config;
    changed.regressor = regressor;
    one_fit(changed);
  }
  for (MetricKind metric :
       {MetricKind::kEuclidean, MetricKind::kGradientWeights, MetricKind::kGlml,
        MetricKind::kAuto}) {
    ModelConfig changed = config;
    changed.metric = metric;
    one_fit(changed);
  }
  for (std::size_t leading : {0u, 21u, 30u}) {
    ModelConfig changed = config;
    changed.local_linear_leading = leading;
    one_fit(changed);
  }
}

TEST(ModelConfigTest, EncodingsRoundTripAndOlderOnesLoadWithoutTheBase) {
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kAuto;
  config.regressor = RegressorKind::kAuto;
  config.gradient_estimator = GradientEstimatorKind::kLocalLinear;
  config.base_ridge = 3.0;
  config.base_forgetting = 0.99;
  config.metric_refresh_samples = 4096;
  config.mlkr_fit_budget = 12345;
  config.per_target_base = true;
  config.random_feature_base = true;
  config.random_feature_frequencies = 40;
  config.random_feature_lengthscales = {0.5, 1.5};
  config.random_feature_ridges = {0.01};
  config.interval_level = 0.8;
  config.interval_window = 500;
  config.interval_step = 0.01;
  config.take_over = TakeOverRule::kLogged;
  config.max_scoring_stride = 16;
  config.base_relative_ridge = 0.05;
  config.mlkr_settled_after = 700;
  config.combine = true;
  ASSERT_TRUE(CompleteAndValidate(&config).ok());
  config.interval_difficulty = true;
  config.interval_lag = 3000;
  config.interval_lag_divisor = 7;
  config.interval_recalibration = 5;
  config.local_linear_leading = 5;
  config.combination_recency = 3;
  std::string bytes;
  ByteWriter writer(&bytes);
  SaveConfig(config, writer);
  ModelConfig read;
  ByteReader reader(bytes);
  ASSERT_TRUE(LoadConfig(reader, &read).ok());
  EXPECT_EQ(read.metric, MetricKind::kAuto);
  EXPECT_EQ(read.regressor, RegressorKind::kAuto);
  EXPECT_TRUE(read.linear_base);
  EXPECT_EQ(read.base_ridge, 3.0);
  EXPECT_EQ(read.base_forgetting, 0.99);
  EXPECT_EQ(read.k_grid, config.k_grid);
  EXPECT_EQ(read.gradient_estimator, GradientEstimatorKind::kLocalLinear);
  EXPECT_TRUE(read.auto_includes_mlkr);
  EXPECT_EQ(read.mlkr_rank, config.mlkr_rank);
  EXPECT_EQ(read.mlkr_neighbors, config.mlkr_neighbors);
  EXPECT_EQ(read.mlkr_fit_samples, config.mlkr_fit_samples);
  EXPECT_EQ(read.mlkr_fit_steps, config.mlkr_fit_steps);
  EXPECT_TRUE(read.auto_includes_glml);
  EXPECT_EQ(read.glml_gamma_ratio, config.glml_gamma_ratio);
  EXPECT_EQ(read.metric_refresh_samples, 4096u);
  EXPECT_EQ(read.mlkr_fit_budget, 12345u);
  EXPECT_TRUE(read.per_target_base);
  EXPECT_TRUE(read.random_feature_base);
  EXPECT_EQ(read.random_feature_frequencies, 40u);
  EXPECT_EQ(read.random_feature_lengthscales, (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(read.random_feature_ridges, std::vector<double>{0.01});
  EXPECT_EQ(read.interval_level, 0.8);
  EXPECT_EQ(read.interval_window, 500u);
  EXPECT_EQ(read.interval_step, 0.01);
  EXPECT_EQ(read.take_over, TakeOverRule::kLogged);
  EXPECT_EQ(read.max_scoring_stride, 16u);
  EXPECT_EQ(read.base_relative_ridge, 0.05);
  EXPECT_EQ(read.mlkr_settled_after, 700u);
  EXPECT_TRUE(read.combine);
  EXPECT_TRUE(read.interval_difficulty);
  EXPECT_EQ(read.interval_lag, 3000u);
  EXPECT_EQ(read.interval_lag_divisor, 7u);
  EXPECT_EQ(read.interval_recalibration, 5u);
  EXPECT_EQ(read.local_linear_leading, 5u);
  EXPECT_EQ(read.combination_recency, 3u);
  EXPECT_TRUE(read.random_base_follows_choice);
  // An older encoding: the newer one without its last `cut` bytes, under
  // `version`.
  const auto older = [](std::string newer, std::uint32_t version,
                        std::size_t cut) {
    newer.resize(newer.size() - cut);
    std::memcpy(newer.data(), &version, sizeof version);
    return newer;
  };
  const auto load = [&read](const std::string& encoded) {
    ByteReader reader(encoded);
    return LoadConfig(reader, &read).ok();
  };
  // Version 22 is version 23 without random_base_follows_choice: the
  // random-feature base of a model written then followed the first index.
  const std::string version22 = older(bytes, 22, 1);
  ASSERT_TRUE(load(version22));
  EXPECT_FALSE(read.random_base_follows_choice);
  EXPECT_EQ(read.combination_recency, 3u);
  // Version 21 is version 22 without combination_recency: a model written
  // then weighed every sample the same in its aggregation.
  const std::string version21 = older(version22, 21, 8);
  ASSERT_TRUE(load(version21));
  EXPECT_EQ(read.combination_recency, 0u);
  EXPECT_EQ(read.local_linear_leading, 5u);
  // Version 20 is version 21 without local_linear_leading: every local
  // linear fit of a model written then was over all coordinates.
  const std::string version20 = older(version21, 20, 8);
  ASSERT_TRUE(load(version20));
  EXPECT_EQ(read.local_linear_leading, 0u);
  EXPECT_EQ(read.interval_recalibration, 5u);
  // Version 19 is version 20 without interval_recalibration: a model
  // written then calibrated its queries on the streamed scores alone.
  const std::string version19 = older(version20, 19, 8);
  ASSERT_TRUE(load(version19));
  EXPECT_EQ(read.interval_recalibration, 0u);
  EXPECT_EQ(read.interval_lag_divisor, 7u);
  // Version 18 is version 19 without interval_lag_divisor: the queries'
  // lag was a tenth of the samples seen then.
  const std::string version18 = older(version19, 18, 8);
  ASSERT_TRUE(load(version18));
  EXPECT_EQ(read.interval_lag_divisor, 10u);
  EXPECT_EQ(read.interval_lag, 3000u);
  // Version 17 is version 18 without interval_lag: the honest predictions
  // calibrated a model's queries then.
  const std::string version17 = older(version18, 17, 8);
  ASSERT_TRUE(load(version17));
  EXPECT_EQ(read.interval_lag, 0u);
  EXPECT_TRUE(read.interval_difficulty);
  // Version 16 is version 17 without interval_difficulty: a model written
  // then had intervals of the same width at every input.
  const std::string version16 = older(version17, 16, 1);
  ASSERT_TRUE(load(version16));
  EXPECT_FALSE(read.interval_difficulty);
  EXPECT_TRUE(read.combine);
  // Version 15 is version 16 without combine: each target of a model
  // written then chose one candidate.
  const std::string version15 = older(version16, 15, 1);
  ASSERT_TRUE(load(version15));
  EXPECT_FALSE(read.combine);
  EXPECT_EQ(read.mlkr_settled_after, 700u);
  // Version 14 is version 15 without mlkr_settled_after: a model written
  // then settles its maps where it did, at a full budget of samples read.
  const std::string version14 = older(version15, 14, 8);
  ASSERT_TRUE(load(version14));
  EXPECT_EQ(read.mlkr_settled_after, 12345u / config.mlkr_fit_steps);
  EXPECT_EQ(read.base_relative_ridge, 0.05);
  // Version 13 is version 14 without the base's relative ridge: a model
  // written then keeps the base it learned with (none).
  const std::string version13 = older(version14, 13, 8);
  ASSERT_TRUE(load(version13));
  EXPECT_EQ(read.base_relative_ridge, 0.0);
  EXPECT_EQ(read.max_scoring_stride, 16u);
  // Version 12 is version 13 without the scoring stride: a model written
  // then scored every sample.
  const std::string version12 = older(version13, 12, 8);
  ASSERT_TRUE(load(version12));
  EXPECT_EQ(read.max_scoring_stride, 1u);
  EXPECT_EQ(read.ScoringStride(1'000'000), 1u);
  EXPECT_EQ(read.take_over, TakeOverRule::kLogged);
  // Version 11 is version 12 without the take-over rule: a model written
  // then took over at fixed counts (its log has no take-over records).
  const std::string version11 = older(version12, 11, 1);
  ASSERT_TRUE(load(version11));
  EXPECT_EQ(read.take_over, TakeOverRule::kFixedCount);
  EXPECT_EQ(read.interval_step, 0.01);
  // Version 10 is version 11 without the intervals' settings (two
  // doubles and a count): a model written then takes the defaults.
  const std::string version10 = older(version11, 10, 24);
  ASSERT_TRUE(load(version10));
  EXPECT_EQ(read.interval_level, ModelConfig().interval_level);
  EXPECT_EQ(read.interval_window, ModelConfig().interval_window);
  EXPECT_EQ(read.interval_step, ModelConfig().interval_step);
  EXPECT_TRUE(read.random_feature_base);
  // Version 9 is version 10 without the random-feature base (a flag, a
  // count, two lists of 2 and 1 doubles): a model written then had a
  // linear base.
  const std::string version9 = older(version10, 9, 1 + 8 + 24 + 16);
  ASSERT_TRUE(load(version9));
  EXPECT_FALSE(read.random_feature_base);
  EXPECT_EQ(read.random_feature_frequencies,
            ModelConfig().random_feature_frequencies);
  EXPECT_TRUE(read.per_target_base);
  // Version 8 is version 9 without per_target_base: every target of a
  // model written then used the base (or none did).
  const std::string version8 = older(version9, 8, 1);
  ASSERT_TRUE(load(version8));
  EXPECT_FALSE(read.per_target_base);
  EXPECT_EQ(read.mlkr_fit_budget, 12345u);
  // Version 7 is version 8 without the MLKR fit's budget: a model written
  // then ran every evaluation of every fit.
  const std::string version7 = older(version8, 7, 8);
  ASSERT_TRUE(load(version7));
  EXPECT_EQ(read.mlkr_fit_budget, 0u);
  EXPECT_EQ(read.mlkr_settled_after, 0u);  // never settled: no budget
  EXPECT_EQ(read.MlkrFitSteps(20000), read.mlkr_fit_steps);
  EXPECT_EQ(read.metric_refresh_samples, 4096u);
  // Version 6 is version 7 without the refresh's sample count: a model
  // written then refreshed its metric at every stored sample.
  const std::string version6 = older(version7, 6, 8);
  ASSERT_TRUE(load(version6));
  EXPECT_EQ(read.metric_refresh_samples, 0u);
  EXPECT_EQ(read.glml_gamma_ratio, config.glml_gamma_ratio);
  // Version 5 is version 6 without GLML's ratio and flag: an auto model
  // written then never chose GLML, even without a base.
  const std::string version5 = older(version6, 5, 9);
  ASSERT_TRUE(load(version5));
  EXPECT_FALSE(read.auto_includes_glml);
  read.linear_base = false;
  EXPECT_EQ(read.Candidates().size(), 4u);
  // Version 4 is version 5 without MLKR's four counts and flag: an auto
  // model written then chose among three metrics.
  const std::string version4 = older(version5, 4, 33);
  ASSERT_TRUE(load(version4));
  EXPECT_EQ(read.metric, MetricKind::kAuto);
  EXPECT_FALSE(read.auto_includes_mlkr);
  EXPECT_EQ(read.Candidates().size(), 3u);
  // Version 3 is version 4 without the last byte: a model written then
  // estimated gradients by finite differences.
  const std::string version3 = older(version4, 3, 1);
  ASSERT_TRUE(load(version3));
  EXPECT_EQ(read.gradient_estimator, GradientEstimatorKind::kFiniteDifferences);
  EXPECT_TRUE(read.linear_base);
  // Version 2 is version 3 without the last three fields (a flag and two
  // doubles): a model written then had no base.
  ASSERT_TRUE(load(older(version3, 2, 17)));
  EXPECT_FALSE(read.linear_base);
  EXPECT_EQ(read.base_ridge, ModelConfig().base_ridge);
  EXPECT_EQ(read.base_forgetting, ModelConfig().base_forgetting);
  // A later version than this build knows is refused.
  EXPECT_FALSE(load(older(bytes, 24, 0)));
  // An unknown take-over rule is refused (the byte before the stride).
  std::string unknown_rule = version13;
  unknown_rule[version13.size() - 9] = 2;
  EXPECT_FALSE(load(unknown_rule));
  // So is a stride of 0 (the last 8 bytes of version 13, little-endian).
  std::string no_stride = version13;
  std::fill(no_stride.end() - 8, no_stride.end(), '\0');
  EXPECT_FALSE(load(no_stride));
  // And a negative relative ridge (the last 8 bytes of version 14).
  std::string negative_ridge = version14;
  const double minus_one = -1.0;
  std::memcpy(negative_ridge.data() + version14.size() - 8, &minus_one, 8);
  EXPECT_FALSE(load(negative_ridge));
}
}  // namespace
}  // namespace streamreg
