// The gradient estimator against the papers' definition evaluated
// directly: f_{n,h} at x + t e_i and x - t e_i from every sample, their
// difference over 2t, and the event A_{n,i} (both balls hold samples).
#include "core/metric/gradient_estimator.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/metric/batch_gradients.h"
#include "gtest/gtest.h"
#include "tests/support/local_linear_reference.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 4;
constexpr std::size_t kTargets = 3;

struct Samples {
  std::vector<double> x, y;
  std::size_t size() const { return y.size() / kTargets; }
};

Samples RandomSamples(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  Samples s;
  for (std::size_t j = 0; j < n; ++j) {
    double row[kDim];
    for (double& v : row) {
      v = normal(random);
      s.x.push_back(v);
    }
    s.y.push_back(std::sin(row[0]) + 2.0 * row[1]);
    s.y.push_back(row[2] * row[3]);
    s.y.push_back(normal(random));  // pure noise
  }
  return s;
}

// f_{n,h}(point) for every target, directly; returns false when no sample
// has positive weight (A fails).
bool DirectKernelEstimate(const Samples& s, Kernel kernel, double h,
                          const std::vector<double>& point, double* out) {
  double total = 0.0;
  double sums[kTargets] = {};
  for (std::size_t j = 0; j < s.size(); ++j) {
    double squared = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      const double d = point[i] - s.x[j * kDim + i];
      squared += d * d;
    }
    const double w = KernelWeight(kernel, std::sqrt(squared) / h);
    total += w;
    for (std::size_t t = 0; t < kTargets; ++t) {
      sums[t] += w * s.y[j * kTargets + t];
    }
  }
  if (total <= 0.0) return false;
  for (std::size_t t = 0; t < kTargets; ++t) out[t] = sums[t] / total;
  return true;
}

TEST(GradientEstimatorTest, EqualsTheDefinitionForEveryCoordinateAndTarget) {
  const Samples s = RandomSamples(600, 5);
  // Estimate at points that are not samples (as online, where a sample's
  // estimate comes before it is stored); with t < h a stored sample would
  // lie in both of its own balls.
  const Samples queries = RandomSamples(60, 6);
  std::vector<std::uint64_t> ids(s.size());
  for (std::size_t j = 0; j < ids.size(); ++j) ids[j] = j;
  const CoverTree tree = *CoverTree::Build(kDim, s.x, ids);
  const TargetLookup lookup = [&](std::uint64_t id) {
    return s.y.data() + id * kTargets;
  };
  GradientEstimator estimator(kDim, kTargets);
  NeighborScratch scratch;
  GradientEstimate estimate;
  std::size_t counted = 0, not_counted = 0;
  for (Kernel kernel :
       {Kernel::kBox, Kernel::kEpanechnikov, Kernel::kTruncatedGaussian}) {
    for (double h : {0.1, 0.3, 0.8, 1.5}) {
      const double t = h / 2;
      for (std::size_t j = 0; j < queries.size(); ++j) {
        const std::vector<double> x(queries.x.begin() + j * kDim,
                                    queries.x.begin() + (j + 1) * kDim);
        EstimateGradientAt(tree, x, lookup, kernel, h, t, &estimator, &scratch,
                           &estimate);
        for (std::size_t i = 0; i < kDim; ++i) {
          std::vector<double> plus = x, minus = x;
          plus[i] += t;
          minus[i] -= t;
          double f_plus[kTargets], f_minus[kTargets];
          const bool a = DirectKernelEstimate(s, kernel, h, plus, f_plus) &&
                         DirectKernelEstimate(s, kernel, h, minus, f_minus);
          ASSERT_EQ(static_cast<bool>(estimate.counted[i]), a)
              << "sample " << j << " coordinate " << i << " h " << h;
          (a ? counted : not_counted)++;
          for (std::size_t k = 0; k < kTargets; ++k) {
            const double expected = a ? (f_plus[k] - f_minus[k]) / (2 * t) : 0;
            EXPECT_NEAR(estimate.delta[i * kTargets + k], expected, 1e-9);
          }
        }
      }
    }
  }
  // Both outcomes of A_{n,i} were exercised.
  EXPECT_GT(counted, 100u);
  EXPECT_GT(not_counted, 10u);
}

