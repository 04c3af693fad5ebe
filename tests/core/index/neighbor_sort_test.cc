// The final sort of every search (core/index/neighbor_sort.h) against
// std::sort by (distance, id): random results of every size around its
// thresholds, ties, one distance for all, a far outlier that crowds the
// rest into one bucket, an infinite distance, and distances an ulp apart;
// and the k nearest kept of a superset against std::sort's first k.
#include "core/index/neighbor_sort.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

std::vector<Neighbor> Sorted(std::vector<Neighbor> neighbors) {
  std::sort(neighbors.begin(), neighbors.end(), NeighborOrder());
  return neighbors;
}

void ExpectSortedAsStdSort(std::vector<Neighbor> neighbors) {
  const std::vector<Neighbor> expected = Sorted(neighbors);
  SortNeighbors(neighbors);
  EXPECT_EQ(neighbors, expected) << neighbors.size() << " results";
}

// KeepNearest(k) of `neighbors` is std::sort's first k, for k around the
// ends and the middle.
void ExpectKeptAsStdSort(const std::vector<Neighbor>& neighbors) {
  const std::vector<Neighbor> sorted = Sorted(neighbors);
  const std::size_t n = neighbors.size();
  for (std::size_t k :
       {std::size_t{0}, std::size_t{1}, n / 3, n / 2, n - 1, n, n + 1}) {
    if (k > n + 1) continue;  // n - 1 of n = 0
    std::vector<Neighbor> kept = neighbors;
    KeepNearest(k, &kept);
    const std::vector<Neighbor> expected(sorted.begin(),
                                         sorted.begin() + std::min(k, n));
    EXPECT_EQ(kept, expected) << k << " of " << n << " results";
  }
}

// Both of the above.
void ExpectOrderedAsStdSort(const std::vector<Neighbor>& neighbors) {
  ExpectSortedAsStdSort(neighbors);
  ExpectKeptAsStdSort(neighbors);
}

// `n` results with distances from `distance(random)`, ids shuffled.
template <class Distance>
std::vector<Neighbor> Results(std::size_t n, std::uint64_t seed,
                              Distance distance) {
  std::mt19937_64 random(seed);
  std::vector<Neighbor> neighbors(n);
  for (std::size_t i = 0; i < n; ++i) {
    neighbors[i] = {random() % (4 * n + 1), distance(random)};
  }
  return neighbors;
}

TEST(NeighborSortTest, SortsAndKeepsTheNearestAsStdSortAtEverySize) {
  std::uniform_real_distribution<double> uniform(0.0, 3.0);
  for (std::size_t n : {0, 1, 2, 16, 31, 32, 33, 100, 256, 257, 5000}) {
    const std::vector<Neighbor> spread =
        Results(n, n, [&](auto& r) { return uniform(r); });
    // The k-th distances of a 7-dimensional cloud (and a ball's scan):
    // most near the largest, the nearest few apart.
    const std::vector<Neighbor> crowded_far = Results(n, n + 1, [&](auto& r) {
      return std::pow(uniform(r) / 3.0, 1.0 / 7.0);
    });
    ExpectOrderedAsStdSort(spread);
    ExpectOrderedAsStdSort(crowded_far);
  }
}

TEST(NeighborSortTest, BreaksTiesById) {
  std::uniform_int_distribution<int> level(0, 3);
  ExpectOrderedAsStdSort(
      Results(300, 7, [&](auto& r) { return 0.25 * level(r); }));
  // One distance for all: ordered by id alone.
  ExpectOrderedAsStdSort(Results(300, 8, [](auto&) { return 1.5; }));
}

TEST(NeighborSortTest, AFarOutlierLeavesTheRestInOrder) {
  std::uniform_real_distribution<double> near(0.0, 1e-6);
  std::vector<Neighbor> neighbors =
      Results(2000, 9, [&](auto& r) { return near(r); });
  neighbors[1234].distance = 1e6;  // the others share its first bucket
  ExpectOrderedAsStdSort(neighbors);
}

TEST(NeighborSortTest, TakesZeroAndInfiniteDistances) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<Neighbor> neighbors =
      Results(100, 10, [&](auto& r) { return uniform(r); });
  neighbors[3].distance = 0.0;
  neighbors[50].distance = std::numeric_limits<double>::infinity();
  neighbors[70].distance = std::numeric_limits<double>::max();
  ExpectOrderedAsStdSort(neighbors);
}

TEST(NeighborSortTest, OrdersDistancesAnUlpApart) {
  std::vector<Neighbor> neighbors;
  double distance = 1.0;
  for (std::uint64_t id = 0; id < 200; ++id) {
    neighbors.push_back({id, distance});
    distance = std::nextafter(distance, 2.0);
  }
  neighbors.push_back({500, 2.0});  // the buckets' width, many ulps wide
  std::reverse(neighbors.begin(), neighbors.end());
  ExpectOrderedAsStdSort(neighbors);
}

}  // namespace
}  // namespace streamreg
