// The growth refresh's batch statistics (core/metric/gradient_refresh.h):
// a refresh capped at max_points estimates gradients at an even stride of
// the samples, each estimate made from all of them (the same AddBatchGradients
// over a tree of every sample), and its sums stand for every sample; the
// capped mean stays close to the mean over every sample.
#include "core/metric/gradient_refresh.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/metric/batch_gradients.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 3;

// x uniform on [0, 1]^3, y = sin(pi x_0) + sin(pi x_1 / 2); x_2 is
// irrelevant.
struct SineData {
  PointSet x;
  std::vector<double> y;
};

SineData MakeSineData(std::size_t n) {
  SineData data{UniformPoints(n, kDim, 11), {}};
  for (std::size_t s = 0; s < n; ++s) {
    const std::span<const double> x = data.x.point(s);
    data.y.push_back(std::sin(std::numbers::pi * x[0]) +
                     std::sin(std::numbers::pi / 2 * x[1]));
  }
  return data;
}

GradientRefresh::Job SineJob(std::size_t n, std::size_t max_points) {
  GradientRefresh::Job job{MetricTransform::Standardizing(
      std::vector<double>(kDim, 0.0), std::vector<double>(kDim, 1.0))};
  job.kernel = Kernel::kBox;
  job.bandwidth = 0.15;
  job.step = 0.075;
  job.estimator = GradientEstimatorKind::kFiniteDifferences;
  job.num_targets = 1;
  job.outer_products = true;
  job.num_slots = n;
  job.max_points = max_points;
  return job;
}

GradientRefresh::Rows RowsOf(const SineData& data) {
  GradientRefresh::Rows rows;
  rows.copy = [&data](std::size_t begin, std::size_t end,
                      std::vector<double>* x, std::vector<double>* y) {
    for (std::size_t s = begin; s < end; ++s) {
      const std::span<const double> point = data.x.point(s);
      x->insert(x->end(), point.begin(), point.end());
      if (y != nullptr) y->push_back(data.y[s]);
    }
  };
  return rows;
}

TEST(GradientRefreshTest, EvaluatesAnEvenStrideOfAtMostMaxPoints) {
  auto slots = [](std::size_t n, std::size_t max_points) {
    return GradientRefresh::EvaluatedSlots(SineJob(n, max_points));
  };
  EXPECT_EQ(slots(5, 0), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(slots(64, 64).size(), 64u);
  // 100 samples, at most 64: every second one.
  const std::vector<std::uint64_t> strided = slots(100, 64);
  ASSERT_EQ(strided.size(), 50u);
  for (std::size_t j = 0; j < strided.size(); ++j) EXPECT_EQ(strided[j], 2 * j);
  // 1000 at most 300: every fourth, 250 of them.
  EXPECT_EQ(slots(1000, 300).size(), 250u);
  EXPECT_EQ(slots(1000, 300).back(), 996u);
  EXPECT_TRUE(slots(0, 64).empty());
}

TEST(GradientRefreshTest, AStrideEstimatesAtItsPointsFromEverySample) {
  constexpr std::size_t kSamples = 3000, kPoints = 500;
  const SineData data = MakeSineData(kSamples);
  const GradientRefresh::Job job = SineJob(kSamples, kPoints);
  const GradientStatistics strided = GradientRefresh::Run(job, RowsOf(data));

  // The reference: the papers' estimates at slots 0, 6, 12, ... from a tree
  // of all 3000 samples.
  std::vector<std::uint64_t> ids(kSamples);
  for (std::size_t s = 0; s < kSamples; ++s) ids[s] = s;
  absl::StatusOr<CoverTree> tree =
      CoverTree::Build(kDim, data.x.coordinates, ids);
  ASSERT_TRUE(tree.ok());
  std::vector<std::uint64_t> every_sixth;
  for (std::size_t s = 0; s < kSamples; s += 6) every_sixth.push_back(s);
  ASSERT_EQ(GradientRefresh::EvaluatedSlots(job), every_sixth);
  GradientStatistics reference(kDim, 1, /*outer_products=*/true);
  AddBatchGradients(
      *tree, every_sixth, [&](std::uint64_t id) { return &data.y[id]; },
      job.kernel, job.bandwidth, job.step, job.estimator, &reference);

  // Its sums stand for all 3000 samples: six times the reference's...
  EXPECT_DOUBLE_EQ(strided.count(), kSamples);
  EXPECT_DOUBLE_EQ(reference.count(), kSamples / 6);
  for (std::size_t i = 0; i < kDim; ++i) {
    EXPECT_NEAR(strided.counted(i), 6 * reference.counted(i), 1e-9);
  }
  // ...and its means are the reference's.
  const std::vector<double> w = strided.GradientWeights(0);
  const std::vector<double> w_reference = reference.GradientWeights(0);
  const std::vector<double> egop = strided.Egop(0);
  const std::vector<double> egop_reference = reference.Egop(0);
  for (std::size_t i = 0; i < kDim; ++i) {
    EXPECT_NEAR(w[i], w_reference[i], 1e-12 * (1 + w_reference[i]));
  }
  for (std::size_t k = 0; k < egop.size(); ++k) {
    EXPECT_NEAR(egop[k], egop_reference[k],
                1e-12 * (1 + std::abs(egop_reference[k])));
  }

  // Against the mean over every sample: E|df/dx_0| = 2, E|df/dx_1| = 1,
  // and the estimates of 500 points agree with those of 3000 within 10%.
  const std::vector<double> w_all =
      GradientRefresh::Run(SineJob(kSamples, 0), RowsOf(data))
          .GradientWeights(0);
  EXPECT_GT(w[0], w[1]);
  EXPECT_GT(w[1], w[2]);
  EXPECT_NEAR(w[0], w_all[0], 0.1 * w_all[0]);
  EXPECT_NEAR(w[1], w_all[1], 0.1 * w_all[1]);
  EXPECT_LT(w[2], 0.35 * w[1]);
}

}  // namespace
}  // namespace streamreg
