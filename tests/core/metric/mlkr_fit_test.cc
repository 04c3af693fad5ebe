// MLKR's fit (core/metric/mlkr_fit.h): on a set where y depends on 2 of 10
// inputs, the fitted map concentrating on those 2 (at full and low rank)
// and predicting held-out points better than the initial one; what it
// cannot fit refused.
#include "core/metric/mlkr_fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/metric/mlkr_objective.h"
#include "gtest/gtest.h"
#include "tests/support/mlkr_data.h"

namespace streamreg {
namespace {

// Nadaraya-Watson predictions of held-out points under A (Gaussian kernel
// of the mapped squared distance, as MLKR's estimate): mean squared error.
double HeldOutError(const Data& train, const Data& test,
                    const std::vector<double>& a, std::size_t rank) {
  double sum = 0.0;
  for (std::size_t i = 0; i < test.n; ++i) {
    std::vector<const double*> xs, ys;
    for (std::size_t j = 0; j < train.n; ++j) {
      xs.push_back(train.x.data() + j * train.d);
      ys.push_back(train.y.data() + j * train.m);
    }
    sum += MlkrPointLoss({test.x.data() + i * test.d, test.d},
                         {test.y.data() + i * test.m, test.m}, xs, ys, a, rank,
                         nullptr);
  }
  return sum / static_cast<double>(test.n * test.m);
}

TEST(MlkrFitTest, TheMapConcentratesOnTheTwoInputsThatMatter) {
  const Data train = MakeData(400, 10, 1, 7);
  const Data test = MakeData(300, 10, 1, 8);
  const std::vector<double> initial = InitialMlkrMap(train.samples());
  MlkrFitOptions options;
  options.neighbors = 64;
  options.threads = 2;
  const absl::StatusOr<MlkrFit> fit =
      FitMlkr(train.samples(), initial, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_LT(fit->loss, 0.5 * fit->initial_loss);
  // Squared column norms of A: each input's weight in the mapped distance.
  std::vector<double> weight(10, 0.0);
  for (std::size_t r = 0; r < 10; ++r) {
    for (std::size_t k = 0; k < 10; ++k) {
      weight[k] += fit->a[r * 10 + k] * fit->a[r * 10 + k];
    }
  }
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  EXPECT_GT((weight[0] + weight[1]) / total, 0.9);
  const double before = HeldOutError(train, test, initial, 10);
  const double after = HeldOutError(train, test, fit->a, 10);
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

TEST(MlkrFitTest, ALowRankMapFindsTheRelevantPlane) {
  const Data train = MakeData(400, 10, 1, 9);
  const Data test = MakeData(300, 10, 1, 10);
  const std::size_t rank = 2;
  const std::vector<double> initial = InitialMlkrMap(train.samples());
  MlkrFitOptions options;
  options.rank = rank;
  options.neighbors = 64;
  const absl::StatusOr<MlkrFit> fit =
      FitMlkr(train.samples(), initial, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  std::vector<double> weight(10, 0.0);
  for (std::size_t r = 0; r < rank; ++r) {
    for (std::size_t k = 0; k < 10; ++k) {
      weight[k] += fit->a[r * 10 + k] * fit->a[r * 10 + k];
    }
  }
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  EXPECT_GT((weight[0] + weight[1]) / total, 0.8);
  ASSERT_EQ(fit->rank, rank);
  ASSERT_EQ(fit->a.size(), rank * 10);
  EXPECT_LT(HeldOutError(train, test, fit->a, rank),
            0.5 * HeldOutError(train, test, initial, 10));
}

TEST(MlkrFitTest, RefusesWhatItCannotFit) {
  const Data data = MakeData(20, 3, 1, 11);
  MlkrFitOptions options;
  options.rank = 4;
  EXPECT_EQ(FitMlkr(data.samples(), std::vector<double>(9, 1.0), options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  options.rank = 0;
  EXPECT_EQ(FitMlkr(data.samples(), std::vector<double>(8, 1.0), options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  const Data one = MakeData(1, 3, 1, 12);
  EXPECT_EQ(FitMlkr(one.samples(), std::vector<double>(9, 1.0), options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::stop_source stop;
  stop.request_stop();
  options.stop = stop.get_token();
  EXPECT_EQ(FitMlkr(data.samples(), InitialMlkrMap(data.samples()), options)
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace streamreg
