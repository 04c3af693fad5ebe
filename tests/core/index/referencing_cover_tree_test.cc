// A cover tree that references rows kept elsewhere (NodePoints) and maps
// them through a DiagonalMap answers exactly as brute force over the mapped
// points — distances bit for bit — through insertions, removals, batch
// builds, background rebuilds and points kept outside the tree, while it
// keeps a pointer per point instead of its coordinates.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/index/brute_force_search.h"
#include "core/index/concurrent_cover_tree.h"
#include "core/index/cover_tree.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 6;

// Standardization and weights as a model's metric makes them: one
// coordinate weighted 0, the others spread over two orders of magnitude.
DiagonalMap TestMap() {
  return DiagonalMap({0.5, -1.0, 2.0, 0.0, 0.25, 10.0},
                     {3.0, 0.0, 0.7, 12.5, 1.0 / 3.0, 0.04});
}

// Raw rows (kept here, as a model's store keeps them) and their images.
struct MappedPoints {
  PointSet raw;
  std::vector<double> mapped;
  std::span<const double> image(std::size_t i) const {
    return {mapped.data() + i * kDim, kDim};
  }
};
MappedPoints MakePoints(std::size_t n, std::uint64_t seed) {
  MappedPoints points{ClusteredPoints(n, kDim, 5, seed), {}};
  points.mapped.resize(points.raw.coordinates.size());
  const DiagonalMap map = TestMap();
  for (std::size_t i = 0; i < n; ++i) {
    map.Apply(points.raw.point(i).data(), points.mapped.data() + i * kDim);
  }
  return points;
}

void ExpectAnswersLikeBruteForce(const CoverTree& tree,
                                 const BruteForceSearch& brute,
                                 const MappedPoints& queries) {
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
  ASSERT_EQ(tree.size(), brute.size());
  for (std::size_t q = 0; q < queries.raw.size(); q += 7) {
    std::vector<Neighbor> knn, range;
    ASSERT_TRUE(tree.Knn(queries.image(q), 9, &knn).ok());
    EXPECT_EQ(knn, brute.Knn(queries.image(q), 9)) << "query " << q;
    ASSERT_TRUE(tree.Range(queries.image(q), 0.8, &range).ok());
    EXPECT_EQ(range, brute.Range(queries.image(q), 0.8)) << "query " << q;
  }
}

TEST(ReferencingCoverTree, BuildsAndAnswersLikeBruteForceOverTheImages) {
  const MappedPoints points = MakePoints(3000, 11);
  const MappedPoints queries = MakePoints(400, 12);
  std::vector<const double*> rows;
  std::vector<std::uint64_t> ids;
  BruteForceSearch brute(kDim);
  for (std::size_t i = 0; i < points.raw.size(); ++i) {
    rows.push_back(points.raw.point(i).data());
    ids.push_back(1000 + i);
    brute.Add(1000 + i, points.image(i));
  }
  absl::StatusOr<CoverTree> tree =
      CoverTree::BuildReferencing(TestMap(), rows, ids);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_TRUE(tree->referencing());
  ExpectAnswersLikeBruteForce(*tree, brute, queries);

  // The same tree as an owning build over the images, node for node.
  absl::StatusOr<CoverTree> owning = CoverTree::Build(kDim, points.mapped, ids);
  ASSERT_TRUE(owning.ok());
  EXPECT_EQ(owning->node_count(), tree->node_count());
  EXPECT_EQ(owning->root_level(), tree->root_level());
  // A pointer per point instead of six coordinates.
  EXPECT_LT(tree->MemoryUsage() + points.raw.size() * (kDim - 1) * 8 * 9 / 10,
            owning->MemoryUsage());

  // PointOf maps the row.
  std::vector<double> scratch(kDim);
  const std::span<const double> point = tree->PointOf(1005, scratch.data());
  ASSERT_EQ(point.size(), kDim);
  EXPECT_TRUE(std::equal(point.begin(), point.end(), points.image(5).begin()));

  // A rebuilt tree references the same rows.
  const CoverTree rebuilt = tree->Rebuilt();
  EXPECT_TRUE(rebuilt.referencing());
  ExpectAnswersLikeBruteForce(rebuilt, brute, queries);
}

