// The online ridge regression against its definition: equal to the batch
// weighted ridge solved independently (Householder QR of the augmented,
// centred design) with and without forgetting, exact on a plane, inputs that
// never vary, the edge cases, and snapshots.
#include "core/regression/online_ridge.h"

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Dense"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 4;
constexpr std::size_t kTargets = 2;

struct Stream {
  std::vector<std::vector<double>> x;
  std::vector<std::vector<double>> y;
};

// n samples; y_t = t + (t + 1) (x_0 - 2 x_1 + 3 x_2) + noise (x_3 has no
// effect); column `constant` (if < kDim) holds 5 throughout.
Stream MakeStream(std::size_t n, double noise, std::uint64_t seed,
                  std::size_t constant = kDim) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> x(kDim);
    for (std::size_t j = 0; j < kDim; ++j) {
      x[j] = j == constant ? 5.0 : 3.0 * normal(random) + 1.0;
    }
    std::vector<double> y(kTargets);
    for (std::size_t t = 0; t < kTargets; ++t) {
      y[t] = static_cast<double>(t) +
             static_cast<double>(t + 1) * (x[0] - 2.0 * x[1] + 3.0 * x[2]) +
             noise * normal(random);
    }
    s.x.push_back(std::move(x));
    s.y.push_back(std::move(y));
  }
  return s;
}

// The batch fit from its definition: weights w_i = f^(n-1-i) summing to W,
// weighted means, and B minimizing sum_i w_i |y_i - a - B^T x_i|^2 +
// alpha sum_j s_j^2 |B_j|^2, alpha = ridge + relative_ridge W (s_j^2 the
// weighted variance of input j; an input that never varies gets B_j = 0),
// by QR of
//   [sqrt(w) (X - mean); sqrt(alpha) diag(s)] B = [sqrt(w) (Y - mean); 0].
struct BatchRidge {
  Eigen::VectorXd x_mean, y_mean;
  Eigen::MatrixXd slope;
  Eigen::VectorXd residual_scale;

  BatchRidge(const Stream& s, double ridge, double forgetting,
             double relative_ridge = 0.0) {
    const std::size_t n = s.x.size();
    Eigen::VectorXd w(n);
    for (std::size_t i = 0; i < n; ++i) {
      w(i) = std::pow(forgetting, static_cast<double>(n - 1 - i));
    }
    const double total = w.sum();
    const double alpha = ridge + relative_ridge * total;
    Eigen::MatrixXd x(n, kDim), y(n, kTargets);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < kDim; ++j) x(i, j) = s.x[i][j];
      for (std::size_t t = 0; t < kTargets; ++t) y(i, t) = s.y[i][t];
    }
    x_mean = x.transpose() * w / total;
    y_mean = y.transpose() * w / total;
    const Eigen::MatrixXd xc = x.rowwise() - x_mean.transpose();
    const Eigen::MatrixXd yc = y.rowwise() - y_mean.transpose();
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n + kDim, kDim);
    Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n + kDim, kTargets);
    a.topRows(n) = w.cwiseSqrt().asDiagonal() * xc;
    b.topRows(n) = w.cwiseSqrt().asDiagonal() * yc;
    for (std::size_t j = 0; j < kDim; ++j) {
      const double variance =
          (w.array() * xc.col(j).array().square()).sum() / total;
      a(n + j, j) = variance > 1e-20 ? std::sqrt(alpha * variance) : 1.0;
    }
    slope = a.householderQr().solve(b);
    const Eigen::MatrixXd residual = yc - xc * slope;
    residual_scale =
        ((residual.array().square().colwise() * w.array()).colwise().sum() /
         total)
            .sqrt()
            .transpose();
  }

  std::vector<double> Predict(const std::vector<double>& x) const {
    std::vector<double> out(kTargets);
    for (std::size_t t = 0; t < kTargets; ++t) {
      out[t] = y_mean(t);
      for (std::size_t j = 0; j < kDim; ++j) {
        out[t] += slope(j, t) * (x[j] - x_mean(j));
      }
    }
    return out;
  }
};

