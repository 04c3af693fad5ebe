// The random-feature ridge against its definition: once solved, equal to
// the batch weighted ridge over the same features solved independently
// (Householder QR of the design with the penalty's rows), with and without
// forgetting, whenever it was solved before; its variance equal to
// phi^T A^-1 phi; its features approximating the Gaussian kernel; its
// noise estimate; determinism and snapshots, and the square-root format of
// older snapshots converted.
#include "core/regression/random_feature_ridge.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "Eigen/Dense"
#include "core/regression/random_feature_sums.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

struct Stream {
  std::vector<std::vector<double>> z;
  std::vector<std::vector<double>> y;
};

// y_0 = sin(2 z_0) + z_1, y_1 = z_0 z_2 - 1, plus noise.
Stream MakeStream(std::size_t n, double noise, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> z(kDim);
    for (double& v : z) v = normal(random);
    s.y.push_back({std::sin(2 * z[0]) + z[1] + noise * normal(random),
                   z[0] * z[2] - 1 + noise * normal(random)});
    s.z.push_back(std::move(z));
  }
  return s;
}

RandomFeatureRidge::Options SmallOptions(double forgetting) {
  return {.num_frequencies = 12,
          .lengthscale = 0.8,
          .ridge = 0.05,
          .linear_ridge = 0.5,
          .intercept_ridge = 1e-3,
          .forgetting = forgetting,
          .seed = 7};
}

// The batch solution: W minimizing sum_i v_i |y_i - W^T phi_i|^2 +
// forgetting^n sum_j r_j |W_j|^2, by QR of [sqrt(v) Phi; sqrt(f^n r)].
struct Batch {
  Eigen::MatrixXd weights;
  Eigen::MatrixXd information;  // Phi^T V Phi + f^n diag(r)
};
Batch SolveBatch(const RandomFeatureRidge& model, const Stream& s,
                 const RandomFeatureRidge::Options& o) {
  const std::size_t n = s.z.size();
  const std::size_t f = model.num_features();
  Eigen::MatrixXd design(n + f, f);
  Eigen::MatrixXd targets = Eigen::MatrixXd::Zero(n + f, kTargets);
  std::vector<double> phi(f);
  for (std::size_t i = 0; i < n; ++i) {
    model.Features(s.z[i], phi);
    const double root_weight =
        std::sqrt(std::pow(o.forgetting, static_cast<double>(n - 1 - i)));
    for (std::size_t j = 0; j < f; ++j) design(i, j) = root_weight * phi[j];
    for (std::size_t t = 0; t < kTargets; ++t) {
      targets(i, t) = root_weight * s.y[i][t];
    }
  }
  const double fade = std::pow(o.forgetting, static_cast<double>(n));
  design.bottomRows(f).setZero();
  for (std::size_t j = 0; j < f; ++j) {
    const double ridge = j == 0         ? o.intercept_ridge
                         : j < 1 + kDim ? o.linear_ridge
                                        : o.ridge;
    design(n + j, j) = std::sqrt(fade * ridge);
  }
  return {design.householderQr().solve(targets), design.transpose() * design};
}

class RandomFeatureRidgeTest : public ::testing::TestWithParam<double> {};

TEST_P(RandomFeatureRidgeTest, EqualsTheBatchRidgeOverTheSameFeatures) {
  const RandomFeatureRidge::Options options = SmallOptions(GetParam());
  RandomFeatureRidge model(kDim, kTargets, options);
  const Stream train = MakeStream(400, 0.1, 1);
  for (std::size_t i = 0; i < train.z.size(); ++i) {
    model.Add(train.z[i], train.y[i]);
  }
  // 400 samples: six whole blocks of the sums and part of a seventh.
  ASSERT_TRUE(model.Solve());
  EXPECT_EQ(model.solved_at(), 400u);
  const Batch batch = SolveBatch(model, train, options);
  const Eigen::LDLT<Eigen::MatrixXd> information(batch.information);
  const Stream queries = MakeStream(50, 0.0, 2);
  std::vector<double> phi(model.num_features());
  std::vector<double> predicted(kTargets);
  for (const std::vector<double>& z : queries.z) {
    model.Predict(z, predicted);
    model.Features(z, phi);
    const Eigen::VectorXd features =
        Eigen::Map<const Eigen::VectorXd>(phi.data(), phi.size());
    const Eigen::VectorXd expected = batch.weights.transpose() * features;
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(predicted[t], expected[t],
                  1e-8 * (1 + std::abs(expected[t])));
    }
    const double variance = features.dot(information.solve(features));
    EXPECT_NEAR(model.RelativeVariance(z), variance, 1e-8 * variance);
  }
  EXPECT_NEAR(model.weight(),
              GetParam() == 1.0
                  ? 400.0
                  : (1 - std::pow(GetParam(), 400)) / (1 - GetParam()),
              1e-9);
}