// kLocalLinear: per target, the slope of the ridge plane over every sample
// within h + t of x, solved here by QR of the augmented system (not the
// normal equations the estimator solves); every coordinate counted once two
// samples are there.
TEST(GradientEstimatorTest, LocalLinearSlopesAreTheRidgePlaneWithinHPlusT) {
  const Samples s = RandomSamples(600, 7);
  const Samples queries = RandomSamples(40, 8);
  std::vector<std::uint64_t> ids(s.size());
  for (std::size_t j = 0; j < ids.size(); ++j) ids[j] = j;
  const CoverTree tree = *CoverTree::Build(kDim, s.x, ids);
  const TargetLookup lookup = [&](std::uint64_t id) {
    return s.y.data() + id * kTargets;
  };
  GradientEstimator estimator(kDim, kTargets,
                              GradientEstimatorKind::kLocalLinear, 0.5);
  NeighborScratch scratch;
  GradientEstimate estimate;
  std::size_t fitted = 0, too_few = 0;
  for (double h : {0.2, 0.8, 1.5}) {
    const double t = h / 2;
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const std::vector<double> x(queries.x.begin() + q * kDim,
                                  queries.x.begin() + (q + 1) * kDim);
      EstimateGradientAt(tree, x, lookup, Kernel::kBox, h, t, &estimator,
                         &scratch, &estimate);
      std::vector<std::vector<double>> offsets;
      std::vector<std::vector<double>> y(kTargets);
      for (std::size_t j = 0; j < s.size(); ++j) {
        std::vector<double> offset(kDim);
        double squared = 0.0;
        for (std::size_t i = 0; i < kDim; ++i) {
          offset[i] = s.x[j * kDim + i] - x[i];
          squared += offset[i] * offset[i];
        }
        if (!(squared < (h + t) * (h + t))) continue;
        offsets.push_back(std::move(offset));
        for (std::size_t k = 0; k < kTargets; ++k) {
          y[k].push_back(s.y[j * kTargets + k]);
        }
      }
      const bool fits = offsets.size() >= 2;
      (fits ? fitted : too_few)++;
      for (std::size_t k = 0; k < kTargets; ++k) {
        const Eigen::VectorXd theta =
            fits ? LocalLinearSystemByQr(offsets, y[k], 0.5).theta
                 : Eigen::VectorXd::Zero(kDim + 1);
        for (std::size_t i = 0; i < kDim; ++i) {
          ASSERT_EQ(static_cast<bool>(estimate.counted[i]), fits);
          EXPECT_NEAR(estimate.delta[i * kTargets + k], theta(i + 1), 1e-9)
              << "query " << q << " h " << h << " target " << k;
        }
      }
    }
  }
  EXPECT_GT(fitted, 60u);
  EXPECT_GT(too_few, 0u);
}

// On a plane y = c + g^T x the slope is g (a ridge of 1e-12: exact to
// rounding), wherever two or more samples are near.
TEST(GradientEstimatorTest, LocalLinearSlopesOfAPlaneAreItsGradient) {
  std::mt19937_64 random(9);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const double g[kDim] = {0.5, -2.0, 0.0, 3.0};
  std::vector<double> x, y;
  for (int j = 0; j < 300; ++j) {
    double value = 1.5;
    for (std::size_t i = 0; i < kDim; ++i) {
      x.push_back(uniform(random));
      value += g[i] * x.back();
    }
    for (std::size_t k = 0; k < kTargets; ++k) y.push_back((k + 1) * value);
  }
  GradientEstimator estimator(kDim, kTargets,
                              GradientEstimatorKind::kLocalLinear, 1e-12);
  GradientEstimate estimate;
  const std::vector<double> at = {0.1, -0.2, 0.3, 0.0};
  estimator.Begin(at, Kernel::kBox, 0.6, 0.3);
  for (int j = 0; j < 300; ++j) {
    estimator.Add(&x[j * kDim], &y[j * kTargets]);
  }
  estimator.Finish(&estimate);
  for (std::size_t i = 0; i < kDim; ++i) {
    ASSERT_TRUE(estimate.counted[i]);
    for (std::size_t k = 0; k < kTargets; ++k) {
      EXPECT_NEAR(estimate.delta[i * kTargets + k], (k + 1) * g[i], 1e-6);
    }
  }
}

