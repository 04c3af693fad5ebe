// The regressors against references written here from their definitions:
// Nadaraya–Watson (GW paper eq. 1) with each kernel, k-NN mean, spreads,
// the fallback, and the one-pass grid evaluations.
#include "core/regression/local_average.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/index/neighbor.h"
#include "core/regression/kernel.h"
#include "gtest/gtest.h"
#include "tests/support/kernel_reference.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

struct Fixture {
  std::vector<double> points;   // n x kDim
  std::vector<double> targets;  // n x kTargets
  std::size_t size() const { return points.size() / kDim; }
};

Fixture RandomFixture(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Fixture f;
  for (std::size_t i = 0; i < n * kDim; ++i)
    f.points.push_back(uniform(random));
  for (std::size_t i = 0; i < n * kTargets; ++i) {
    f.targets.push_back(10.0 * uniform(random));
  }
  return f;
}

// Every sample, sorted by (distance, id): what an index search returns.
std::vector<Neighbor> AllSorted(const Fixture& f, const double* query) {
  std::vector<Neighbor> all;
  for (std::size_t j = 0; j < f.size(); ++j) {
    double squared = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      const double d = query[i] - f.points[j * kDim + i];
      squared += d * d;
    }
    all.push_back({j, std::sqrt(squared)});
  }
  std::sort(all.begin(), all.end(), NeighborLess);
  return all;
}

NeighborTargets Gathered(const Fixture& f, const std::vector<Neighbor>& near) {
  NeighborTargets gathered(kTargets);
  gathered.Gather(
      near, [&](std::uint64_t id) { return f.targets.data() + id * kTargets; });
  return gathered;
}

TEST(LocalAverageTest, KernelAverageMatchesTheDefinition) {
  const Fixture f = RandomFixture(400, 1);
  std::mt19937_64 random(2);
  std::uniform_real_distribution<double> uniform(-1.2, 1.2);
  for (int q = 0; q < 50; ++q) {
    const double query[kDim] = {uniform(random), uniform(random),
                                uniform(random)};
    const std::vector<Neighbor> all = AllSorted(f, query);
    const NeighborTargets near = Gathered(f, all);
    for (Kernel kernel : kAllKernels) {
      for (double h : {0.05, 0.2, 0.5, 1.5}) {
        SCOPED_TRACE(::testing::Message() << KernelName(kernel) << " h=" << h);
        double total = 0.0;
        double sums[kTargets] = {0.0, 0.0};
        std::size_t count = 0;
        for (const Neighbor& n : all) {
          const double w = ReferenceKernel(kernel, n.distance / h);
          if (w <= 0.0) continue;
          ++count;
          total += w;
          for (std::size_t t = 0; t < kTargets; ++t) {
            sums[t] += w * f.targets[n.id * kTargets + t];
          }
        }
        LocalAverage average;
        KernelAverageAt(kernel, h, near, &average);
        ASSERT_EQ(average.neighbors, count);
        if (count == 0) continue;
        for (std::size_t t = 0; t < kTargets; ++t) {
          const double mean = sums[t] / total;
          double spread = 0.0;
          for (const Neighbor& n : all) {
            const double w = ReferenceKernel(kernel, n.distance / h);
            const double deviation = f.targets[n.id * kTargets + t] - mean;
            spread += w * deviation * deviation;
          }
          EXPECT_NEAR(average.value[t], mean, 1e-9);
          EXPECT_NEAR(average.spread[t], std::sqrt(spread / total), 1e-9);
        }
      }
    }
  }
}

