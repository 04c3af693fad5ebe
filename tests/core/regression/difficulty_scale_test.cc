// The difficulty scale against its definition: the slopes are the
// non-negative ridge least squares of log(|r| / s + delta) on the features
// u = log(f + offset f_bar), over the whole weighted history (brute force,
// every subset of free slopes); the relative scale is exp(b . (u -
// u_bar)), clamped; a heteroscedastic stream's log-slope is recovered; a
// zero magnitude (a duplicate sample) narrows, never widens; snapshots go
// on exactly; damaged ones are refused.
#include "core/regression/difficulty_scale.h"

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

struct Residual {
  std::vector<double> f;
  double abs_residual;
  double scale;
};

// The log features of the history by their definition: each magnitude's
// log, offset by its forgotten mean over the residuals before it.
std::vector<std::vector<double>> LogFeatures(
    const std::vector<Residual>& history, std::size_t p, double horizon) {
  const double lambda = 1.0 - 1.0 / horizon;
  std::vector<std::vector<double>> u;
  double weight = 0.0;
  std::vector<double> sum_f(p, 0.0);
  for (const Residual& residual : history) {
    std::vector<double> row(p);
    for (std::size_t i = 0; i < p; ++i) {
      const double mean = weight > 0.0 ? sum_f[i] / weight : 0.0;
      row[i] = std::log(residual.f[i] + DifficultyScale::kOffset * mean);
    }
    u.push_back(row);
    weight = lambda * weight + 1.0;
    for (std::size_t i = 0; i < p; ++i) {
      sum_f[i] = lambda * sum_f[i] + residual.f[i];
    }
  }
  return u;
}

// The slopes by their definition, from the weighted history: weights
// lambda^age, the weighted covariances with the ridge on their diagonal,
// then the least objective over the subsets of free slopes whose solution
// is non-negative.
std::vector<double> BruteSlopes(const std::vector<Residual>& history,
                                std::size_t p, double horizon) {
  const double lambda = 1.0 - 1.0 / horizon;
  const std::size_t n = history.size();
  const std::vector<std::vector<double>> u = LogFeatures(history, p, horizon);
  double w = 0.0, v_bar = 0.0;
  Eigen::VectorXd u_bar = Eigen::VectorXd::Zero(p);
  std::vector<double> weights(n), v(n);
  for (std::size_t k = 0; k < n; ++k) {
    weights[k] = std::pow(lambda, static_cast<double>(n - 1 - k));
    v[k] = std::log(history[k].abs_residual / history[k].scale +
                    DifficultyScale::kResidualFloor);
    w += weights[k];
    v_bar += weights[k] * v[k];
    for (std::size_t i = 0; i < p; ++i) u_bar(i) += weights[k] * u[k][i];
  }
  v_bar /= w;
  u_bar /= w;
  Eigen::MatrixXd c = Eigen::MatrixXd::Zero(p, p);
  Eigen::VectorXd r = Eigen::VectorXd::Zero(p);
  for (std::size_t k = 0; k < n; ++k) {
    Eigen::VectorXd du(p);
    for (std::size_t i = 0; i < p; ++i) du(i) = u[k][i] - u_bar(i);
    c += weights[k] * du * du.transpose() / w;
    r += weights[k] * du * (v[k] - v_bar) / w;
  }
  c.diagonal().array() += DifficultyScale::kRelativeRidge * c.trace() / p;
  std::vector<double> best_slopes(p, 0.0);
  double best = 0.0;
  for (std::size_t mask = 1; mask < (std::size_t{1} << p); ++mask) {
    std::vector<Eigen::Index> free;
    for (std::size_t i = 0; i < p; ++i) {
      if (mask >> i & 1) free.push_back(static_cast<Eigen::Index>(i));
    }
    const auto m = static_cast<Eigen::Index>(free.size());
    Eigen::MatrixXd cf(m, m);
    Eigen::VectorXd rf(m);
    for (Eigen::Index a = 0; a < m; ++a) {
      rf(a) = r(free[a]);
      for (Eigen::Index b = 0; b < m; ++b) cf(a, b) = c(free[a], free[b]);
    }
    const Eigen::VectorXd b = cf.ldlt().solve(rf);
    if ((b.array() < 0.0).any()) continue;
    const double objective = b.dot(cf * b) - 2.0 * rf.dot(b);
    if (objective < best) {
      best = objective;
      best_slopes.assign(p, 0.0);
      for (Eigen::Index a = 0; a < m; ++a) best_slopes[free[a]] = b(a);
    }
  }
  return best_slopes;
}

