// The exact k nearest and the points within a radius under GLML's
// per-query metric (core/metric/glml_search.h), against brute force; bad
// queries and metrics refused.
#include "core/metric/glml_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/metric/glml_metric.h"
#include "gtest/gtest.h"
#include "tests/support/random_vector.h"

namespace streamreg {
namespace {

TEST(GlmlSearchTest, NearestAndWithinARadiusAsBruteForceFinds) {
  std::mt19937_64 random(4);
  const std::size_t n = 600, d = 5;
  std::vector<double> coordinates;
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<double> point = RandomVector(d, random);
    coordinates.insert(coordinates.end(), point.begin(), point.end());
    ids.push_back(1000 + i);
  }
  // A few repeated points: ties broken by id.
  for (std::size_t i = 0; i < 5; ++i) {
    coordinates.insert(coordinates.end(), coordinates.begin() + i * d,
                       coordinates.begin() + (i + 1) * d);
    ids.push_back(5000 + i);
  }
  const CoverTree tree = *CoverTree::Build(d, coordinates, ids);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<double> query = RandomVector(d, random);
    const GlmlMetric metric(RandomVector(d, random), RandomVector(d, random),
                            trial % 2 == 0 ? 1e-2 : 1e-4);
    std::vector<Neighbor> all;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::vector<double> difference(d);
      for (std::size_t k = 0; k < d; ++k) {
        difference[k] = coordinates[i * d + k] - query[k];
      }
      all.push_back({ids[i], std::sqrt(metric.SquaredDistance(difference))});
    }
    std::sort(all.begin(), all.end(), NeighborLess);
    for (std::size_t k : {1, 7, 50, 700}) {
      std::vector<Neighbor> found;
      ASSERT_TRUE(GlmlKnn(tree, query, metric, k, &found).ok());
      ASSERT_EQ(found.size(), std::min(k, all.size()));
      for (std::size_t s = 0; s < found.size(); ++s) {
        EXPECT_EQ(found[s].id, all[s].id) << "trial " << trial << " k " << k;
        EXPECT_EQ(found[s].distance, all[s].distance);
      }
    }
    // Any rules under the metric (SearchUnderGlml): in one traversal the k
    // nearest and the k nearest of the points not excluded, as a model's
    // honest error searches.
    const auto excluded = [](std::uint64_t id) { return id % 3 == 0; };
    std::vector<Neighbor> kept_all;
    for (const Neighbor& neighbor : all) {
      if (!excluded(neighbor.id)) kept_all.push_back(neighbor);
    }
    for (std::size_t k : {1, 7, 50}) {
      std::vector<Neighbor> found, kept;
      SplitKnnRules rules(k, &found, &kept, excluded);
      SearchUnderGlml(tree, query, metric, rules);
      rules.Finish();
      ASSERT_EQ(found.size(), k);
      ASSERT_EQ(kept.size(), k);
      for (std::size_t s = 0; s < k; ++s) {
        EXPECT_EQ(found[s].id, all[s].id) << "trial " << trial << " k " << k;
        EXPECT_EQ(found[s].distance, all[s].distance);
        EXPECT_EQ(kept[s].id, kept_all[s].id) << "trial " << trial;
        EXPECT_EQ(kept[s].distance, kept_all[s].distance);
      }
    }
    // Within a radius: the prefix of the sorted list up to it (the radii
    // of the 1st, 20th and 300th nearest, inclusive).
    for (std::size_t rank : {0, 19, 299}) {
      const double radius = all[rank].distance;
      std::vector<Neighbor> found;
      ASSERT_TRUE(GlmlRange(tree, query, metric, radius, &found).ok());
      const std::size_t within =
          std::upper_bound(
              all.begin(), all.end(), radius,
              [](double r, const Neighbor& n) { return r < n.distance; }) -
          all.begin();
      ASSERT_EQ(found.size(), within) << "trial " << trial;
      for (std::size_t s = 0; s < found.size(); ++s) {
        EXPECT_EQ(found[s].id, all[s].id) << "trial " << trial;
        EXPECT_EQ(found[s].distance, all[s].distance);
      }
    }
  }
}

TEST(GlmlSearchTest, RefusesBadQueriesAndMetrics) {
  const CoverTree tree = *CoverTree::Build(2, std::vector<double>{0, 0, 1, 1},
                                           std::vector<std::uint64_t>{1, 2});
  std::vector<Neighbor> found;
  const GlmlMetric metric(std::vector<double>{1.0, 0.0},
                          std::vector<double>{0.0, 1.0}, 1e-2);
  EXPECT_EQ(
      GlmlKnn(tree, std::vector<double>{std::nan(""), 0.0}, metric, 1, &found)
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GlmlKnn(tree, std::vector<double>{0.0}, metric, 1, &found).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      GlmlRange(tree, std::vector<double>{0.0}, metric, 1.0, &found).code(),
      absl::StatusCode::kInvalidArgument);
  const GlmlMetric three(std::vector<double>{1.0, 0.0, 0.0},
                         std::vector<double>{0.0, 1.0, 0.0}, 1e-2);
  EXPECT_EQ(
      GlmlKnn(tree, std::vector<double>{0.0, 0.0}, three, 1, &found).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      GlmlKnn(tree, std::vector<double>{0.9, 0.9}, metric, 5, &found).ok());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, 2u);
}

}  // namespace
}  // namespace streamreg