// A range search's result in ShellOrder for a bandwidth grid (as the model
// gathers it) gives every estimate the distance-sorted list gives, and the
// grid evaluation equals one estimate per bandwidth to the last bit.
TEST(LocalAverageTest, ShellOrderedNeighborsGiveTheSameEstimates) {
  const Fixture f = RandomFixture(500, 5);
  const std::vector<double> bandwidths = {0.05, 0.2, 0.4, 0.7, 1.5};
  const std::vector<double> fallback = {-1.0, 1.0};
  const auto lookup = [&](std::uint64_t id) {
    return f.targets.data() + id * kTargets;
  };
  std::mt19937_64 random(6);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int q = 0; q < 20; ++q) {
    const double query[kDim] = {uniform(random), uniform(random),
                                uniform(random)};
    const std::vector<Neighbor> sorted = AllSorted(f, query);
    const NeighborTargets by_distance = Gathered(f, sorted);
    std::vector<Neighbor> shuffled = sorted;
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    NeighborTargets in_shells(kTargets);
    in_shells.GatherInShells(bandwidths, &shuffled, lookup);
    for (Kernel kernel : kAllKernels) {
      SCOPED_TRACE(KernelName(kernel));
      std::vector<double> grid(bandwidths.size() * kTargets);
      KernelAverageGrid(kernel, bandwidths, in_shells, fallback, grid);
      for (std::size_t g = 0; g < bandwidths.size(); ++g) {
        LocalAverage expected, got;
        KernelAverageAt(kernel, bandwidths[g], by_distance, &expected);
        KernelAverageAt(kernel, bandwidths[g], in_shells, &got);
        ASSERT_EQ(got.neighbors, expected.neighbors) << "g=" << g;
        for (std::size_t t = 0; t < kTargets; ++t) {
          const double value =
              expected.neighbors == 0 ? fallback[t] : expected.value[t];
          EXPECT_NEAR(grid[g * kTargets + t], value, 1e-9);
          EXPECT_EQ(grid[g * kTargets + t],
                    got.neighbors == 0 ? fallback[t] : got.value[t]);
          if (expected.neighbors == 0) continue;
          EXPECT_NEAR(got.value[t], expected.value[t], 1e-9);
          EXPECT_NEAR(got.spread[t], expected.spread[t], 1e-9);
        }
      }
      // A bandwidth between two radii: the prefix also holds neighbours
      // beyond it, which weigh nothing.
      LocalAverage expected, got;
      KernelAverageAt(kernel, 0.3, by_distance, &expected);
      KernelAverageAt(kernel, 0.3, in_shells, &got);
      ASSERT_EQ(got.neighbors, expected.neighbors);
      for (std::size_t t = 0; t < kTargets && got.neighbors > 0; ++t) {
        EXPECT_NEAR(got.value[t], expected.value[t], 1e-9);
      }
    }
  }
}

// Averages for a subset of the targets are those of the full average, to
// the last bit, and leave the other targets alone.
TEST(LocalAverageTest, AveragesForSomeTargetsEqualTheFullOnes) {
  const Fixture f = RandomFixture(300, 7);
  const double query[kDim] = {0.2, 0.1, -0.3};
  const NeighborTargets near = Gathered(f, AllSorted(f, query));
  const std::vector<std::size_t> second = {1};
  for (Kernel kernel : kAllKernels) {
    LocalAverage all, some;
    KernelAverageAt(kernel, 0.6, near, &all);
    KernelAverageAt(kernel, 0.6, near, &some, second);
    ASSERT_GT(all.neighbors, 0u);
    EXPECT_EQ(some.neighbors, all.neighbors);
    EXPECT_EQ(some.value[1], all.value[1]);
    EXPECT_EQ(some.spread[1], all.spread[1]);
    EXPECT_EQ(some.value[0], 0.0);
    EXPECT_EQ(some.spread[0], 0.0);
  }
  LocalAverage all, some;
  NearestAverageAt(9, near, &all);
  NearestAverageAt(9, near, &some, second);
  EXPECT_EQ(some.value[1], all.value[1]);
  EXPECT_EQ(some.spread[1], all.spread[1]);
  EXPECT_EQ(some.value[0], 0.0);
}

TEST(LocalAverageTest, NearestAverageIsTheMeanOfTheKNearest) {
  const Fixture f = RandomFixture(300, 3);
  const double query[kDim] = {0.1, -0.2, 0.3};
  const std::vector<Neighbor> all = AllSorted(f, query);
  const NeighborTargets near = Gathered(f, all);
  for (std::size_t k : {1, 2, 7, 50, 300, 1000}) {
    SCOPED_TRACE(k);
    const std::size_t used = std::min(k, f.size());
    LocalAverage average;
    NearestAverageAt(k, near, &average);
    EXPECT_EQ(average.neighbors, used);
    for (std::size_t t = 0; t < kTargets; ++t) {
      double mean = 0.0;
      for (std::size_t j = 0; j < used; ++j) {
        mean += f.targets[all[j].id * kTargets + t] / used;
      }
      double variance = 0.0;
      for (std::size_t j = 0; j < used; ++j) {
        const double d = f.targets[all[j].id * kTargets + t] - mean;
        variance += d * d / used;
      }
      EXPECT_NEAR(average.value[t], mean, 1e-9);
      EXPECT_NEAR(average.spread[t], std::sqrt(variance), 1e-9);
    }
  }
}