// A stream of magnitudes f_i = exp(uniform(-1, 1)) whose residuals grow as
// prod f_i^growth_i times a standard normal.
std::vector<Residual> Heteroscedastic(std::size_t n,
                                      const std::vector<double>& growth,
                                      unsigned seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Residual> out(n);
  for (Residual& residual : out) {
    double exponent = 0.0;
    for (double g : growth) {
      const double log_f = uniform(random);
      residual.f.push_back(std::exp(log_f));
      exponent += g * log_f;
    }
    residual.abs_residual = std::abs(normal(random)) * std::exp(exponent);
    residual.scale = 0.5 + 0.01 * uniform(random);
  }
  return out;
}

TEST(DifficultyScaleTest, TheSlopesAreTheWeightedNonNegativeLeastSquares) {
  // Three features: one widening, one unrelated, one that narrows (its
  // slope is held at 0).
  const std::vector<Residual> history =
      Heteroscedastic(600, {1.0, 0.0, -0.7}, 3);
  const double horizon = 200.0;
  DifficultyScale scale(2, 3, horizon);
  std::vector<Residual> seen;
  for (const Residual& residual : history) {
    scale.Add(1, residual.f, residual.abs_residual, residual.scale);
    seen.push_back(residual);
    if (seen.size() < 50 || seen.size() % 37 != 0) continue;
    const std::vector<double> expected = BruteSlopes(seen, 3, horizon);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(scale.slopes(1)[i], expected[i], 1e-9)
          << "feature " << i << " after " << seen.size();
    }
  }
  EXPECT_GT(scale.slopes(1)[0], 0.5);
  EXPECT_EQ(scale.slopes(1)[2], 0.0);
  // The other target learned nothing.
  EXPECT_EQ(scale.weight(0), 0.0);
  EXPECT_EQ(scale.Relative(0, std::vector<double>{5.0, 5.0, 5.0}), 1.0);
}

TEST(DifficultyScaleTest, TheRelativeScaleIsTheSlopesFromTheMeanClamped) {
  const std::vector<Residual> history = Heteroscedastic(400, {1.5}, 5);
  const double horizon = 300.0;
  const double lambda = 1.0 - 1.0 / horizon;
  DifficultyScale scale(1, 1, horizon);
  const std::vector<std::vector<double>> u = LogFeatures(history, 1, horizon);
  // The forgotten means of f and u, by definition.
  double weight = 0.0, sum_f = 0.0, sum_u = 0.0;
  for (std::size_t k = 0; k < history.size(); ++k) {
    EXPECT_EQ(scale.Relative(0, std::vector<double>{2.0}) == 1.0,
              scale.weight(0) < DifficultyScale::kMinWeight);
    scale.Add(0, history[k].f, history[k].abs_residual, history[k].scale);
    weight = lambda * weight + 1.0;
    sum_f = lambda * sum_f + history[k].f[0];
    sum_u = lambda * sum_u + u[k][0];
  }
  const double b = scale.slopes(0)[0];
  const double f_bar = sum_f / weight, u_bar = sum_u / weight;
  ASSERT_GT(b, 0.0);
  for (double f : {0.4, 1.0, 1.3, 2.7}) {
    EXPECT_NEAR(
        scale.Relative(0, std::vector<double>{f}),
        std::exp(b * (std::log(f + DifficultyScale::kOffset * f_bar) - u_bar)),
        1e-9);
  }
  EXPECT_EQ(scale.Relative(0, std::vector<double>{1e6}),
            DifficultyScale::kMaxRatio);
  // A duplicate of a stored sample (distance 0) is the easiest prediction:
  // finite, and narrower than typical.
  const double duplicate = scale.Relative(0, std::vector<double>{0.0});
  EXPECT_NEAR(
      duplicate,
      std::max(
          1.0 / DifficultyScale::kMaxRatio,
          std::exp(b * (std::log(DifficultyScale::kOffset * f_bar) - u_bar))),
      1e-9);
  EXPECT_LT(duplicate, 1.0);
  // No neighbour to measure: as far as the scale goes.
  EXPECT_EQ(
      scale.Relative(
          0, std::vector<double>{std::numeric_limits<double>::infinity()}),
      DifficultyScale::kMaxRatio);
}