OnlineRidge Learn(const Stream& s, double ridge, double forgetting,
                  double relative_ridge = 0.0) {
  OnlineRidge model(kDim, kTargets, ridge, forgetting, relative_ridge);
  for (std::size_t i = 0; i < s.x.size(); ++i) model.Add(s.x[i], s.y[i]);
  return model;
}

std::vector<double> Predict(const OnlineRidge& model,
                            const std::vector<double>& x) {
  std::vector<double> out(kTargets);
  model.Predict(x, out);
  return out;
}

void ExpectEqualsBatch(const Stream& s, double ridge, double forgetting,
                       double relative_ridge = 0.0) {
  const OnlineRidge online = Learn(s, ridge, forgetting, relative_ridge);
  const BatchRidge batch(s, ridge, forgetting, relative_ridge);
  for (std::size_t j = 0; j < kDim; ++j) {
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(online.slope(j, t), batch.slope(j, t),
                  1e-9 * (1.0 + std::abs(batch.slope(j, t))))
          << "j=" << j << " t=" << t;
    }
  }
  const Stream queries = MakeStream(20, 0.0, 99);
  for (const std::vector<double>& x : queries.x) {
    const std::vector<double> got = Predict(online, x);
    const std::vector<double> want = batch.Predict(x);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(got[t], want[t], 1e-9 * (1.0 + std::abs(want[t])));
    }
  }
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_NEAR(online.ResidualScale(t), batch.residual_scale(t),
                1e-7 * (1.0 + batch.residual_scale(t)));
  }
}

TEST(OnlineRidgeTest, EqualsTheBatchWeightedRidge) {
  ExpectEqualsBatch(MakeStream(300, 2.0, 1), 1.0, 1.0);
  ExpectEqualsBatch(MakeStream(300, 2.0, 2), 50.0, 1.0);
}

TEST(OnlineRidgeTest, EqualsTheBatchWeightedRidgeWithForgetting) {
  ExpectEqualsBatch(MakeStream(500, 2.0, 3), 1.0, 0.97);
  ExpectEqualsBatch(MakeStream(500, 0.5, 4), 10.0, 0.9);
}

TEST(OnlineRidgeTest, ARelativeRidgeEqualsTheBatchRidgeOfAlphaGrowingWithW) {
  // alpha = 1 + 0.05 W: 16 at 300 samples; with forgetting W tends to
  // 1 / (1 - f).
  ExpectEqualsBatch(MakeStream(300, 2.0, 11), 1.0, 1.0, 0.05);
  ExpectEqualsBatch(MakeStream(500, 2.0, 12), 2.0, 0.97, 0.3);
  // It shrinks the slopes: by 1 / (1 + relative_ridge) for uncorrelated
  // standardized inputs, whatever the count.
  const Stream s = MakeStream(20000, 0.0, 13);
  const OnlineRidge shrunk = Learn(s, 1e-9, 1.0, 0.25);
  EXPECT_NEAR(shrunk.slope(0, 0), 1.0 / 1.25, 0.03);
  EXPECT_NEAR(shrunk.slope(2, 1), 6.0 / 1.25, 0.1);
}

// Inputs along a line, x_1 = x_0 + 0.03 noise (and two free inputs), and
// y = x_0 + x_1 + noise: the direction across the line, u = (-1, 1) / sqrt 2,
// was barely moved in (variance 4.5e-4 against 2 along it), so least
// squares fits its slope to the noise, while the truth has none there.
Stream AlongALine(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    const double along = normal(random);
    std::vector<double> x = {along, along + 0.03 * normal(random),
                             normal(random), normal(random)};
    const double y = x[0] + x[1] + normal(random);
    s.x.push_back(x);
    s.y.push_back({y, y});
  }
  return s;
}