TEST_P(RandomFeatureRidgeTest, FromSumsEqualsLearningInOrder) {
  const RandomFeatureRidge::Options options = SmallOptions(GetParam());
  const Stream train = MakeStream(500, 0.1, 12);
  RandomFeatureRidge in_order(kDim, kTargets, options);
  RandomFeatureSums sums(in_order.predictor(), options.forgetting);
  for (std::size_t i = 0; i < 300; ++i) {
    in_order.Add(train.z[i], train.y[i]);
    sums.Add(train.z[i], train.y[i]);
  }
  RandomFeatureRidge batch = RandomFeatureRidge::FromSums(sums, options);
  EXPECT_DOUBLE_EQ(batch.weight(), in_order.weight());
  // And both go on learning alike.
  // Its noise estimate starts from the in-sample residuals.
  std::vector<double> fit(kTargets);
  for (std::size_t t = 0; t < kTargets; ++t) {
    double squares = 0.0;
    for (std::size_t i = 0; i < 300; ++i) {
      batch.Predict(train.z[i], fit);
      squares += std::pow(options.forgetting, 299.0 - static_cast<double>(i)) *
                 std::pow(train.y[i][t] - fit[t], 2);
    }
    EXPECT_NEAR(batch.NoiseVariance(t), squares / batch.weight(),
                1e-9 * squares / batch.weight());
  }
  ASSERT_TRUE(in_order.Solve());
  for (std::size_t i = 300; i < 500; ++i) {
    in_order.Add(train.z[i], train.y[i]);
    batch.Add(train.z[i], train.y[i]);
  }
  ASSERT_TRUE(in_order.Solve());
  ASSERT_TRUE(batch.Solve());
  const Stream queries = MakeStream(40, 0.0, 13);
  std::vector<double> a(kTargets), b(kTargets);
  for (const std::vector<double>& z : queries.z) {
    in_order.Predict(z, a);
    batch.Predict(z, b);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(b[t], a[t], 1e-8 * (1 + std::abs(a[t])));
    }
    EXPECT_NEAR(batch.RelativeVariance(z), in_order.RelativeVariance(z),
                1e-8 * in_order.RelativeVariance(z));
  }
  // Both solved after 300 and 500 samples: the noise over the last 200,
  // under the same weights.
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_EQ(batch.NoiseVariance(t), in_order.NoiseVariance(t));
  }
}

// When the weights are solved changes nothing but when they are in use:
// sums taken by blocks at fixed counts give the same weights to the bit.
TEST_P(RandomFeatureRidgeTest, SolvingOftenOrOnceGivesTheSameWeights) {
  const RandomFeatureRidge::Options options = SmallOptions(GetParam());
  const Stream train = MakeStream(333, 0.1, 21);
  RandomFeatureRidge often(kDim, kTargets, options);
  RandomFeatureRidge once(kDim, kTargets, options);
  for (std::size_t i = 0; i < train.z.size(); ++i) {
    often.Add(train.z[i], train.y[i]);
    once.Add(train.z[i], train.y[i]);
    if (i % 7 == 3) {
      ASSERT_TRUE(often.Solve());
    }
  }
  ASSERT_TRUE(often.Solve());
  ASSERT_TRUE(once.Solve());
  EXPECT_TRUE(std::equal(often.predictor().weights().begin(),
                         often.predictor().weights().end(),
                         once.predictor().weights().begin()));
  EXPECT_EQ(often.RelativeVariance(train.z[5]),
            once.RelativeVariance(train.z[5]));
}

