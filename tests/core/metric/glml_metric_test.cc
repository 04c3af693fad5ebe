// GLML's per-query metric (Noh et al. 2017, Algorithm 1; core/metric/
// glml_metric.h) against its definitions: the closed-form eigenpairs
// against a dense eigendecomposition of the paper's rank-2 matrix
// B / (2 p(x)); the distance against |L^T v| with L built explicitly
// (eq. 28) and det L = 1 (eq. 23); the invariance to the density's scale;
// and the degenerate cases.
#include "core/metric/glml_metric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "Eigen/Dense"
#include "gtest/gtest.h"
#include "tests/support/random_vector.h"

namespace streamreg {
namespace {

Eigen::VectorXd Vector(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(),
                                           static_cast<Eigen::Index>(v.size()));
}

TEST(GlmlMetricTest, EigenpairsAreTheDenseDecompositionOfB) {
  std::mt19937_64 random(1);
  for (std::size_t d : {2, 3, 6, 21}) {
    for (int trial = 0; trial < 5; ++trial) {
      const std::vector<double> grad_y = RandomVector(d, random);
      const std::vector<double> direction = RandomVector(d, random);
      const GlmlMetric metric(grad_y, direction, 1e-2);
      // B = grad y grad p^T + grad p grad y^T with grad p = p g, over 2 p.
      const double p = 0.37;
      const Eigen::VectorXd gy = Vector(grad_y);
      const Eigen::VectorXd gp = p * Vector(direction);
      const Eigen::MatrixXd b =
          (gy * gp.transpose() + gp * gy.transpose()) / (2.0 * p);
      const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dense(b);
      const Eigen::Index last = static_cast<Eigen::Index>(d - 1);
      const double scale = dense.eigenvalues().cwiseAbs().maxCoeff();
      EXPECT_NEAR(metric.lambda1(), dense.eigenvalues()(last), 1e-9 * scale);
      EXPECT_NEAR(metric.lambda2(), dense.eigenvalues()(0), 1e-9 * scale);
      EXPECT_GE(metric.lambda1(), 0.0);
      EXPECT_LE(metric.lambda2(), 0.0);
      // The other eigenvalues are 0: B has rank 2.
      for (Eigen::Index k = 1; k < last; ++k) {
        EXPECT_NEAR(dense.eigenvalues()(k), 0.0, 1e-9 * scale);
      }
      ASSERT_EQ(metric.e1().size(), d);
      ASSERT_EQ(metric.e2().size(), d);
      const Eigen::VectorXd e1 =
          Vector({metric.e1().begin(), metric.e1().end()});
      const Eigen::VectorXd e2 =
          Vector({metric.e2().begin(), metric.e2().end()});
      EXPECT_NEAR(std::fabs(e1.dot(dense.eigenvectors().col(last))), 1.0, 1e-9);
      EXPECT_NEAR(std::fabs(e2.dot(dense.eigenvectors().col(0))), 1.0, 1e-9);
      EXPECT_LE((b * e1 - metric.lambda1() * e1).norm(), 1e-9 * scale);
      EXPECT_LE((b * e2 - metric.lambda2() * e2).norm(), 1e-9 * scale);
    }
  }
}

// L = [e1 e2 U_o] diag(s1, s2, s0, ..., s0), U_o completing the basis.
Eigen::MatrixXd ExplicitL(const GlmlMetric& metric) {
  const auto d = static_cast<Eigen::Index>(metric.dim());
  Eigen::MatrixXd start = Eigen::MatrixXd::Identity(d, d);
  start.col(0) = Vector({metric.e1().begin(), metric.e1().end()});
  start.col(1) = Vector({metric.e2().begin(), metric.e2().end()});
  Eigen::MatrixXd basis = start.householderQr().householderQ();
  // Householder QR keeps the span of the first columns, up to sign.
  basis.col(0) = start.col(0);
  basis.col(1) = start.col(1);
  Eigen::VectorXd diagonal = Eigen::VectorXd::Constant(d, metric.s0());
  diagonal(0) = metric.s1();
  diagonal(1) = metric.s2();
  return basis * diagonal.asDiagonal();
}

TEST(GlmlMetricTest, TheDistanceIsThatOfEquation28WithUnitDeterminant) {
  std::mt19937_64 random(2);
  for (std::size_t d : {2, 5, 21}) {
    const std::vector<double> grad_y = RandomVector(d, random);
    const std::vector<double> direction = RandomVector(d, random);
    const GlmlMetric metric(grad_y, direction, 1e-2);
    ASSERT_FALSE(metric.euclidean());
    const Eigen::MatrixXd l = ExplicitL(metric);
    EXPECT_NEAR(std::fabs(l.determinant()), 1.0, 1e-9);
    // gamma = 1e-2 max |lambda|, T as in the header.
    const double gamma = 1e-2 * std::max(std::fabs(metric.lambda1()),
                                         std::fabs(metric.lambda2()));
    EXPECT_NEAR(metric.s1() / metric.s0(),
                std::sqrt((metric.lambda1() + gamma) / gamma), 1e-9);
    EXPECT_NEAR(metric.s2() / metric.s0(),
                std::sqrt((-metric.lambda2() + gamma) / gamma), 1e-9);
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<double> v = RandomVector(d, random);
      const double expected = (l.transpose() * Vector(v)).squaredNorm();
      EXPECT_NEAR(metric.SquaredDistance(v), expected, 1e-9 * expected);
      EXPECT_GE(std::sqrt(metric.SquaredDistance(v)),
                metric.LowerBoundFactor() * Vector(v).norm() * (1 - 1e-12));
    }
  }
}