// The sums as written: each sample, in the order given, added to each ball
// it lies in (the estimator before it formed them coordinate by coordinate).
GradientEstimate SampleBySample(const Samples& s, const std::vector<double>& x,
                                Kernel kernel, double h, double t) {
  std::vector<double> weight(2 * kDim, 0.0), sums(2 * kDim * kTargets, 0.0);
  for (std::size_t j = 0; j < s.size(); ++j) {
    double difference[kDim], squared = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      difference[i] = x[i] - s.x[j * kDim + i];
      squared += difference[i] * difference[i];
    }
    const double base = squared + t * t;
    for (std::size_t i = 0; i < kDim; ++i) {
      for (std::size_t side = 0; side < 2; ++side) {
        const double cross = 2.0 * t * difference[i];
        const double u_squared =
            (side == 0 ? base + cross : base - cross) * (1.0 / (h * h));
        if (!(u_squared < 1.0)) continue;
        const double w = KernelWeightOfSquare(kernel, u_squared);
        weight[2 * i + side] += w;
        for (std::size_t k = 0; k < kTargets; ++k) {
          sums[(2 * i + side) * kTargets + k] += w * s.y[j * kTargets + k];
        }
      }
    }
  }
  GradientEstimate out;
  out.delta.assign(kDim * kTargets, 0.0);
  out.counted.assign(kDim, 0);
  for (std::size_t i = 0; i < kDim; ++i) {
    if (!(weight[2 * i] > 0.0 && weight[2 * i + 1] > 0.0)) continue;
    out.counted[i] = 1;
    for (std::size_t k = 0; k < kTargets; ++k) {
      out.delta[i * kTargets + k] =
          (sums[2 * i * kTargets + k] / weight[2 * i] -
           sums[(2 * i + 1) * kTargets + k] / weight[2 * i + 1]) /
          (2.0 * t);
    }
  }
  return out;
}

// Forming the sums coordinate by coordinate changes no bit of the result.
TEST(GradientEstimatorTest, EqualsTheSampleBySampleSumsBitForBit) {
  const Samples s = RandomSamples(400, 11);
  const Samples queries = RandomSamples(30, 12);
  GradientEstimator estimator(kDim, kTargets);
  GradientEstimate estimate;
  for (Kernel kernel : {Kernel::kBox, Kernel::kTriangular,
                        Kernel::kEpanechnikov, Kernel::kTruncatedGaussian}) {
    for (double h : {0.2, 0.7, 1.6}) {
      const double t = 0.5 * h;
      for (std::size_t q = 0; q < queries.size(); ++q) {
        const std::vector<double> x(queries.x.begin() + q * kDim,
                                    queries.x.begin() + (q + 1) * kDim);
        estimator.Begin(x, kernel, h, t);
        for (std::size_t j = 0; j < s.size(); ++j) {
          estimator.Add(s.x.data() + j * kDim, s.y.data() + j * kTargets);
        }
        estimator.Finish(&estimate);
        const GradientEstimate expected = SampleBySample(s, x, kernel, h, t);
        ASSERT_EQ(estimate.counted, expected.counted) << "query " << q;
        ASSERT_EQ(estimate.delta, expected.delta) << "query " << q;
      }
    }
  }
}

// Each target's sums are its own: nine targets (three copies of the
// three, past the widths kept in registers) give each copy the three-target
// estimate, bit for bit.
TEST(GradientEstimatorTest, ManyTargetsSumEachAsAlone) {
  const Samples s = RandomSamples(300, 13);
  const Samples queries = RandomSamples(10, 14);
  constexpr std::size_t kCopies = 3;
  std::vector<double> wide;
  for (std::size_t j = 0; j < s.size(); ++j) {
    for (std::size_t c = 0; c < kCopies; ++c) {
      wide.insert(wide.end(), s.y.begin() + j * kTargets,
                  s.y.begin() + (j + 1) * kTargets);
    }
  }
  GradientEstimator narrow_estimator(kDim, kTargets);
  GradientEstimator wide_estimator(kDim, kCopies * kTargets);
  GradientEstimate narrow, estimate;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const std::vector<double> x(queries.x.begin() + q * kDim,
                                queries.x.begin() + (q + 1) * kDim);
    narrow_estimator.Begin(x, Kernel::kEpanechnikov, 0.9, 0.45);
    wide_estimator.Begin(x, Kernel::kEpanechnikov, 0.9, 0.45);
    for (std::size_t j = 0; j < s.size(); ++j) {
      narrow_estimator.Add(s.x.data() + j * kDim, s.y.data() + j * kTargets);
      wide_estimator.Add(s.x.data() + j * kDim,
                         wide.data() + j * kCopies * kTargets);
    }
    narrow_estimator.Finish(&narrow);
    wide_estimator.Finish(&estimate);
    ASSERT_EQ(estimate.counted, narrow.counted);
    for (std::size_t i = 0; i < kDim; ++i) {
      for (std::size_t c = 0; c < kCopies; ++c) {
        for (std::size_t k = 0; k < kTargets; ++k) {
          ASSERT_EQ(estimate.delta[(i * kCopies + c) * kTargets + k],
                    narrow.delta[i * kTargets + k])
              << "query " << q << " coordinate " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace streamreg
