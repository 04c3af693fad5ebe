// MLKR's objective (Weinberger & Tesauro 2007; core/metric/
// mlkr_objective.h) against its definitions: the objective against a
// direct O(n^2) evaluation of eq. (3); its gradient against central finite
// differences of the objective, at full and low rank; the truncated
// objective equal to the full one when every other point is a neighbour;
// one point's term and gradient as the batch's; the neighbours under a map
// against brute force and, to the bit, a cover tree.
#include "core/metric/mlkr_objective.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/index/search_rules.h"
#include "core/metric/mlkr_fit.h"
#include "gtest/gtest.h"
#include "tests/support/mlkr_data.h"

namespace streamreg {
namespace {

std::vector<double> RandomMap(std::size_t rank, std::size_t d,
                              std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 0.7);
  std::vector<double> a(rank * d);
  for (double& v : a) v = normal(random);
  return a;
}

// Eq. (3) as written: for every i, the Gaussian-weighted average of every
// other point's targets.
double DirectLoss(const Data& data, const std::vector<double>& a,
                  std::size_t rank) {
  double loss = 0.0;
  for (std::size_t i = 0; i < data.n; ++i) {
    std::vector<double> sum(data.m, 0.0);
    double total = 0.0;
    for (std::size_t j = 0; j < data.n; ++j) {
      if (j == i) continue;
      double squared = 0.0;
      for (std::size_t r = 0; r < rank; ++r) {
        double mapped = 0.0;
        for (std::size_t k = 0; k < data.d; ++k) {
          mapped += a[r * data.d + k] *
                    (data.x[i * data.d + k] - data.x[j * data.d + k]);
        }
        squared += mapped * mapped;
      }
      const double kernel = std::exp(-squared);
      total += kernel;
      for (std::size_t t = 0; t < data.m; ++t) {
        sum[t] += kernel * data.y[j * data.m + t];
      }
    }
    for (std::size_t t = 0; t < data.m; ++t) {
      const double error = data.y[i * data.m + t] - sum[t] / total;
      loss += error * error;
    }
  }
  return loss;
}

MlkrNeighbors Everyone(std::size_t n) {
  MlkrNeighbors all{{0}, {}};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (j != i) all.ids.push_back(static_cast<std::uint32_t>(j));
    }
    all.begin.push_back(all.ids.size());
  }
  return all;
}

TEST(MlkrObjectiveTest, EqualsEquationThreeEvaluatedDirectly) {
  const Data data = MakeData(60, 5, 2, 1);
  for (std::size_t rank : {5, 2}) {
    const std::vector<double> a = RandomMap(rank, 5, rank);
    const double direct = DirectLoss(data, a, rank);
    for (std::size_t threads : {1, 2}) {
      const double loss =
          MlkrLoss(data.samples(), Everyone(data.n), a, rank, nullptr, threads);
      EXPECT_NEAR(loss, direct, 1e-11 * direct) << rank << " " << threads;
    }
    // Every other point as neighbours, found by the tree: the same sum.
    const MlkrNeighbors listed =
        NearestUnderMap(data.samples(), a, rank, data.n - 1);
    EXPECT_EQ(listed.ids, Everyone(data.n).ids);
    EXPECT_NEAR(MlkrLoss(data.samples(), listed, a, rank, nullptr), direct,
                1e-11 * direct);
  }
}