TEST(ReferencingCoverTree, GrowsAndShrinksOnePointAtATime) {
  const MappedPoints points = MakePoints(2500, 21);
  const MappedPoints queries = MakePoints(300, 22);
  CoverTree tree(TestMap());
  BruteForceSearch brute(kDim);
  for (std::uint64_t id = 0; id < 2800; ++id) {
    // Points kept outside the tree too (a scan from id 2000 on), and ids
    // 2500.. at the same rows as the first 300 (sharing their nodes).
    if (id == 2000) tree.set_strategy(CoverTree::Strategy::kScan);
    const std::size_t row = id < 2500 ? id : id - 2500;
    ASSERT_TRUE(tree.Insert(id, points.raw.point(row)).ok());
    brute.Add(id, points.image(row));
  }
  tree.set_strategy(CoverTree::Strategy::kAdaptive);
  ExpectAnswersLikeBruteForce(tree, brute, queries);
  for (std::uint64_t id = 0; id < 2800; id += 3) {
    ASSERT_TRUE(tree.Remove(id).ok());
    ASSERT_TRUE(brute.Remove(id));
  }
  ExpectAnswersLikeBruteForce(tree, brute, queries);
  // Freed slots are reused with other rows.
  for (std::uint64_t id = 0; id < 600; id += 3) {
    ASSERT_TRUE(tree.Insert(id, points.raw.point(id + 1000)).ok());
    brute.Add(id, points.image(id + 1000));
  }
  ExpectAnswersLikeBruteForce(tree, brute, queries);
}

TEST(ReferencingCoverTree, BadRowsAreRefusedAsBadPoints) {
  CoverTree tree(TestMap());
  const std::vector<double> short_row(kDim - 1, 0.0);
  EXPECT_EQ(tree.Insert(1, short_row).code(),
            absl::StatusCode::kInvalidArgument);
  // Validity is the image's: a huge value at the weight-0 coordinate maps
  // to 0, one that (x - 0.5) * 3 takes beyond the doubles is refused.
  std::vector<double> huge(kDim, 0.0);
  huge[1] = -1e308;
  EXPECT_TRUE(tree.Insert(2, huge).ok());
  std::vector<double> overflowing(kDim, 0.0);
  overflowing[0] = 1.7e308;
  EXPECT_EQ(tree.Insert(3, overflowing).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tree.size(), 1u);
}

// Background rebuilds of a referencing tree (ConcurrentCoverTree) build
// another referencing tree from the same rows while searches go on.
TEST(ReferencingCoverTree, RebuildsInTheBackgroundWhileSearched) {
  const MappedPoints points = MakePoints(6000, 31);
  const MappedPoints queries = MakePoints(200, 32);
  ConcurrentCoverTree tree(CoverTree(TestMap()),
                           {.rebuild_growth = 2.0, .rebuild_min_size = 256});
  std::atomic<bool> done = false;
  std::thread searcher([&] {
    std::vector<Neighbor> found;
    while (!done.load()) {
      for (std::size_t q = 0; q < queries.raw.size(); q += 13) {
        ASSERT_TRUE(tree.Knn(queries.image(q), 3, &found).ok());
      }
    }
  });
  BruteForceSearch brute(kDim);
  for (std::uint64_t id = 0; id < points.raw.size(); ++id) {
    ASSERT_TRUE(tree.Insert(id, points.raw.point(id)).ok());
    brute.Add(id, points.image(id));
    if (id % 5 == 4) {
      ASSERT_TRUE(tree.Remove(id - 2).ok());
      ASSERT_TRUE(brute.Remove(id - 2));
    }
  }
  done = true;
  searcher.join();
  tree.WaitForBackgroundRebuild();
  EXPECT_GE(tree.rebuild_count(), 1u);  // how many depends on timing
  tree.Read([&](const CoverTree& live) {
    EXPECT_TRUE(live.referencing());
    ExpectAnswersLikeBruteForce(live, brute, queries);
  });
}

}  // namespace
}  // namespace streamreg