// A ridge saved by Potter's square-root update (model states before
// version 12: its weight, frequencies, a square root S of P = A^-1, W and
// the noise sums) loads as the ridge over the same samples and goes on
// learning as one that saw them all.
TEST_P(RandomFeatureRidgeTest, TheSquareRootFormatLoadsAsTheSameRidge) {
  const RandomFeatureRidge::Options options = SmallOptions(GetParam());
  const Stream train = MakeStream(500, 0.1, 22);
  const Stream first{{train.z.begin(), train.z.begin() + 300},
                     {train.y.begin(), train.y.begin() + 300}};
  RandomFeatureRidge reference(kDim, kTargets, options);
  const Batch batch = SolveBatch(reference, first, options);
  // S = L^-T Q for A = L L^T and an orthogonal Q: not triangular.
  const Eigen::LLT<Eigen::MatrixXd> information(batch.information);
  const auto f = static_cast<Eigen::Index>(reference.num_features());
  const Eigen::MatrixXd inverse_transpose =
      information.matrixU().solve(Eigen::MatrixXd::Identity(f, f));
  std::mt19937_64 random(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd gaussian(f, f);
  for (Eigen::Index i = 0; i < gaussian.size(); ++i) {
    gaussian.data()[i] = normal(random);
  }
  const Eigen::MatrixXd rotation = gaussian.householderQr().householderQ();
  const Eigen::MatrixXd root = inverse_transpose * rotation;
  const double weight =
      GetParam() == 1.0 ? 300.0
                        : (1 - std::pow(GetParam(), 300)) / (1 - GetParam());
  const std::vector<double> noise_sums = {0.3, 0.7};
  std::string bytes;
  ByteWriter out(&bytes);
  out.U64(kDim);
  out.U64(kTargets);
  out.U64(options.num_frequencies);
  out.Double(options.lengthscale);
  out.Double(options.ridge);
  out.Double(options.linear_ridge);
  out.Double(options.intercept_ridge);
  out.Double(options.forgetting);
  out.U64(options.seed);
  out.Double(weight);
  out.RawDoubles(reference.predictor().frequencies());
  out.RawDoubles({root.data(), static_cast<std::size_t>(root.size())});
  out.RawDoubles(
      {batch.weights.data(), static_cast<std::size_t>(batch.weights.size())});
  out.RawDoubles(noise_sums);
  ByteReader in(bytes);
  std::optional<RandomFeatureRidge> loaded =
      RandomFeatureRidge::Read(in, RidgeFormat::kSquareRoot);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->count(), 300u);
  EXPECT_NEAR(loaded->weight(), weight, 1e-12);
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_NEAR(loaded->NoiseVariance(t), noise_sums[t] / weight, 1e-15);
  }
  const Stream queries = MakeStream(20, 0.0, 23);
  std::vector<double> phi(reference.num_features()), got(kTargets);
  for (const std::vector<double>& z : queries.z) {
    reference.Features(z, phi);
    const Eigen::VectorXd features =
        Eigen::Map<const Eigen::VectorXd>(phi.data(), f);
    const Eigen::VectorXd expected = batch.weights.transpose() * features;
    loaded->Predict(z, got);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(got[t], expected[t], 1e-8 * (1 + std::abs(expected[t])));
    }
    const double variance = features.dot(information.solve(features));
    EXPECT_NEAR(loaded->RelativeVariance(z), variance, 1e-8 * variance);
  }
  // It goes on: the ridge over all 500.
  for (std::size_t i = 300; i < 500; ++i) loaded->Add(train.z[i], train.y[i]);
  ASSERT_TRUE(loaded->Solve());
  const Batch all = SolveBatch(reference, train, options);
  for (const std::vector<double>& z : queries.z) {
    reference.Features(z, phi);
    const Eigen::VectorXd expected =
        all.weights.transpose() *
        Eigen::Map<const Eigen::VectorXd>(phi.data(), f);
    loaded->Predict(z, got);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(got[t], expected[t], 1e-7 * (1 + std::abs(expected[t])));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forgetting, RandomFeatureRidgeTest,
                         ::testing::Values(1.0, 0.99));