TEST(MlkrObjectiveTest, GradientEqualsFiniteDifferences) {
  const Data data = MakeData(50, 4, 2, 2, 0.1);
  for (std::size_t rank : {4, 2}) {
    const std::vector<double> a = RandomMap(rank, 4, 10 + rank);
    for (const MlkrNeighbors& neighbors :
         {Everyone(data.n), NearestUnderMap(data.samples(), a, rank, 10)}) {
      std::vector<double> gradient;
      MlkrLoss(data.samples(), neighbors, a, rank, &gradient, 2);
      ASSERT_EQ(gradient.size(), a.size());
      for (std::size_t k = 0; k < a.size(); ++k) {
        const double h = 1e-6;
        std::vector<double> plus = a, minus = a;
        plus[k] += h;
        minus[k] -= h;
        const double numeric =
            (MlkrLoss(data.samples(), neighbors, plus, rank, nullptr) -
             MlkrLoss(data.samples(), neighbors, minus, rank, nullptr)) /
            (2.0 * h);
        EXPECT_NEAR(gradient[k], numeric, 1e-6 * (1.0 + std::fabs(numeric)))
            << "rank " << rank << " entry " << k << " neighbours "
            << neighbors.of(0).size();
      }
    }
  }
}

TEST(MlkrObjectiveTest, OnePointsTermIsItsShareOfTheBatch) {
  const Data data = MakeData(30, 3, 2, 3);
  const std::size_t rank = 3;
  const std::vector<double> a = RandomMap(rank, 3, 4);
  const MlkrNeighbors neighbors = NearestUnderMap(data.samples(), a, rank, 8);
  std::vector<double> batch_gradient;
  const double batch =
      MlkrLoss(data.samples(), neighbors, a, rank, &batch_gradient);
  double sum = 0.0;
  std::vector<double> summed_gradient(a.size(), 0.0);
  for (std::size_t i = 0; i < data.n; ++i) {
    std::vector<const double*> xs, ys;
    for (const std::size_t j : neighbors.of(i)) {
      xs.push_back(data.x.data() + j * data.d);
      ys.push_back(data.y.data() + j * data.m);
    }
    sum += MlkrPointLoss({data.x.data() + i * data.d, data.d},
                         {data.y.data() + i * data.m, data.m}, xs, ys, a, rank,
                         &summed_gradient);
  }
  EXPECT_NEAR(sum, batch, 1e-12 * batch);
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_NEAR(summed_gradient[k], batch_gradient[k],
                1e-10 * (1.0 + std::fabs(batch_gradient[k])));
  }
}

// The reference: each point's c nearest outside its window, from a cover
// tree's search over `points` (n x dim), in the order it lists them.
std::vector<std::vector<std::uint64_t>> CoverTreeLists(
    const std::vector<double>& points, std::size_t dim, std::size_t c,
    std::size_t window) {
  const std::size_t n = points.size() / dim;
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  const absl::StatusOr<CoverTree> tree = CoverTree::Build(dim, points, ids);
  EXPECT_TRUE(tree.ok()) << tree.status();
  std::vector<std::vector<std::uint64_t>> lists(n);
  if (!tree.ok()) return lists;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<Neighbor> found;
    const auto excluded = [i, window](std::uint64_t j) {
      return (i > j ? i - j : j - i) <= window;
    };
    FilteredKnnRules rules(c, &found, excluded);
    tree->Search(points.data() + i * dim, rules);
    rules.Finish();
    for (const Neighbor& neighbor : found) lists[i].push_back(neighbor.id);
  }
  return lists;
}