TEST(GlmlMetricTest, TheDensitysScaleDoesNotChangeTheMetric) {
  std::mt19937_64 random(3);
  const std::vector<double> grad_y = RandomVector(7, random);
  std::vector<double> direction = RandomVector(7, random);
  const GlmlMetric metric(grad_y, direction, 1e-2);
  for (double& x : direction) x *= 40.0;
  const GlmlMetric scaled(grad_y, direction, 1e-2);
  EXPECT_NEAR(scaled.s0(), metric.s0(), 1e-12);
  EXPECT_NEAR(scaled.s1(), metric.s1(), 1e-12);
  EXPECT_NEAR(scaled.s2(), metric.s2(), 1e-12);
  EXPECT_NEAR(scaled.lambda1(), 40.0 * metric.lambda1(),
              1e-9 * scaled.lambda1());
}

TEST(GlmlMetricTest, DegenerateGradientsGiveUsableMetrics) {
  const std::vector<double> zero(4, 0.0);
  const std::vector<double> v = {1.0, -2.0, 0.5, 3.0};
  // At the mean, or where y is flat: Euclidean.
  for (const GlmlMetric& metric :
       {GlmlMetric(zero, v, 1e-2), GlmlMetric(v, zero, 1e-2)}) {
    EXPECT_TRUE(metric.euclidean());
    EXPECT_EQ(metric.SquaredDistance(v), 1.0 + 4.0 + 0.25 + 9.0);
    EXPECT_EQ(metric.LowerBoundFactor(), 1.0);
  }
  // Parallel: B = 2 grad y grad p^T has one nonzero eigenvalue.
  std::vector<double> twice = v;
  for (double& x : twice) x *= 2.0;
  const GlmlMetric parallel(v, twice, 1e-2);
  EXPECT_FALSE(parallel.euclidean());
  EXPECT_NEAR(parallel.lambda2(), 0.0, 1e-12);
  EXPECT_TRUE(parallel.e2().empty());
  EXPECT_NEAR(parallel.s2(), parallel.s0(), 1e-12);
  EXPECT_TRUE(std::isfinite(parallel.SquaredDistance(v)));
  // Opposite: one negative eigenvalue.
  std::vector<double> opposite = v;
  for (double& x : opposite) x = -x;
  const GlmlMetric against(v, opposite, 1e-2);
  EXPECT_NEAR(against.lambda1(), 0.0, 1e-12);
  EXPECT_TRUE(against.e1().empty());
  EXPECT_GT(against.SquaredDistance(v), 0.0);
}

// From a Gaussian learned online: x ~ N(0, I_3), y = 2 x_0 - x_1 + noise,
// so grad y = (2, -1, 0) and grad p / p = -x; at x = (1, 1, 0) the metric
// is the closed form's for those two vectors.
TEST(GlmlMetricTest, FromAGaussianLearnedOnline) {
  std::mt19937_64 random(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  OnlineRidge gaussian(3, 1, 1e-6, 1.0);
  for (int i = 0; i < 20000; ++i) {
    const std::vector<double> x = {normal(random), normal(random),
                                   normal(random)};
    const std::vector<double> y = {2.0 * x[0] - x[1] + 0.1 * normal(random)};
    gaussian.Add(x, y);
  }
  const std::vector<double> at = {1.0, 1.0, 0.0};
  const GlmlMetric learned = GlmlMetricAt(gaussian, at, 0, 1e-2);
  const GlmlMetric exact(std::vector<double>{2.0, -1.0, 0.0},
                         std::vector<double>{-1.0, -1.0, 0.0}, 1e-2);
  EXPECT_NEAR(learned.lambda1(), exact.lambda1(), 0.05 * exact.lambda1());
  EXPECT_NEAR(learned.lambda2(), exact.lambda2(), 0.05 * -exact.lambda2());
  EXPECT_NEAR(learned.s1(), exact.s1(), 0.05 * exact.s1());
  EXPECT_NEAR(learned.s2(), exact.s2(), 0.05 * exact.s2());
  EXPECT_NEAR(learned.s0(), exact.s0(), 0.05 * exact.s0());
}

}  // namespace
}  // namespace streamreg
