// The learned metrics against closed forms (Kpotufe & Boularias 2012;
// Trivedi et al. 2014 §5.1): on y = sum_i sin(c_i x_i) the gradient weights
// recover E|df/dz_i|; under a rotation of the inputs the EGOP recovers the
// relevant subspace and the gradient weights cannot; the online estimate
// approaches the batch one.
#include "core/metric/learned_metric.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/metric/batch_gradients.h"
#include "core/model/model.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

struct Data {
  std::size_t dim = 0;
  std::vector<double> x;  // row-major
  std::vector<double> y;
  std::size_t size() const { return y.size(); }
  std::span<const double> row(std::size_t i) const {
    return {x.data() + i * dim, dim};
  }
};

// x uniform on [0, 1]^d, y = sum_i sin(c_i x_i).
Data SineSum(std::size_t n, const std::vector<double>& c, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Data data{c.size(), {}, {}};
  for (std::size_t s = 0; s < n; ++s) {
    double y = 0.0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const double x = uniform(random);
      data.x.push_back(x);
      y += std::sin(c[i] * x);
    }
    data.y.push_back(y);
  }
  return data;
}

// Standardizes the columns of `data` by their sample mean and deviation.
std::vector<double> Standardized(const Data& data) {
  const std::size_t d = data.dim;
  const std::size_t n = data.size();
  std::vector<double> mean(d, 0.0), variance(d, 0.0);
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < d; ++i) mean[i] += data.x[s * d + i] / n;
  }
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < d; ++i) {
      const double deviation = data.x[s * d + i] - mean[i];
      variance[i] += deviation * deviation / n;
    }
  }
  std::vector<double> z(data.x.size());
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < d; ++i) {
      z[s * d + i] = (data.x[s * d + i] - mean[i]) / std::sqrt(variance[i]);
    }
  }
  return z;
}

// The papers' batch estimate on `data` (standardized), bandwidth h, t = h/2.
GradientStatistics BatchStatistics(const Data& data, double h) {
  const std::vector<double> z = Standardized(data);
  std::vector<std::uint64_t> ids(data.size());
  for (std::size_t s = 0; s < ids.size(); ++s) ids[s] = s;
  absl::StatusOr<CoverTree> tree = CoverTree::Build(data.dim, z, ids);
  EXPECT_TRUE(tree.ok());
  GradientStatistics stats(data.dim, 1, /*outer_products=*/true);
  AddBatchGradients(
      *tree, ids, [&](std::uint64_t id) { return &data.y[id]; }, Kernel::kBox,
      h, h / 2, GradientEstimatorKind::kFiniteDifferences, &stats);
  return stats;
}

TEST(GradientWeightsTest, RecoverMeanAbsoluteDerivativesOfASineSum) {
  // With x_i uniform on [0, 1] and z_i = x_i / sd(x_i), sd = 1/sqrt(12):
  // E|df/dz_i| = sd * c_i E|cos(c_i x_i)| = sd * integral_0^c_i |cos u| du,
  // which is 2, 1, sin(pi/4), 0 times sd for these c.
  const double pi = std::numbers::pi;
  const std::vector<double> c = {pi, pi / 2, pi / 4, 0.0};
  const std::vector<double> truth = {2.0, 1.0, std::sin(pi / 4), 0.0};
  const Data data = SineSum(6000, c, 7);
  const GradientStatistics stats = BatchStatistics(data, 0.7);
  const std::vector<double> w = stats.GradientWeights(0);
  // The order of the coordinates is recovered...
  for (std::size_t i = 0; i + 1 < c.size(); ++i) EXPECT_GT(w[i], w[i + 1]);
  // ...and the ratios of the relevant ones within 25% (the estimator is
  // biased by smoothing over h and t, most at the boundary of the cube
  // where sin(c x) is steepest); the irrelevant one is small: at this n and
  // h its weight is the kernel estimate's noise.
  EXPECT_NEAR(w[0] / w[1], truth[0] / truth[1], 0.25 * truth[0] / truth[1]);
  EXPECT_NEAR(w[1] / w[2], truth[1] / truth[2], 0.25 * truth[1] / truth[2]);
  EXPECT_LT(w[3], 0.35 * w[2]);
}

// x standard normal in R^d, y = sin(2 u_1) + u_2^2 / 2 with u = V^T x for
// a random orthonormal V (d x 2): f varies only in span(V).
Data RotatedRidge(std::size_t n, std::size_t d, std::uint64_t seed,
                  Eigen::MatrixXd* relevant) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd gaussian(d, 2);
  for (std::size_t i = 0; i < d; ++i) {
    gaussian(i, 0) = normal(random);
    gaussian(i, 1) = normal(random);
  }
  *relevant = Eigen::HouseholderQR<Eigen::MatrixXd>(gaussian).householderQ() *
              Eigen::MatrixXd::Identity(d, 2);
  Data data{d, {}, {}};
  Eigen::VectorXd x(d);
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < d; ++i) {
      x(i) = normal(random);
      data.x.push_back(x(i));
    }
    const Eigen::Vector2d u = relevant->transpose() * x;
    data.y.push_back(std::sin(2.0 * u(0)) + 0.5 * u(1) * u(1));
  }
  return data;
}