TEST(RandomFeatureRidgeFeatures, ApproximateTheGaussianKernel) {
  // With many frequencies the random part's inner product is within a few
  // 1/sqrt(D) of exp(-|z - z'|^2 / (2 l^2)) (its standard deviation is at
  // most 1/sqrt(D), 0.022 here).
  const double lengthscale = 1.5;
  RandomFeatureRidge model(
      kDim, 1, {.num_frequencies = 2048, .lengthscale = lengthscale});
  const Stream points = MakeStream(6, 0.0, 3);
  const std::size_t f = model.num_features();
  std::vector<double> a(f), b(f);
  for (std::size_t i = 0; i < points.z.size(); ++i) {
    for (std::size_t k = i; k < points.z.size(); ++k) {
      model.Features(points.z[i], a);
      model.Features(points.z[k], b);
      double product = 0, squared_distance = 0;
      for (std::size_t j = 1 + kDim; j < f; ++j) product += a[j] * b[j];
      for (std::size_t j = 0; j < kDim; ++j) {
        const double delta = points.z[i][j] - points.z[k][j];
        squared_distance += delta * delta;
      }
      EXPECT_NEAR(product,
                  std::exp(-squared_distance / (2 * lengthscale * lengthscale)),
                  0.08)
          << i << ", " << k;
    }
  }
}

TEST(RandomFeatureRidgeNoise, EstimatesTheNoiseVariance) {
  RandomFeatureRidge model(kDim, kTargets,
                           {.num_frequencies = 48, .lengthscale = 1.0});
  const Stream train = MakeStream(4000, 0.2, 4);
  for (std::size_t i = 0; i < train.z.size(); ++i) {
    model.Add(train.z[i], train.y[i]);
    // Solved as a model's base solves: at a sixteenth's growth.
    if (i + 1 >= model.solved_at() + std::max<std::size_t>(25, i / 16)) {
      ASSERT_TRUE(model.Solve());
    }
  }
  ASSERT_TRUE(model.Solve());
  // The noise is 0.04 in both; the fit's own error adds a little.
  for (std::size_t t = 0; t < kTargets; ++t) {
    EXPECT_GT(model.NoiseVariance(t), 0.035) << t;
    EXPECT_LT(model.NoiseVariance(t), 0.06) << t;
  }
  // And it predicts the functions far better than their variance.
  const Stream test = MakeStream(500, 0.0, 5);
  double squared_error = 0;
  std::vector<double> predicted(kTargets);
  for (std::size_t i = 0; i < test.z.size(); ++i) {
    model.Predict(test.z[i], predicted);
    squared_error += std::pow(predicted[0] - test.y[i][0], 2);
  }
  EXPECT_LT(squared_error / 500, 0.05);
}

TEST(RandomFeatureRidgeState, IsDeterministicAndSnapshotsExactly) {
  const Stream train = MakeStream(100, 0.1, 6);
  RandomFeatureRidge first(kDim, kTargets, SmallOptions(0.995));
  RandomFeatureRidge second(kDim, kTargets, SmallOptions(0.995));
  RandomFeatureRidge::Options other_seed = SmallOptions(0.995);
  other_seed.seed = 8;
  RandomFeatureRidge third(kDim, kTargets, other_seed);
  for (std::size_t i = 0; i < 60; ++i) {
    first.Add(train.z[i], train.y[i]);
    second.Add(train.z[i], train.y[i]);
    third.Add(train.z[i], train.y[i]);
    if (i == 40) {
      first.Solve();
      second.Solve();
      third.Solve();
    }
  }
  std::string bytes;
  ByteWriter out(&bytes);
  first.Save(out);
  RandomFeatureRidge restored(kDim, kTargets, SmallOptions(0.995));
  ByteReader in(bytes);
  ASSERT_TRUE(restored.Load(in));
  RandomFeatureRidge wrong(kDim, kTargets, other_seed);
  ByteReader again(bytes);
  EXPECT_FALSE(wrong.Load(again));
  for (std::size_t i = 60; i < 100; ++i) {
    first.Add(train.z[i], train.y[i]);
    second.Add(train.z[i], train.y[i]);
    third.Add(train.z[i], train.y[i]);
    restored.Add(train.z[i], train.y[i]);
  }
  // The noise of the weights solved at 41 over samples 42-100.
  EXPECT_EQ(first.NoiseVariance(1), restored.NoiseVariance(1));
  for (RandomFeatureRidge* ridge : {&first, &second, &third, &restored}) {
    ASSERT_TRUE(ridge->Solve());
  }
  std::vector<double> a(kTargets), b(kTargets), c(kTargets), r(kTargets);
  first.Predict(train.z[0], a);
  second.Predict(train.z[0], b);
  third.Predict(train.z[0], c);
  restored.Predict(train.z[0], r);
  EXPECT_EQ(a, b);  // bit for bit
  EXPECT_EQ(a, r);
  EXPECT_NE(a, c);
}