TEST(DifficultyScaleTest, ItRecoversHowTheErrorGrowsWithTheFeature) {
  // |r| = |N(0, 1)| f: log |r| = log f + log |N(0, 1)|, slope 1 (the
  // offset under f and the floor under |r| / s flatten it a little).
  const std::vector<Residual> history = Heteroscedastic(20000, {1.0}, 7);
  DifficultyScale scale(1, 1, 5000.0);
  for (const Residual& residual : history) {
    scale.Add(0, residual.f, residual.abs_residual, residual.scale);
  }
  EXPECT_GT(scale.slopes(0)[0], 0.8);
  EXPECT_LT(scale.slopes(0)[0], 1.1);
  // Where nothing grows, nothing widens.
  const std::vector<Residual> flat = Heteroscedastic(20000, {0.0}, 8);
  DifficultyScale constant(1, 1, 5000.0);
  for (const Residual& residual : flat) {
    constant.Add(0, residual.f, residual.abs_residual, residual.scale);
  }
  EXPECT_LT(constant.slopes(0)[0], 0.05);
}

TEST(DifficultyScaleTest, InvalidInputsTeachNothing) {
  DifficultyScale scale(1, 2, 100.0);
  const double inf = std::numeric_limits<double>::infinity();
  scale.Add(0, std::vector<double>{inf, 1.0}, 1.0, 1.0);
  scale.Add(0, std::vector<double>{-1.0, 1.0}, 1.0, 1.0);
  scale.Add(0, std::vector<double>{1.0, 1.0}, std::nan(""), 1.0);
  scale.Add(0, std::vector<double>{1.0, 1.0}, 1.0, 0.0);
  // A zero before any positive magnitude has no scale for its log.
  scale.Add(0, std::vector<double>{0.0, 1.0}, 1.0, 1.0);
  EXPECT_EQ(scale.weight(0), 0.0);
}

TEST(DifficultyScaleTest, ASnapshotGoesOnExactly) {
  const std::vector<Residual> history = Heteroscedastic(900, {0.8, 0.4}, 11);
  DifficultyScale original(2, 2, 300.0);
  for (std::size_t k = 0; k < 500; ++k) {
    original.Add(k % 2, history[k].f, history[k].abs_residual,
                 history[k].scale);
  }
  std::string bytes;
  ByteWriter writer(&bytes);
  original.Save(writer);
  ByteReader reader(bytes);
  std::optional<DifficultyScale> restored = DifficultyScale::Load(reader, 2, 2);
  ASSERT_TRUE(restored.has_value());
  for (std::size_t k = 500; k < history.size(); ++k) {
    original.Add(k % 2, history[k].f, history[k].abs_residual,
                 history[k].scale);
    restored->Add(k % 2, history[k].f, history[k].abs_residual,
                  history[k].scale);
    for (std::size_t t = 0; t < 2; ++t) {
      ASSERT_EQ(restored->Relative(t, history[k].f),
                original.Relative(t, history[k].f));
    }
  }
  // Another shape, or a cut or damaged state, is refused.
  ByteReader other(bytes);
  EXPECT_FALSE(DifficultyScale::Load(other, 2, 3).has_value());
  const std::string cut_bytes = bytes.substr(0, bytes.size() - 3);
  ByteReader cut(cut_bytes);
  EXPECT_FALSE(DifficultyScale::Load(cut, 2, 2).has_value());
  std::string damaged = bytes;
  const double negative = -1.0;
  std::memcpy(damaged.data() + 3 * sizeof(std::uint64_t), &negative,
              sizeof negative);  // the first target's weight
  ByteReader bad(damaged);
  EXPECT_FALSE(DifficultyScale::Load(bad, 2, 2).has_value());
}

}  // namespace
}  // namespace streamreg