TEST(OnlineRidgeTest, ARelativeRidgeDoesNotExtrapolateAcrossAPathNeverLeft) {
  // Off the line at (1, -1), 1.41 along u, the truth is 0. With a fading
  // ridge the slope along u is noise of sd 1 / (sqrt(n) 0.021) = 0.47 at
  // n = 10^4 (the ridge of 1 weighs as one sample against the 4.5 that u's
  // variance adds up to), so the prediction there is off by 0.53 on
  // average; a relative ridge of 0.01 (alpha = 101 against those 4.5)
  // shrinks it 24-fold.
  const std::vector<double> off_the_line = {1.0, -1.0, 0.0, 0.0};
  const std::vector<double> on_the_line = {1.0, 1.0, 0.0, 0.0};
  double fading_error = 0.0;
  double relative_error = 0.0;
  constexpr int kStreams = 8;
  for (int seed = 0; seed < kStreams; ++seed) {
    const Stream s = AlongALine(10000, 20 + seed);
    const OnlineRidge fading = Learn(s, 1.0, 1.0);
    const OnlineRidge relative = Learn(s, 1.0, 1.0, 0.01);
    fading_error += std::abs(Predict(fading, off_the_line)[0]);
    relative_error += std::abs(Predict(relative, off_the_line)[0]);
    // On the line both fit: at (1, 1), y = 2 (shrunk by 0.5%).
    EXPECT_NEAR(Predict(fading, on_the_line)[0], 2.0, 0.05);
    EXPECT_NEAR(Predict(relative, on_the_line)[0], 2.0, 0.05);
  }
  EXPECT_GT(fading_error / kStreams, 0.25);
  EXPECT_LT(relative_error / kStreams, 0.08);
}

TEST(OnlineRidgeTest, ForgettingFollowsAChangedPlant) {
  // 400 samples of one plane, then 400 of its negative: with f = 0.98 the
  // weight of the first part is 0.98^400 ~ 3e-4 of the whole, so the fit
  // is the new plane; without forgetting it is about neither.
  Stream s = MakeStream(800, 0.0, 5);
  for (std::size_t i = 400; i < 800; ++i) {
    for (double& y : s.y[i]) y = -y;
  }
  const OnlineRidge forgetting = Learn(s, 1e-9, 0.98);
  const OnlineRidge plain = Learn(s, 1e-9, 1.0);
  EXPECT_NEAR(forgetting.slope(0, 0), -1.0, 1e-2);
  EXPECT_NEAR(forgetting.slope(2, 1), -6.0, 5e-2);
  EXPECT_GT(std::abs(plain.slope(0, 0) + 1.0), 0.5);
}

TEST(OnlineRidgeTest, RecoversAPlaneExactly) {
  const OnlineRidge model = Learn(MakeStream(200, 0.0, 6), 1e-12, 1.0);
  const double want[kDim] = {1.0, -2.0, 3.0, 0.0};
  for (std::size_t t = 0; t < kTargets; ++t) {
    for (std::size_t j = 0; j < kDim; ++j) {
      EXPECT_NEAR(model.slope(j, t), static_cast<double>(t + 1) * want[j],
                  1e-8);
    }
    EXPECT_NEAR(model.ResidualScale(t), 0.0, 1e-6);
  }
  // It extrapolates: far outside the inputs seen.
  const std::vector<double> far = {100.0, -50.0, 30.0, 7.0};
  const std::vector<double> got = Predict(model, far);
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_NEAR(got[t], static_cast<double>(t) + (t + 1.0) * 290.0, 1e-5);
  }
}

TEST(OnlineRidgeTest, AnInputThatNeverVariesGetsNoSlope) {
  const Stream s = MakeStream(200, 1.0, 7, /*constant=*/1);
  const OnlineRidge model = Learn(s, 1.0, 1.0);
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_EQ(model.slope(1, t), 0.0);
    EXPECT_TRUE(std::isfinite(model.slope(0, t)));
  }
  ExpectEqualsBatch(s, 1.0, 1.0);
}

