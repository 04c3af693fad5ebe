// MetricTransform and TransformFor: the maps, their normalization, and the
// drift measure's invariances.
#include "core/metric/metric_transform.h"

#include <cmath>
#include <vector>

#include "core/metric/learned_metric.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(MetricTransformTest, StandardizesThenAppliesTheMetric) {
  const MetricTransform diagonal =
      MetricTransform::Diagonal({1, 2}, {2, 4}, {3, 0.5});
  const std::vector<double> z = diagonal.Apply(std::vector<double>{5, 10});
  EXPECT_DOUBLE_EQ(z[0], 3 * (5 - 1) / 2.0);
  EXPECT_DOUBLE_EQ(z[1], 0.5 * (10 - 2) / 4.0);
  const MetricTransform dense =
      MetricTransform::Dense({0, 0}, {1, 2}, {1, 2, 3, 4});
  const std::vector<double> w = dense.Apply(std::vector<double>{1, 2});
  EXPECT_DOUBLE_EQ(w[0], 1 * 1 + 2 * 1);
  EXPECT_DOUBLE_EQ(w[1], 3 * 1 + 4 * 1);
}

TEST(MetricTransformTest, DriftIgnoresRotationsAndCentresOnly) {
  const double c = std::cos(0.7), s = std::sin(0.7);
  const MetricTransform a =
      MetricTransform::Dense({0, 0}, {1, 1}, {2, 0, 0, 1});
  // Q * L for a rotation Q: the same distances.
  const MetricTransform rotated =
      MetricTransform::Dense({5, -3}, {1, 1}, {c * 2, -s * 1, s * 2, c * 1});
  EXPECT_NEAR(a.RelativeChange(rotated), 0.0, 1e-12);
  const MetricTransform scaled =
      MetricTransform::Dense({0, 0}, {1, 1}, {2.2, 0, 0, 1});
  // Gram diag(4, 1) -> diag(4.84, 1): |0.84| / sqrt(17).
  EXPECT_NEAR(a.RelativeChange(scaled), 0.84 / std::sqrt(17.0), 1e-12);
}

TEST(TransformForTest, NormalizesGradientWeightsAndEgop) {
  LearnedMetric gw;
  gw.kind = MetricKind::kGradientWeights;
  gw.weights = {4.0, 1.0, 1.0};
  const MetricTransform t = TransformFor(gw, {0, 0, 0}, {1, 1, 1}, 0.0);
  // W / mean W = (2, 0.5, 0.5), L = sqrt of it.
  EXPECT_NEAR(t.weights()[0], std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(t.weights()[1], std::sqrt(0.5), 1e-12);

  // A rank-one EGOP along (1, 1)/sqrt(2), ridge 0.1 after normalization.
  LearnedMetric egop;
  egop.kind = MetricKind::kEgop;
  egop.matrix = {1, 1, 1, 1};
  egop.weights = {1, 1};
  const MetricTransform e = TransformFor(egop, {0, 0}, {1, 1}, 0.1);
  // M / (trace/d) = [[1,1],[1,1]] + 0.1 I: eigenvalues 2.1 and 0.1, scaled
  // to sum d = 2: 2 * 2.1 / 2.2 and 2 * 0.1 / 2.2. A step along (1, 1)
  // stretches by sqrt of the first, along (1, -1) by sqrt of the second.
  const std::vector<double> along = e.Apply(std::vector<double>{1, 1});
  const std::vector<double> across = e.Apply(std::vector<double>{1, -1});
  const double along_norm = std::hypot(along[0], along[1]);
  const double across_norm = std::hypot(across[0], across[1]);
  EXPECT_NEAR(along_norm, std::sqrt(2.0) * std::sqrt(4.2 / 2.2), 1e-12);
  EXPECT_NEAR(across_norm, std::sqrt(2.0) * std::sqrt(0.2 / 2.2), 1e-12);

  // No information yet: standardized Euclidean.
  LearnedMetric empty;
  empty.kind = MetricKind::kEgop;
  empty.matrix = {0, 0, 0, 0};
  empty.weights = {0, 0};
  EXPECT_FALSE(TransformFor(empty, {0, 0}, {1, 1}, 0.1).is_dense());
}

}  // namespace
}  // namespace streamreg
