// A model that searches under GLML's per-query metric (Noh et al.,
// Generative Local Metric Learning for Kernel Regression): its Gaussian
// learned online, a search per target under that target's metric at each
// query.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "core/base/running_moments.h"
#include "core/index/neighbor.h"
#include "core/metric/glml_metric.h"
#include "core/model/model.h"
#include "core/regression/online_ridge.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

constexpr std::size_t kInputs = 4;
constexpr std::size_t kOutputs = 2;

// x ~ N(0, diag(1, 4, 0.25, 1)) (GLML's Gaussian fits it), two targets
// with different gradients: y0 = x0 + sin(x1) / 2, y1 = x2 x3 - x1 / 4,
// each with noise.
using GaussianStream = SampleRows<kInputs, kOutputs>;

GaussianStream MakeGaussianStream(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double scales[kInputs] = {1.0, 2.0, 0.5, 1.0};
  GaussianStream s;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < kInputs; ++k) {
      s.x.push_back(scales[k] * normal(random));
    }
    const double* x = s.x.data() + i * kInputs;
    s.y.push_back(x[0] + 0.5 * std::sin(x[1]) + 0.05 * normal(random));
    s.y.push_back(x[2] * x[3] - 0.25 * x[1] + 0.05 * normal(random));
  }
  return s;
}

ModelConfig GlmlConfig(RegressorKind regressor) {
  ModelConfig config;
  config.input_dim = kInputs;
  config.target_names = {"y0", "y1"};
  config.metric = MetricKind::kGlml;
  config.linear_base = false;
  config.regressor = regressor;
  return config;
}

// Samples [0, n) of `s` by their distance to `query` under target t's GLML
// metric at the query, brute force: the Gaussian learned from the same
// samples in the same order (so bit for bit the model's), the metric in the
// coordinates of the model's index.
std::vector<Neighbor> ByGlmlDistance(const ModelConfig& config,
                                     const MetricTransform& transform,
                                     const GaussianStream& s, std::size_t n,
                                     std::span<const double> query,
                                     std::size_t t) {
  OnlineRidge gaussian(kInputs, kOutputs, config.base_ridge,
                       config.base_forgetting);
  for (std::size_t i = 0; i < n; ++i) {
    gaussian.Add(s.input(i), {s.y.data() + i * kOutputs, kOutputs});
  }
  std::vector<double> direction(kInputs);
  gaussian.DensityDirection(query, direction);
  const GlmlMetric metric = GlmlMetricScaled(
      gaussian, direction, transform.scale(), t, config.glml_gamma_ratio);
  std::vector<double> z(kInputs), zj(kInputs), v(kInputs);
  transform.Apply(query, z);
  std::vector<Neighbor> all;
  for (std::size_t j = 0; j < n; ++j) {
    transform.Apply(s.input(j), zj);
    for (std::size_t k = 0; k < kInputs; ++k) v[k] = zj[k] - z[k];
    all.push_back({j, std::sqrt(metric.SquaredDistance(v))});
  }
  std::sort(all.begin(), all.end(), NeighborLess);
  return all;
}

// The model's predictions are the k-NN and box-kernel averages over the
// neighbours GLML's metric at the query finds, per target, exactly as a
// brute-force search under the paper's metric finds them.
TEST(GlmlModelTest, PredictsFromTheNeighboursUnderEachTargetsMetric) {
  const GaussianStream s = MakeGaussianStream(1500, 1);
  const std::size_t n = 1200;
  for (RegressorKind regressor :
       {RegressorKind::kNearest, RegressorKind::kKernel}) {
    const ModelConfig config = GlmlConfig(regressor);
    const std::unique_ptr<Model> model = LearnedModel(config, s, n);
    model->FinishRebuilds();
    const ModelStats stats = model->stats();
    const MetricReport report = model->metric();
    ASSERT_EQ(report.in_use.size(), 1u);
    ASSERT_EQ(report.metrics[0].kind, MetricKind::kGlml);
    for (std::size_t q = n; q < n + 40; ++q) {
      const absl::StatusOr<Prediction> p = model->Predict(s.input(q));
      ASSERT_TRUE(p.ok());
      for (std::size_t t = 0; t < kOutputs; ++t) {
        EXPECT_EQ(stats.metric[t], MetricKind::kGlml);
        const std::vector<Neighbor> all =
            ByGlmlDistance(config, report.in_use[0], s, n, s.input(q), t);
        std::size_t count = 0;
        if (regressor == RegressorKind::kNearest) {
          count = stats.k[t];
        } else {
          while (count < all.size() &&
                 all[count].distance <= stats.bandwidth[t]) {
            ++count;
          }
        }
        ASSERT_GT(count, 0u) << "query " << q << " target " << t;
        double sum = 0.0;
        for (std::size_t j = 0; j < count; ++j) {
          sum += s.y[all[j].id * kOutputs + t];
        }
        EXPECT_NEAR(p->value[t], sum / static_cast<double>(count), 1e-9)
            << RegressorKindName(regressor) << " query " << q << " target "
            << t;
        EXPECT_EQ(p->neighbors[t], count);
      }
    }
  }
}

