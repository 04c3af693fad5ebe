// The local linear regressor against its definition: exact on a plane,
// equal to ridge least squares solved independently (QR of the augmented
// design), over all coordinates or the leading ones, unmoved by a constant
// added to a target, the grid and the prefix fits equal to one fit each,
// and the edge cases.
#include "core/regression/local_linear.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/index/neighbor.h"
#include "gtest/gtest.h"
#include "tests/support/local_linear_reference.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 4;
constexpr std::size_t kTargets = 3;

struct Fixture {
  std::vector<double> points;   // n x kDim
  std::vector<double> targets;  // n x kTargets
  std::size_t size() const { return points.size() / kDim; }
};

// Random points; targets random, or on a plane y_t = t + (t + 1) sum_i x_i
// (plus noise of `noise`).
Fixture MakeFixture(std::size_t n, std::uint64_t seed, bool plane,
                    double noise = 0.0) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Fixture f;
  for (std::size_t s = 0; s < n; ++s) {
    double sum = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      f.points.push_back(uniform(random));
      sum += f.points.back() * static_cast<double>(i + 1);
    }
    for (std::size_t t = 0; t < kTargets; ++t) {
      f.targets.push_back(plane ? static_cast<double>(t) +
                                      static_cast<double>(t + 1) * sum +
                                      noise * uniform(random)
                                : 10.0 * uniform(random));
    }
  }
  return f;
}

// Every point sorted by (distance, id) from `query`, gathered with offsets.
NeighborTargets GatherAll(const Fixture& f, const std::vector<double>& query) {
  std::vector<Neighbor> all;
  for (std::size_t s = 0; s < f.size(); ++s) {
    double squared = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      const double diff = f.points[s * kDim + i] - query[i];
      squared += diff * diff;
    }
    all.push_back({s, std::sqrt(squared)});
  }
  std::sort(all.begin(), all.end(), NeighborLess);
  NeighborTargets near(kTargets);
  near.GatherWithOffsets(
      all, query,
      [&](std::uint64_t id) { return f.targets.data() + id * kTargets; },
      [&](std::uint64_t id) { return f.points.data() + id * kDim; });
  return near;
}

// The fit to the k nearest over their first `coordinates` coordinates by
// the independent route (QR).
LocalLinearReference Reference(const NeighborTargets& near, std::size_t k,
                               double ridge, std::size_t t,
                               std::size_t coordinates = kDim) {
  k = std::min(k, near.size());
  std::vector<std::vector<double>> offsets;
  std::vector<double> y;
  for (std::size_t j = 0; j < k; ++j) {
    offsets.emplace_back(near.offsets(j), near.offsets(j) + coordinates);
    y.push_back(near.targets(j)[t]);
  }
  return LocalLinearByQr(offsets, y, ridge);
}

TEST(LocalLinearTest, ReproducesAPlaneAtAnyQuery) {
  const Fixture f = MakeFixture(200, 1, /*plane=*/true);
  // Also outside the points' cube: a local fit extrapolates the slope.
  for (const std::vector<double>& query :
       {std::vector<double>{0.1, -0.2, 0.3, 0.0},
        std::vector<double>{1.5, 1.5, -1.5, 2.0}}) {
    const NeighborTargets near = GatherAll(f, query);
    LocalAverage out;
    LocalLinearAt({.k = 30}, 1e-12, near, &out);
    double sum = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      sum += query[i] * static_cast<double>(i + 1);
    }
    ASSERT_EQ(out.neighbors, 30u);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(out.value[t],
                  static_cast<double>(t) + static_cast<double>(t + 1) * sum,
                  1e-8);
      // The spread comes from the normal equations' sums (yy - theta^T C),
      // whose rounding leaves about sqrt(epsilon) of the targets' own
      // spread (about 10 here) where the fit is exact.
      EXPECT_NEAR(out.spread[t], 0.0, 1e-6);
    }
  }
}

