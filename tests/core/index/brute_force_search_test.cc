// The reference every index is measured against (core/index/
// brute_force_search.h), itself checked against a plain sort of every
// point by (distance, id): k nearest, ties broken by id, a range with its
// bound included, and removals.
#include "core/index/brute_force_search.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 2;

// Every stored point by (distance, id), from a sort of all of them.
std::vector<Neighbor> Sorted(const BruteForceSearch& search,
                             std::span<const double> query) {
  std::vector<Neighbor> all;
  for (std::size_t i = 0; i < search.size(); ++i) {
    const std::span<const double> p = search.point(i);
    all.push_back(
        {search.id(i), std::sqrt((p[0] - query[0]) * (p[0] - query[0]) +
                                 (p[1] - query[1]) * (p[1] - query[1]))});
  }
  std::sort(all.begin(), all.end(), [](const Neighbor& a, const Neighbor& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  });
  return all;
}

// Points on a small integer grid (many ties) with random ids.
BruteForceSearch GridPoints(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<std::uint64_t> ids(100);
  for (std::uint64_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + i;
  std::shuffle(ids.begin(), ids.end(), random);
  BruteForceSearch search(kDim);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const double point[kDim] = {static_cast<double>(i % 10),
                                static_cast<double>(i / 10)};
    search.Add(ids[i], point);
  }
  return search;
}

TEST(BruteForceSearchTest, KnnIsTheFirstKByDistanceThenId) {
  const BruteForceSearch search = GridPoints(1);
  for (const auto& query :
       {std::vector<double>{4.5, 4.5}, std::vector<double>{0.0, 0.0},
        std::vector<double>{3.0, 7.2}}) {
    const std::vector<Neighbor> sorted = Sorted(search, query);
    for (std::size_t k : {0, 1, 4, 13, 100, 150}) {
      const std::vector<Neighbor> got = search.Knn(query, k);
      const std::vector<Neighbor> expected(
          sorted.begin(), sorted.begin() + std::min(k, sorted.size()));
      EXPECT_EQ(got, expected) << "k = " << k;
    }
  }
}

TEST(BruteForceSearchTest, ARangeHoldsItsBoundInOrder) {
  const BruteForceSearch search = GridPoints(2);
  const double query[kDim] = {5.0, 5.0};
  const std::vector<Neighbor> sorted = Sorted(search, query);
  for (double radius : {0.0, 1.0, 1.5, std::sqrt(2.0), 3.0, 100.0}) {
    std::vector<Neighbor> expected;
    for (const Neighbor& n : sorted) {
      if (n.distance <= radius) expected.push_back(n);
    }
    EXPECT_EQ(search.Range(query, radius), expected) << "radius " << radius;
  }
}

TEST(BruteForceSearchTest, ARemovedPointIsNoLongerFound) {
  BruteForceSearch search = GridPoints(3);
  const double query[kDim] = {2.0, 2.0};
  const Neighbor nearest = search.Knn(query, 1)[0];
  EXPECT_EQ(nearest.distance, 0.0);
  EXPECT_TRUE(search.Remove(nearest.id));
  EXPECT_FALSE(search.Remove(nearest.id));
  EXPECT_EQ(search.size(), 99u);
  const std::vector<Neighbor> sorted = Sorted(search, query);
  EXPECT_EQ(search.Knn(query, 4),
            std::vector<Neighbor>(sorted.begin(), sorted.begin() + 4));
  EXPECT_EQ(search.Knn(query, 1)[0].distance, 1.0);
}

}  // namespace
}  // namespace streamreg