TEST(LocalAverageTest, GridsEqualOneEstimatePerValueAndFallBack) {
  const Fixture f = RandomFixture(500, 4);
  const double query[kDim] = {0.9, 0.9, -0.9};
  const NeighborTargets near = Gathered(f, AllSorted(f, query));
  const std::vector<double> fallback = {-123.0, 456.0};
  const std::vector<double> bandwidths = {1e-4, 0.01, 0.1, 0.3, 0.6, 2.0};
  for (Kernel kernel : kAllKernels) {
    SCOPED_TRACE(KernelName(kernel));
    std::vector<double> values(bandwidths.size() * kTargets);
    KernelAverageGrid(kernel, bandwidths, near, fallback, values);
    for (std::size_t g = 0; g < bandwidths.size(); ++g) {
      LocalAverage one;
      KernelAverageAt(kernel, bandwidths[g], near, &one);
      for (std::size_t t = 0; t < kTargets; ++t) {
        const double expected = one.neighbors == 0 ? fallback[t] : one.value[t];
        // The same sums in the same order: equal to the last bit.
        EXPECT_EQ(values[g * kTargets + t], expected) << "g=" << g;
      }
    }
    // The smallest bandwidth holds no sample: the fallback.
    EXPECT_EQ(values[0], fallback[0]);
  }
  const std::vector<std::size_t> ks = {1, 3, 10, 600};
  std::vector<double> values(ks.size() * kTargets);
  NearestAverageGrid(ks, near, fallback, values);
  for (std::size_t g = 0; g < ks.size(); ++g) {
    LocalAverage one;
    NearestAverageAt(ks[g], near, &one);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_EQ(values[g * kTargets + t], one.value[t]);
    }
  }
  NeighborTargets empty(kTargets);
  NearestAverageGrid(ks, empty, fallback, values);
  EXPECT_EQ(values[0], fallback[0]);
  EXPECT_EQ(values[1], fallback[1]);
}

// The learner's older neighbours gathered beside its nearest: the same
// rows as a gather of their own, with only the neighbours the first list
// lacks looked up.
TEST(LocalAverageTest, GatheringASecondListSharesTheFirstsRows) {
  const Fixture f = RandomFixture(60, 11);
  const std::vector<double> query = {0.1, -0.2, 0.3};
  const std::vector<Neighbor> all = AllSorted(f, query.data());
  // A first list that lacks some of the nearest (ids divisible by 3), and
  // the 20 nearest of the samples with an even id (as if the odd ones were
  // recent): the second list's unshared neighbours lie between its shared
  // ones as well as past them.
  std::vector<Neighbor> nearest;
  for (const Neighbor& neighbor : all) {
    if (neighbor.id % 3 != 0 && nearest.size() < 20)
      nearest.push_back(neighbor);
  }
  std::vector<Neighbor> older;
  for (const Neighbor& neighbor : all) {
    if (neighbor.id % 2 == 0 && older.size() < 20) older.push_back(neighbor);
  }
  std::size_t lookups = 0;
  const auto lookup = [&](std::uint64_t id) {
    ++lookups;
    return f.targets.data() + id * kTargets;
  };
  const auto point_of = [&](std::uint64_t id) {
    return f.points.data() + id * kDim;
  };
  std::size_t unshared = 0;
  for (const Neighbor& neighbor : older) {
    unshared +=
        std::none_of(nearest.begin(), nearest.end(),
                     [&](const Neighbor& n) { return n.id == neighbor.id; });
  }
  ASSERT_GT(unshared, 0u);
  ASSERT_LT(unshared, older.size());
  for (const bool with_offsets : {false, true}) {
    NeighborTargets first(kTargets);
    if (with_offsets) {
      first.GatherWithOffsets(nearest, query, lookup, point_of);
    } else {
      first.Gather(nearest, lookup);
    }
    NeighborTargets alone(kTargets);
    if (with_offsets) {
      alone.GatherWithOffsets(older, query, lookup, point_of);
    } else {
      alone.Gather(older, lookup);
    }
    lookups = 0;
    NeighborTargets shared(kTargets);
    shared.GatherSharing(older, first, nearest, query, lookup, point_of);
    EXPECT_EQ(lookups, unshared);
    ASSERT_EQ(shared.size(), alone.size());
    ASSERT_EQ(shared.dim(), alone.dim());
    for (std::size_t j = 0; j < alone.size(); ++j) {
      EXPECT_EQ(shared.distance(j), alone.distance(j));
      for (std::size_t t = 0; t < kTargets; ++t) {
        EXPECT_EQ(shared.targets(j)[t], alone.targets(j)[t]) << j;
      }
      for (std::size_t i = 0; i < alone.dim(); ++i) {
        EXPECT_EQ(shared.offsets(j)[i], alone.offsets(j)[i]) << j;
      }
    }
  }
}

}  // namespace
}  // namespace streamreg