TEST(LocalLinearTest, EqualsRidgeLeastSquaresSolvedByQr) {
  for (bool plane : {false, true}) {
    const Fixture f = MakeFixture(300, 2, plane, /*noise=*/0.5);
    const NeighborTargets near = GatherAll(f, {0.2, 0.1, -0.4, 0.3});
    for (double ridge : {1e-3, 0.7, 25.0}) {
      for (std::size_t k : {1u, 3u, 5u, 17u, 120u}) {
        SCOPED_TRACE(::testing::Message()
                     << "plane " << plane << " ridge " << ridge << " k " << k);
        LocalAverage out;
        LocalLinearAt({.k = k}, ridge, near, &out);
        EXPECT_EQ(out.neighbors, k);
        for (std::size_t t = 0; t < kTargets; ++t) {
          const LocalLinearReference expected = Reference(near, k, ridge, t);
          EXPECT_NEAR(out.value[t], expected.value,
                      1e-9 * (1.0 + std::abs(expected.value)));
          EXPECT_NEAR(out.spread[t], expected.spread,
                      1e-9 * (1.0 + expected.spread));
        }
      }
    }
  }
}

// The spread comes from the normal equations' sums, not a pass over the
// residuals; a target's large mean must not cost it its digits (its sum of
// squares is of the targets less the first neighbour's: unshifted, the
// spread here would be off by about 1e-4 of itself).
TEST(LocalLinearTest, AConstantAddedToATargetMovesOnlyItsValue) {
  Fixture f = MakeFixture(300, 6, /*plane=*/true, /*noise=*/0.3);
  Fixture moved = f;
  for (double& y : moved.targets) y += 1e5;
  const std::vector<double> query = {0.3, -0.1, 0.2, 0.0};
  const NeighborTargets near = GatherAll(f, query);
  const NeighborTargets near_moved = GatherAll(moved, query);
  for (std::size_t k : {7u, 120u}) {
    LocalAverage out, out_moved;
    LocalLinearAt({.k = k}, 0.5, near, &out);
    LocalLinearAt({.k = k}, 0.5, near_moved, &out_moved);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(out_moved.value[t] - 1e5, out.value[t], 1e-8) << k;
      EXPECT_GT(out.spread[t], 0.05) << k;
      EXPECT_NEAR(out_moved.spread[t], out.spread[t], 1e-6 * out.spread[t])
          << k;
    }
  }
}

TEST(LocalLinearTest, OnlyTheListedTargetsAreFit) {
  const Fixture f = MakeFixture(100, 3, false);
  const NeighborTargets near = GatherAll(f, {0.0, 0.0, 0.0, 0.0});
  LocalAverage all, one;
  LocalLinearAt({.k = 40}, 1.0, near, &all);
  const std::size_t listed[] = {2};
  LocalLinearAt({.k = 40}, 1.0, near, &one, listed);
  EXPECT_EQ(one.value[0], 0.0);
  EXPECT_EQ(one.value[1], 0.0);
  EXPECT_EQ(one.value[2], all.value[2]);
  EXPECT_EQ(one.spread[2], all.spread[2]);
}

TEST(LocalLinearTest, OverTheLeadingCoordinatesEqualsTheFitToThoseAlone) {
  for (bool plane : {false, true}) {
    const Fixture f = MakeFixture(300, 7, plane, /*noise=*/0.5);
    const NeighborTargets near = GatherAll(f, {-0.3, 0.2, 0.1, -0.2});
    for (std::size_t coordinates : {1u, 2u, 3u}) {
      for (std::size_t k : {2u, 9u, 120u}) {
        SCOPED_TRACE(::testing::Message()
                     << "plane " << plane << " coordinates " << coordinates
                     << " k " << k);
        LocalAverage out;
        LocalLinearAt({.k = k, .coordinates = coordinates}, 0.7, near, &out);
        for (std::size_t t = 0; t < kTargets; ++t) {
          const LocalLinearReference expected =
              Reference(near, k, 0.7, t, coordinates);
          EXPECT_NEAR(out.value[t], expected.value,
                      1e-9 * (1.0 + std::abs(expected.value)));
          EXPECT_NEAR(out.spread[t], expected.spread,
                      1e-9 * (1.0 + expected.spread));
        }
      }
    }
  }
  // The plane leans on every coordinate: a fit over fewer leaves a
  // residual that the fit over all does not.
  const Fixture f = MakeFixture(300, 7, /*plane=*/true);
  const NeighborTargets near = GatherAll(f, {0.0, 0.0, 0.0, 0.0});
  LocalAverage all, leading;
  LocalLinearAt({.k = 60, .coordinates = kDim}, 1e-9, near, &all);
  LocalLinearAt({.k = 60, .coordinates = 2}, 1e-9, near, &leading);
  EXPECT_LT(all.spread[1], 1e-6);
  EXPECT_GT(leading.spread[1], 0.1);
}