// The largest principal angle (degrees) between the column spans of two
// matrices with orthonormal columns.
double LargestPrincipalAngle(const Eigen::MatrixXd& a,
                             const Eigen::MatrixXd& b) {
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(a.transpose() * b);
  const double smallest = std::min(1.0, svd.singularValues().minCoeff());
  return std::acos(smallest) * 180.0 / std::numbers::pi;
}

TEST(EgopTest, RecoversTheRelevantSubspaceOfRotatedInputsWhereGwCannot) {
  const std::size_t d = 6;
  Eigen::MatrixXd relevant;
  const Data data = RotatedRidge(5000, d, 11, &relevant);
  const double h = 1.2;
  const GradientStatistics stats = BatchStatistics(data, h);
  const std::vector<double> scales = {1.0};

  const LearnedMetric egop =
      EstimateMetric(MetricKind::kEgop, stats, 0, scales);
  Eigen::MatrixXd top_eigenvectors(d, 2);
  for (std::size_t i = 0; i < d; ++i) {
    top_eigenvectors(i, 0) = egop.eigenvectors[i * d + 0];
    top_eigenvectors(i, 1) = egop.eigenvectors[i * d + 1];
  }
  const double egop_angle = LargestPrincipalAngle(top_eigenvectors, relevant);

  // Gradient weights can only pick coordinate axes: the two heaviest.
  const LearnedMetric gw =
      EstimateMetric(MetricKind::kGradientWeights, stats, 0, scales);
  std::vector<std::size_t> order(d);
  for (std::size_t i = 0; i < d; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return gw.weights[a] > gw.weights[b];
  });
  Eigen::MatrixXd top_axes = Eigen::MatrixXd::Zero(d, 2);
  top_axes(order[0], 0) = 1.0;
  top_axes(order[1], 1) = 1.0;
  const double gw_angle = LargestPrincipalAngle(top_axes, relevant);
  std::printf("angles: egop %.1f gw %.1f; eigenvalues", egop_angle, gw_angle);
  for (double v : egop.eigenvalues) std::printf(" %.3f", v);
  std::printf("\n");

  EXPECT_LT(egop_angle, 15.0);
  EXPECT_GT(gw_angle, 45.0);
  // The EGOP's rank is 2: the remaining eigenvalues are small.
  EXPECT_LT(egop.eigenvalues[2], 0.2 * egop.eigenvalues[1]);
}

// Normalized weights (mean 1), so that online and batch compare by shape.
std::vector<double> Normalized(std::vector<double> weights) {
  double total = 0.0;
  for (double w : weights) total += w;
  for (double& w : weights) w *= static_cast<double>(weights.size()) / total;
  return weights;
}

double RelativeDistance(const std::vector<double>& a,
                        const std::vector<double>& b) {
  double difference = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(difference / norm);
}

// How far the online weights of a model fed `data` are from the batch
// estimate (Refit) on the same samples, after 1000 and after 8000 samples.
std::vector<double> OnlineToBatchDistances(const Data& data,
                                           const ModelConfig& config) {
  auto model = *Model::Create(config);
  std::vector<double> distances;
  std::size_t learned = 0;
  for (std::size_t checkpoint : {1000, 8000}) {
    for (; learned < checkpoint; ++learned) {
      const Sample sample{data.row(learned), {&data.y[learned], 1}, learned};
      EXPECT_TRUE(model->Learn({&sample, 1}).ok());
    }
    const std::vector<double> online =
        Normalized(model->metric().metrics[0].weights);
    // The papers' batch estimate on the same samples, same h and t.
    auto copy = *Model::Create(config);
    for (std::size_t s = 0; s < learned; ++s) {
      const Sample sample{data.row(s), {&data.y[s], 1}, s};
      EXPECT_TRUE(copy->Learn({&sample, 1}).ok());
    }
    EXPECT_TRUE(copy->Refit().ok());
    EXPECT_EQ(copy->stats().gradient_bandwidth,
              model->stats().gradient_bandwidth);
    distances.push_back(RelativeDistance(
        online, Normalized(copy->metric().metrics[0].weights)));
  }
  return distances;
}

TEST(OnlineGradientWeightsTest, ApproachTheBatchEstimate) {
  const double pi = std::numbers::pi;
  const Data data = SineSum(8000, {pi, pi / 2, pi / 4, 0.0}, 3);
  ModelConfig config;
  config.input_dim = data.dim;
  config.target_names = {"y"};
  config.metric = MetricKind::kGradientWeights;
  // Pure running sums: each sample's estimate from the samples before it.
  config.metric_refresh_growth = 0.0;
  const std::vector<double> pure = OnlineToBatchDistances(data, config);
  EXPECT_LT(pure[1], pure[0]);
  EXPECT_LT(pure[1], 0.1);
  // With the growth refreshes (the default) the online estimate is mostly
  // made of batch estimates: closer still.
  config.metric_refresh_growth = 2.0;
  const std::vector<double> refreshed = OnlineToBatchDistances(data, config);
  EXPECT_LT(refreshed[1], 0.05);
  EXPECT_LT(refreshed[0], pure[0]);
  EXPECT_LT(refreshed[1], pure[1]);
}

}  // namespace
}  // namespace streamreg