// The fit's neighbour lists are a cover tree's to the bit, whichever way
// they are found (WindowedKnn's walk below 2,500 points, the tree above):
// the same ids in the same order, ties (points repeated exactly, and a set
// of one point repeated) broken by the smaller index, with and without a
// window, on a stream that goes round its path again and again as an arm
// does. Under the identity map the mapped points are the inputs
// themselves, which the reference tree is built on.
TEST(MlkrObjectiveTest, NeighboursUnderAMapAreACoverTreesToTheBit) {
  constexpr std::size_t kD = 5;
  std::mt19937_64 random(11);
  std::normal_distribution<double> noise(0.0, 0.01);
  const auto path = [&](std::size_t n) {
    std::vector<double> x;
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 40 == 39) {  // an earlier point again, exactly
        const std::size_t earlier = (i * 7) % i;
        for (std::size_t k = 0; k < kD; ++k) x.push_back(x[earlier * kD + k]);
        continue;
      }
      const double t = 0.02 * static_cast<double>(i);
      for (std::size_t k = 0; k < kD; ++k) {
        x.push_back(std::sin(t * static_cast<double>(k + 1)) + noise(random));
      }
    }
    return x;
  };
  std::vector<double> identity(kD * kD, 0.0);
  for (std::size_t k = 0; k < kD; ++k) identity[k * kD + k] = 1.0;
  for (const std::vector<double>& x :
       {path(900), path(2600), std::vector<double>(60 * kD, 0.25)}) {
    const std::size_t n = x.size() / kD;
    const Data data{n, kD, 1, x, std::vector<double>(n, 0.0)};
    for (std::size_t window : {0, 7, 60}) {
      for (std::size_t c : {1, 8, 32}) {
        if (n == 2600 && c != 32) continue;  // the tree's side once
        const MlkrNeighbors found =
            NearestUnderMap(data.samples(), identity, kD, c, window);
        const std::vector<std::vector<std::uint64_t>> expected =
            CoverTreeLists(x, kD, c, window);
        for (std::size_t i = 0; i < n; ++i) {
          const std::span<const std::uint32_t> listed = found.of(i);
          ASSERT_EQ(listed.size(), expected[i].size())
              << "n " << n << " point " << i << " window " << window << " c "
              << c;
          for (std::size_t s = 0; s < listed.size(); ++s) {
            ASSERT_EQ(listed[s], expected[i][s])
                << "n " << n << " point " << i << " rank " << s << " window "
                << window << " c " << c;
          }
        }
      }
    }
  }
}

TEST(MlkrObjectiveTest, NeighboursUnderAMapAreTheBruteForceNearest) {
  const Data data = MakeData(200, 6, 1, 5);
  const std::size_t rank = 3;
  const std::vector<double> a = RandomMap(rank, 6, 6);
  const auto squared = [&](std::size_t i, std::size_t j) {
    double sum = 0.0;
    for (std::size_t r = 0; r < rank; ++r) {
      double mapped = 0.0;
      for (std::size_t k = 0; k < 6; ++k) {
        mapped += a[r * 6 + k] * (data.x[i * 6 + k] - data.x[j * 6 + k]);
      }
      sum += mapped * mapped;
    }
    return sum;
  };
  // Without and with a window of left-out stream neighbours, truncated and
  // complete (c >= n - 1: every eligible point, in index order).
  for (std::size_t window : {0, 5, 120}) {
    for (std::size_t c : {7, 199}) {
      const MlkrNeighbors found =
          NearestUnderMap(data.samples(), a, rank, c, window);
      for (std::size_t i = 0; i < data.n; ++i) {
        std::vector<std::size_t> eligible;
        for (std::size_t j = 0; j < data.n; ++j) {
          if ((i > j ? i - j : j - i) > window) eligible.push_back(j);
        }
        const std::span<const std::uint32_t> listed = found.of(i);
        ASSERT_EQ(listed.size(), std::min(c, eligible.size()))
            << "point " << i << " window " << window << " c " << c;
        if (c >= data.n - 1) {
          EXPECT_TRUE(
              std::equal(listed.begin(), listed.end(), eligible.begin()));
          continue;
        }
        std::stable_sort(eligible.begin(), eligible.end(),
                         [&](std::size_t p, std::size_t q) {
                           return squared(i, p) < squared(i, q);
                         });
        for (std::size_t s = 0; s < listed.size(); ++s) {
          EXPECT_GT((i > listed[s] ? i - listed[s] : listed[s] - i), window);
          EXPECT_NEAR(squared(i, listed[s]), squared(i, eligible[s]), 1e-9)
              << "point " << i << " rank " << s << " window " << window;
        }
      }
    }
  }
}

}  // namespace
}  // namespace streamreg