TEST(LocalLinearTest, TheGridEqualsOneFitEach) {
  const Fixture f = MakeFixture(150, 4, true, /*noise=*/2.0);
  const NeighborTargets near = GatherAll(f, {0.5, -0.5, 0.25, 0.0});
  // Each k over two coordinates and over all of them (0, and more than
  // there are); the last values exceed the stored points: all fit 150.
  std::vector<LocalLinearFit> grid;
  for (std::size_t k : {2u, 6u, 9u, 40u, 41u, 149u, 200u, 400u}) {
    grid.push_back({.k = k, .coordinates = 2});
    grid.push_back({.k = k, .coordinates = k % 2 == 0 ? 0u : 2 * kDim});
  }
  const std::vector<double> fallback(kTargets, -7.0);
  std::vector<double> values(grid.size() * kTargets);
  LocalLinearGrid(grid, 0.3, near, fallback, values);
  for (std::size_t g = 0; g < grid.size(); ++g) {
    LocalAverage one;
    LocalLinearAt(grid[g], 0.3, near, &one);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(values[g * kTargets + t], one.value[t],
                  1e-10 * (1.0 + std::abs(one.value[t])))
          << "k " << grid[g].k << " coordinates " << grid[g].coordinates
          << " target " << t;
    }
  }
}

TEST(LocalLinearTest, PrefixFitsEqualOneFitEach) {
  const Fixture f = MakeFixture(150, 5, true, /*noise=*/2.0);
  const NeighborTargets near = GatherAll(f, {-0.5, 0.5, 0.0, 0.25});
  // Sums over all coordinates, or over the first three: fits over fewer
  // from their leading block.
  for (std::size_t widest : {0u, 3u}) {
    SCOPED_TRACE(widest);
    LocalLinearPrefix prefix(near, 0.3, widest);
    // Repeated k, the listed targets and the coordinates changing, and k
    // past the points.
    const std::vector<std::size_t> ks = {3, 3, 10, 64, 149, 150, 400};
    for (std::size_t i = 0; i < ks.size(); ++i) {
      const std::vector<std::size_t> targets =
          i % 2 == 0 ? std::vector<std::size_t>{0, 2}
                     : std::vector<std::size_t>{1};
      const LocalLinearFit fit = {.k = ks[i],
                                  .coordinates = i % 3 == 0 ? 1 : widest};
      LocalAverage got, one;
      prefix.FitAt(fit, &got, targets);
      LocalLinearAt(fit, 0.3, near, &one, targets);
      EXPECT_EQ(got.neighbors, one.neighbors);
      for (std::size_t t = 0; t < kTargets; ++t) {
        EXPECT_NEAR(got.value[t], one.value[t],
                    1e-10 * (1.0 + std::abs(one.value[t])))
            << "k " << ks[i] << " target " << t;
        EXPECT_NEAR(got.spread[t], one.spread[t],
                    1e-10 * (1.0 + std::abs(one.spread[t])))
            << "k " << ks[i] << " target " << t;
      }
    }
  }
}

TEST(LocalLinearTest, NothingGatheredGivesTheFallback) {
  const NeighborTargets near = GatherAll(Fixture{}, {0.0, 0.0, 0.0, 0.0});
  LocalAverage out;
  LocalLinearAt({.k = 10}, 1.0, near, &out);
  EXPECT_EQ(out.neighbors, 0u);
  const std::vector<LocalLinearFit> grid = {{.k = 1}, {.k = 5}};
  const std::vector<double> fallback = {1.0, 2.0, 3.0};
  std::vector<double> values(grid.size() * kTargets);
  LocalLinearGrid(grid, 1.0, near, fallback, values);
  EXPECT_EQ(values, (std::vector<double>{1.0, 2.0, 3.0, 1.0, 2.0, 3.0}));
}

}  // namespace
}  // namespace streamreg