TEST(OnlineRidgeTest, FirstSamples) {
  OnlineRidge model(kDim, kTargets, 1.0, 1.0);
  EXPECT_EQ(Predict(model, {1, 2, 3, 4}), std::vector<double>(kTargets, 0.0));
  EXPECT_EQ(model.ResidualScale(0), 0.0);
  model.Add(std::vector<double>{1, 2, 3, 4}, std::vector<double>{7, -1});
  // One sample: the mean, wherever the query is.
  EXPECT_EQ(Predict(model, {9, 9, 9, 9}), (std::vector<double>{7, -1}));
  EXPECT_EQ(model.ResidualScale(1), 0.0);
  EXPECT_EQ(model.weight(), 1.0);
  std::vector<double> residual(kTargets);
  model.Residual(std::vector<double>{0, 0, 0, 0}, std::vector<double>{8, 1},
                 residual);
  EXPECT_EQ(residual, (std::vector<double>{1, 2}));
}

// GLML's density direction -Sigma_x^{-1} (x - mu) of the weighted
// Gaussian, Sigma_x regularized as the slope's system (+ alpha diag(s^2) /
// W), against the batch weighted covariance solved by QR.
TEST(OnlineRidgeTest, TheDensityDirectionIsThatOfTheWeightedGaussian) {
  const Stream s = MakeStream(300, 0.1, 21);
  for (const auto& [forgetting, relative_ridge] :
       {std::pair{1.0, 0.0}, std::pair{0.99, 0.0}, std::pair{0.99, 0.1}}) {
    const double ridge = 0.5;
    const OnlineRidge model = Learn(s, ridge, forgetting, relative_ridge);
    const std::size_t n = s.x.size();
    Eigen::VectorXd w(n);
    for (std::size_t i = 0; i < n; ++i) {
      w(i) = std::pow(forgetting, static_cast<double>(n - 1 - i));
    }
    const double total = w.sum();
    const double alpha = ridge + relative_ridge * total;
    Eigen::MatrixXd x(n, kDim);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < kDim; ++j) x(i, j) = s.x[i][j];
    }
    const Eigen::VectorXd mean = x.transpose() * w / total;
    const Eigen::MatrixXd centred = x.rowwise() - mean.transpose();
    Eigen::MatrixXd covariance =
        centred.transpose() * w.asDiagonal() * centred / total;
    for (std::size_t j = 0; j < kDim; ++j) {
      covariance(j, j) *= 1.0 + alpha / total;
    }
    const std::vector<double> query = {0.5, -1.0, 2.0, 0.0};
    const Eigen::VectorXd expected = -covariance.householderQr().solve(
        Eigen::Map<const Eigen::VectorXd>(query.data(), kDim) - mean);
    std::vector<double> direction(kDim);
    model.DensityDirection(query, direction);
    for (std::size_t j = 0; j < kDim; ++j) {
      EXPECT_NEAR(direction[j], expected(j), 1e-9 * expected.norm())
          << "forgetting " << forgetting << " input " << j;
    }
  }
  // Before two samples: zero.
  OnlineRidge empty(kDim, kTargets, 1.0, 1.0);
  std::vector<double> direction(kDim, 7.0);
  empty.DensityDirection(std::vector<double>(kDim, 1.0), direction);
  EXPECT_EQ(direction, std::vector<double>(kDim, 0.0));
}

TEST(OnlineRidgeTest, SaveAndLoadContinueBitForBit) {
  const Stream s = MakeStream(300, 1.0, 8);
  OnlineRidge original(kDim, kTargets, 2.0, 0.99);
  for (std::size_t i = 0; i < 150; ++i) original.Add(s.x[i], s.y[i]);
  std::string bytes;
  ByteWriter writer(&bytes);
  original.Save(writer);
  OnlineRidge restored(kDim, kTargets, 1.0, 1.0);
  ByteReader reader(bytes);
  ASSERT_TRUE(restored.Load(reader));
  for (std::size_t i = 150; i < 300; ++i) {
    original.Add(s.x[i], s.y[i]);
    restored.Add(s.x[i], s.y[i]);
  }
  for (const std::vector<double>& x : s.x) {
    EXPECT_EQ(Predict(original, x), Predict(restored, x));
  }
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_EQ(original.ResidualScale(t), restored.ResidualScale(t));
  }
  OnlineRidge other_shape(kDim + 1, kTargets, 1.0, 1.0);
  ByteReader again(bytes);
  EXPECT_FALSE(other_shape.Load(again));
}

}  // namespace
}  // namespace streamreg