TEST(RandomFeatureRidgeState, APredictorCopyStaysWhileTheRidgeLearnsOn) {
  const Stream train = MakeStream(200, 0.1, 9);
  RandomFeatureRidge model(kDim, kTargets, SmallOptions(1.0));
  for (std::size_t i = 0; i < 100; ++i) model.Add(train.z[i], train.y[i]);
  ASSERT_TRUE(model.Solve());
  const RandomFeaturePredictor copy = model.predictor();
  std::vector<double> before(kTargets), from_copy(kTargets);
  model.Predict(train.z[150], before);
  const double variance_before = model.RelativeVariance(train.z[150]);
  for (std::size_t i = 100; i < 200; ++i) model.Add(train.z[i], train.y[i]);
  // Learning changes nothing a prediction uses until the next Solve.
  std::vector<double> unsolved(kTargets);
  model.Predict(train.z[150], unsolved);
  EXPECT_EQ(unsolved, before);
  EXPECT_EQ(model.RelativeVariance(train.z[150]), variance_before);
  ASSERT_TRUE(model.Solve());
  copy.Predict(train.z[150], from_copy);
  EXPECT_EQ(from_copy, before);  // the readers' copy did not move
  std::vector<double> after(kTargets), from_new(kTargets);
  model.Predict(train.z[150], after);
  model.predictor().Predict(train.z[150], from_new);
  EXPECT_EQ(from_new, after);
  EXPECT_NE(after, before);
}

TEST(RandomFeatureRidgeState, PredictsZeroBeforeTheFirstSample) {
  RandomFeatureRidge model(kDim, kTargets, SmallOptions(1.0));
  std::vector<double> out(kTargets, 9.0);
  const std::vector<double> z = {0.5, -1.0, 2.0};
  model.Predict(z, out);
  EXPECT_EQ(out, std::vector<double>(kTargets, 0.0));
  EXPECT_EQ(model.NoiseVariance(0), 0.0);
  // Its variance is the prior's, sum_j phi_j^2 / r_j; so is that of a
  // ridge from empty sums (a rebuild over no stored sample), which saves
  // and loads.
  std::vector<double> phi(model.num_features());
  model.Features(z, phi);
  double prior = 0.0;
  const RandomFeatureRidge::Options o = SmallOptions(1.0);
  for (std::size_t j = 0; j < phi.size(); ++j) {
    const double ridge = j == 0         ? o.intercept_ridge
                         : j < 1 + kDim ? o.linear_ridge
                                        : o.ridge;
    prior += phi[j] * phi[j] / ridge;
  }
  EXPECT_NEAR(model.RelativeVariance(z), prior, 1e-12 * prior);
  const RandomFeatureSums empty(model.predictor(), 1.0);
  const RandomFeatureRidge from_empty =
      RandomFeatureRidge::FromSums(empty, SmallOptions(1.0));
  EXPECT_NEAR(from_empty.RelativeVariance(z), prior, 1e-12 * prior);
  std::string bytes;
  ByteWriter out_bytes(&bytes);
  from_empty.Save(out_bytes);
  ByteReader in(bytes);
  EXPECT_TRUE(RandomFeatureRidge::Read(in).has_value());
}

}  // namespace
}  // namespace streamreg