// The prediction the learner makes for each sample before learning it (its
// own search per target, with the honest error's split) is the one Predict
// makes from the same model.
TEST(GlmlModelTest, TheLearnersPredictionIsTheReadersPrediction) {
  const GaussianStream s = MakeGaussianStream(700, 2);
  ModelConfig config = GlmlConfig(RegressorKind::kNearest);
  config.honest_lag = 50;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  ASSERT_TRUE(model.ok());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const absl::StatusOr<Prediction> predicted = (*model)->Predict(s.input(i));
    ASSERT_TRUE(predicted.ok());
    std::vector<Prediction> before;
    const Sample sample = s.sample(i);
    ASSERT_TRUE((*model)->Learn({&sample, 1}, &before).ok());
    for (std::size_t t = 0; t < kOutputs; ++t) {
      EXPECT_EQ(before[0].value[t], predicted->value[t])
          << "sample " << i << " target " << t;
    }
  }
}

// Held-out error over samples [begin, end) of target t, over its variance.
double HeldOutNmse(const Model& model, const GaussianStream& s,
                   std::size_t begin, std::size_t end, std::size_t t) {
  double mean = 0.0;
  for (std::size_t i = begin; i < end; ++i) mean += s.y[i * kOutputs + t];
  mean /= static_cast<double>(end - begin);
  double error = 0.0, variance = 0.0;
  for (std::size_t i = begin; i < end; ++i) {
    const absl::StatusOr<Prediction> p = model.Predict(s.input(i));
    EXPECT_TRUE(p.ok());
    const double y = s.y[i * kOutputs + t];
    error += (p->value[t] - y) * (p->value[t] - y);
    variance += (y - mean) * (y - mean);
  }
  return error / variance;
}

// Online GLML (its Gaussian and standardization followed sample by sample,
// k chosen by the honest error) against batch GLML k-NN on the same
// training samples with the best k for the held-out set in hindsight (the
// batch counterpart at its most favourable): within 3%.
TEST(GlmlModelTest, OnlineEndsWithinThreePercentOfTheBatchCounterpart) {
  const GaussianStream s = MakeGaussianStream(3000, 3);
  const std::size_t n = 2500;
  const ModelConfig config = GlmlConfig(RegressorKind::kNearest);
  const std::unique_ptr<Model> model = LearnedModel(config, s, n);
  model->FinishRebuilds();
  const MetricTransform standardizing = [&] {
    RunningMoments moments(kInputs);
    for (std::size_t i = 0; i < n; ++i) moments.Add(s.input(i));
    return MetricTransform::Standardizing(moments);
  }();
  for (std::size_t t = 0; t < kOutputs; ++t) {
    const double online = HeldOutNmse(*model, s, n, s.size(), t);
    double mean = 0.0;
    for (std::size_t i = n; i < s.size(); ++i) mean += s.y[i * kOutputs + t];
    mean /= static_cast<double>(s.size() - n);
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::vector<Neighbor>> neighbors;
    for (std::size_t q = n; q < s.size(); ++q) {
      neighbors.push_back(
          ByGlmlDistance(config, standardizing, s, n, s.input(q), t));
    }
    for (std::size_t k :
         config.k_grid.empty() ? DefaultKGrid() : config.k_grid) {
      double error = 0.0, variance = 0.0;
      for (std::size_t q = n; q < s.size(); ++q) {
        const std::vector<Neighbor>& all = neighbors[q - n];
        double sum = 0.0;
        for (std::size_t j = 0; j < k; ++j) {
          sum += s.y[all[j].id * kOutputs + t];
        }
        const double y = s.y[q * kOutputs + t];
        error += (sum / static_cast<double>(k) - y) *
                 (sum / static_cast<double>(k) - y);
        variance += (y - mean) * (y - mean);
      }
      best = std::min(best, error / variance);
    }
    EXPECT_LE(online, 1.03 * best) << "target " << t;
    EXPECT_LT(online, 0.5) << "target " << t;
  }
}

TEST(GlmlModelTest, RefusesALinearBaseAndPerTargetMetrics) {
  ModelConfig config = GlmlConfig(RegressorKind::kNearest);
  config.linear_base = true;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(absl::StrContains(model.status().message(), "linear_base"));
  config = GlmlConfig(RegressorKind::kNearest);
  config.per_target_metric = true;
  model = Model::Create(config);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(absl::StrContains(model.status().message(), "per_target_metric"));
  config = GlmlConfig(RegressorKind::kNearest);
  config.glml_gamma_ratio = 0.0;
  model = Model::Create(config);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(absl::StrContains(model.status().message(), "glml_gamma_ratio"));
}

// kAuto includes GLML only without a linear base.
TEST(GlmlModelTest, AutoIncludesGlmlWithoutABase) {
  ModelConfig config = GlmlConfig(RegressorKind::kNearest);
  config.metric = MetricKind::kAuto;
  EXPECT_TRUE(config.SearchesGlml());
  EXPECT_EQ(config.Candidates().back(), MetricKind::kGlml);
  config.linear_base = true;
  EXPECT_FALSE(config.SearchesGlml());
  EXPECT_EQ(config.Candidates().size(), 4u);
}

}  // namespace
}  // namespace streamreg
