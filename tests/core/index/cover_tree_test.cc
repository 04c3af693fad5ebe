// Unit tests of the cover tree's contract: errors at the door, duplicates,
// extreme coordinates, id reuse, memory accounting.

#include "core/index/cover_tree.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stop_token>
#include <vector>

#include "core/index/brute_force_search.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"
#include "tests/support/test_helpers.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

std::vector<Neighbor> KnnOf(const CoverTree& tree, std::span<const double> q,
                            std::size_t k) {
  std::vector<Neighbor> out;
  EXPECT_TRUE(tree.Knn(q, k, &out).ok());
  return out;
}

// After a sequence of changes: the tree keeps its invariants, holds what
// the reference holds, and answers k-NN queries on every `stride`-th
// reference point (up to `count` of them) exactly as the reference does.
void ExpectValidAndExact(const CoverTree& tree, const BruteForceSearch& brute,
                         std::size_t count, std::size_t stride, std::size_t k) {
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
  EXPECT_EQ(tree.size(), brute.size());
  for (std::size_t q = 0; q < count && q * stride < brute.size(); ++q) {
    const std::span<const double> query = brute.point(q * stride);
    EXPECT_EQ(KnnOf(tree, query, k), brute.Knn(query, k)) << "query " << q;
  }
}

TEST(CoverTreeErrors, RejectsBadPointsAndLeavesTreeUnchanged) {
  CoverTree tree(3);
  ASSERT_TRUE(tree.Insert(1, std::vector<double>{1, 2, 3}).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();

  absl::Status s = tree.Insert(2, std::vector<double>{1, nan, 3});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("point id 2"));
  EXPECT_THAT(s.message(), HasSubstr("coordinate 1 is NaN"));

  s = tree.Insert(3, std::vector<double>{inf, 0, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("coordinate 0"));

  s = tree.Insert(4, std::vector<double>{1, 2});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("has 2 coordinates, the index has 3"));

  s = tree.Insert(1, std::vector<double>{0, 0, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);

  EXPECT_EQ(tree.Remove(99).code(), absl::StatusCode::kNotFound);

  std::vector<Neighbor> out;
  EXPECT_EQ(tree.Knn(std::vector<double>{nan, 0, 0}, 1, &out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tree.Range(std::vector<double>{0, 0, 0}, -1.0, &out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tree.Range(std::vector<double>{0, 0, 0}, nan, &out).code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(tree.size(), 1u);
  EXPECT_TRUE(tree.Contains(1));
  EXPECT_FALSE(tree.Contains(2));
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(CoverTreeErrors, BuildValidatesEverythingFirst) {
  const std::vector<double> coords = {0, 0, 1, 1, 2, 2};
  EXPECT_EQ(CoverTree::Build(2, coords, std::vector<std::uint64_t>{1, 2, 1})
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CoverTree::Build(2, coords, std::vector<std::uint64_t>{1, 2})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<double> bad = coords;
  bad[3] = std::numeric_limits<double>::quiet_NaN();
  const absl::Status s =
      CoverTree::Build(2, bad, std::vector<std::uint64_t>{1, 2, 3}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("point 1 (id 2)"));
  EXPECT_EQ(CoverTree::Build(0, {}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<CoverTree> empty = CoverTree::Build(4, {}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
}

// An owner going away abandons its background builds: a build whose stop is
// requested fails with Cancelled instead of inserting its points, whichever
// way it is asked for; with a stop that is never requested it builds.
TEST(CoverTreeBuild, GivesUpWhenItsStopIsRequested) {
  const PointSet points = ClusteredPoints(5000, 4, 5, 3);
  const std::vector<std::uint64_t> ids = SequentialIds(points.size());
  std::stop_source stop;
  stop.request_stop();
  const absl::Status copied =
      CoverTree::Build(4, points.coordinates, ids,
                       CoverTree::InsertionOrder::kShuffled, stop.get_token())
          .status();
  EXPECT_EQ(copied.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(copied.message(), HasSubstr("abandoned after 0 of 5000"));

  std::vector<const double*> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    rows.push_back(points.point(i).data());
  }
  const DiagonalMap map({0, 0, 0, 0}, {1, 2, 3, 4});
  EXPECT_EQ(
      CoverTree::BuildReferencing(
          map, rows, ids, CoverTree::InsertionOrder::kAsGiven, stop.get_token())
          .status()
          .code(),
      absl::StatusCode::kCancelled);

  const CoverTree built = *CoverTree::Build(
      4, points.coordinates, ids, CoverTree::InsertionOrder::kShuffled,
      std::stop_source().get_token());
  EXPECT_EQ(built.size(), points.size());
  EXPECT_EQ(
      built.BuildLike(built.CopyPoints(), stop.get_token()).status().code(),
      absl::StatusCode::kCancelled);
  EXPECT_EQ(built.BuildLike(built.CopyPoints())->size(), points.size());
}

TEST(CoverTreeDuplicates, ThousandsOfIdenticalPoints) {
  const std::size_t dim = 5;
  CoverTree tree(dim);
  BruteForceSearch brute(dim);
  const std::vector<double> same = {0.5, -1.0, 2.0, 0.0, 3.25};
  for (std::uint64_t id = 5000; id > 0; --id) {  // descending: ties by id
    ASSERT_TRUE(tree.Insert(id, same).ok());
    brute.Add(id, same);
  }
  const PointSet others = UniformPoints(300, dim, 3);
  for (std::size_t i = 0; i < others.size(); ++i) {
    ASSERT_TRUE(tree.Insert(10000 + i, others.point(i)).ok());
    brute.Add(10000 + i, others.point(i));
  }
  EXPECT_EQ(tree.node_count(), 301u);
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
  std::vector<Neighbor> expected;
  for (std::uint64_t id = 1; id <= 10; ++id) expected.push_back({id, 0.0});
  EXPECT_EQ(KnnOf(tree, same, 10), expected);
  EXPECT_EQ(KnnOf(tree, same, 5100), brute.Knn(same, 5100));

  // Remove the smallest ids, including the one the node was created with.
  for (std::uint64_t id = 1; id <= 2500; ++id) {
    ASSERT_TRUE(tree.Remove(id).ok());
    ASSERT_TRUE(brute.Remove(id));
  }
  ASSERT_TRUE(tree.Remove(5000).ok());
  ASSERT_TRUE(brute.Remove(5000));
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
  EXPECT_EQ(KnnOf(tree, same, 3),
            (std::vector<Neighbor>{{2501, 0.0}, {2502, 0.0}, {2503, 0.0}}));
  EXPECT_EQ(KnnOf(tree, others.point(7), 3000),
            brute.Knn(others.point(7), 3000));
  std::vector<Neighbor> in_range;
  ASSERT_TRUE(tree.Range(same, 0.0, &in_range).ok());
  EXPECT_EQ(in_range.size(), 2499u);
}

TEST(CoverTreeDuplicates, RemovedIdComesBackElsewhere) {
  CoverTree tree(2);
  ASSERT_TRUE(tree.Insert(1, std::vector<double>{0, 0}).ok());
  ASSERT_TRUE(tree.Insert(2, std::vector<double>{1, 0}).ok());
  ASSERT_TRUE(tree.Remove(1).ok());
  ASSERT_TRUE(tree.Insert(1, std::vector<double>{5, 5}).ok());
  EXPECT_EQ(KnnOf(tree, std::vector<double>{5, 5}, 1),
            (std::vector<Neighbor>{{1, 0.0}}));
  double scratch[2];
  const std::span<const double> p = tree.PointOf(1, scratch);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], 5.0);
  EXPECT_TRUE(tree.PointOf(3, scratch).empty());
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

// Distinct points far closer than any representable covering radius, and
// points near the coordinate limit; scales where the nodes' float distances
// (NodeDistance) are subnormal (1e-41), near the float range's end (1e37,
// 1e38) or beyond it (1e140): answers stay exact, queries stored or not,
// before and after removals.
TEST(CoverTreeExtremes, TinyAndHugeScales) {
  for (double scale : {1e-300, 1e-170, 1e-41, 1e-12, 1.0, 1e37, 1e38, 1e140}) {
    CoverTree tree(3);
    BruteForceSearch brute(3);
    const PointSet points = UniformPoints(200, 3, 17);
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::vector<double> p(points.point(i).begin(), points.point(i).end());
      // Around 1 at scale 1e-12 (differences of a few thousand ulps);
      // elsewhere around 0, where 1e-300 and 1e-170 make squared
      // differences underflow.
      const double offset = scale == 1e-12 ? 1.0 : 0.0;
      for (double& x : p) x = offset + x * scale;
      ASSERT_TRUE(tree.Insert(i, p).ok());
      brute.Add(i, p);
    }
    ASSERT_TRUE(tree.CheckInvariants().ok())
        << "scale " << scale << ": " << tree.CheckInvariants();
    const PointSet queries = UniformPoints(20, 3, 18);
    const auto expect_exact = [&] {
      for (std::size_t i = 0; i < 20; ++i) {
        EXPECT_EQ(KnnOf(tree, brute.point(i), 15),
                  brute.Knn(brute.point(i), 15))
            << "scale " << scale;
        std::vector<double> q(queries.point(i).begin(), queries.point(i).end());
        for (double& x : q) x = (scale == 1e-12 ? 1.0 : 0.0) + x * scale;
        EXPECT_EQ(KnnOf(tree, q, 15), brute.Knn(q, 15)) << "scale " << scale;
      }
    };
    expect_exact();
    for (std::size_t i = 0; i < 200; i += 3) {
      ASSERT_TRUE(tree.Remove(i).ok());
      ASSERT_TRUE(brute.Remove(i));
    }
    ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
    expect_exact();
  }
}

TEST(NodeDistance, RoundsAParentDistanceToNearAndABoundUp) {
  for (double d : {0.0, 1e-320, 1e-41, 0.1, 1.0 / 3.0, 2.0, 1e30, 3.4e38}) {
    const float nearest = NodeDistance::Nearest(d);
    EXPECT_EQ(nearest, static_cast<float>(d)) << d;
    // A bound: the least float at or above d.
    const float above = NodeDistance::Above(d);
    EXPECT_GE(static_cast<double>(above), d) << d;
    if (above > 0) {
      EXPECT_LT(static_cast<double>(std::nextafter(above, 0.0f)), d) << d;
    }
    // The float after the nearest is at or above the distance.
    EXPECT_GE(static_cast<double>(NodeDistance::NextUp(nearest)), d) << d;
    EXPECT_EQ(NodeDistance::NextUp(nearest),
              std::nextafter(nearest, std::numeric_limits<float>::infinity()));
  }
  const float infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(NodeDistance::Nearest(1e39), infinity);
  EXPECT_EQ(NodeDistance::Above(1e300), infinity);
  EXPECT_EQ(NodeDistance::NextUp(infinity), infinity);
  EXPECT_TRUE(std::isnan(
      NodeDistance::Nearest(std::numeric_limits<double>::quiet_NaN())));
}

// Coordinates whose differences underflow: distinct points at computed
// distance 0 share the floor level and are still all found.
TEST(CoverTreeExtremes, DistinctPointsAtComputedDistanceZero) {
  CoverTree tree(2);
  BruteForceSearch brute(2);
  for (std::uint64_t i = 0; i < 50; ++i) {
    const std::vector<double> p = {1e-200 * static_cast<double>(i), 0.0};
    ASSERT_TRUE(tree.Insert(i, p).ok());
    brute.Add(i, p);
  }
  ASSERT_TRUE(tree.Insert(100, std::vector<double>{1.0, 1.0}).ok());
  brute.Add(100, std::vector<double>{1.0, 1.0});
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
  const std::vector<double> origin = {0.0, 0.0};
  EXPECT_EQ(KnnOf(tree, origin, 51), brute.Knn(origin, 51));
  // Exact copies of points at the floor level join their nodes.
  for (std::uint64_t i = 0; i < 50; ++i) {
    const std::vector<double> p = {1e-200 * static_cast<double>(i), 0.0};
    ASSERT_TRUE(tree.Insert(1000 + i, p).ok());
    brute.Add(1000 + i, p);
  }
  EXPECT_EQ(tree.node_count(), 51u);
  for (std::uint64_t i = 0; i < 50; i += 2) ASSERT_TRUE(tree.Remove(i).ok());
  for (std::uint64_t i = 0; i < 50; i += 2) ASSERT_TRUE(brute.Remove(i));
  EXPECT_EQ(KnnOf(tree, origin, 101), brute.Knn(origin, 101));
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
}

TEST(CoverTreeMemory, GrowsWithPointsAndIsReportedPerByte) {
  CoverTree tree(21);
  const std::size_t empty = tree.MemoryUsage();
  const PointSet points = ArmPoints(5000, 7, 1);
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(tree.Insert(i, points.point(i)).ok());
  }
  const std::size_t full = tree.MemoryUsage();
  // At least the coordinates themselves, and not absurdly more.
  EXPECT_GE(full - empty, 5000u * 21 * sizeof(double));
  EXPECT_LE(full - empty, 5000u * (21 * sizeof(double) + 256));
}

// The adaptive strategy walks the tree where it prunes and scans where it
// cannot (uniform points in 32 dimensions), answering exactly either way.
TEST(CoverTreeStrategy, AdaptiveScansWhereTheTreeCannotPrune) {
  const PointSet uniform = UniformPoints(3000, 32, 21);
  const PointSet trajectory = ArmPoints(3000, 7, 22);
  const CoverTree flat =
      *CoverTree::Build(32, uniform.coordinates, SequentialIds(3000));
  const CoverTree curve =
      *CoverTree::Build(21, trajectory.coordinates, SequentialIds(3000));
  const BruteForceSearch brute = BruteForceOver(uniform);
  const PointSet queries = UniformPoints(600, 32, 23);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    ASSERT_EQ(KnnOf(flat, queries.point(q), 5), brute.Knn(queries.point(q), 5));
    (void)KnnOf(curve, trajectory.point(q * 5), 5);
  }
  EXPECT_GT(flat.search_fraction(), PruningMonitor::kScanAbove);
  EXPECT_LT(curve.search_fraction(), 0.1);
  // Building the flat tree stopped indexing once the tree was big enough
  // and could not prune; the curve was indexed throughout.
  EXPECT_GT(flat.unindexed_count(), 1000u);
  EXPECT_EQ(curve.unindexed_count(), 0u);
  EXPECT_TRUE(flat.CheckInvariants().ok()) << flat.CheckInvariants();
}

// A flat index (kScan) keeps every new point outside the tree; switched to
// kTree, insertions move those points into the tree two at a time.
TEST(CoverTreeStrategy, UnindexedPointsJoinTheTreeWhenWalkingResumes) {
  const PointSet points = ClusteredPoints(900, 4, 8, 61);
  CoverTree tree(4);
  BruteForceSearch brute(4);
  tree.set_strategy(CoverTree::Strategy::kScan);
  for (std::size_t i = 0; i < 600; ++i) {
    const std::span<const double> p = points.point(i % 400);  // duplicates
    ASSERT_TRUE(tree.Insert(i, p).ok());
    brute.Add(i, p);
  }
  EXPECT_EQ(tree.unindexed_count(), tree.node_count());
  for (std::size_t i = 0; i < 600; i += 7) {
    ASSERT_TRUE(tree.Remove(i).ok());
    ASSERT_TRUE(brute.Remove(i));
  }
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
  EXPECT_EQ(KnnOf(tree, points.point(5), 9), brute.Knn(points.point(5), 9));

  tree.set_strategy(CoverTree::Strategy::kTree);
  for (std::size_t i = 600; i < 900; ++i) {
    ASSERT_TRUE(tree.Insert(i, points.point(i)).ok());
    brute.Add(i, points.point(i));
  }
  EXPECT_EQ(tree.unindexed_count(), 0u);
  ExpectValidAndExact(tree, brute, 60, 13, 9);
}

// A run of k-NN queries teaches the tree a radius cap; queries far from the
// data then overrun it and must be answered by the uncapped retry, and the
// next near queries by the cap again — always exactly.
TEST(CoverTreeKnn, RadiusCapAndRetryAnswerExactly) {
  const PointSet points = ClusteredPoints(4000, 5, 30, 41);
  const CoverTree tree =
      *CoverTree::Build(5, points.coordinates, SequentialIds(points.size()));
  const BruteForceSearch brute = BruteForceOver(points);
  const PointSet near = ClusteredPoints(300, 5, 30, 41);  // same clusters
  const PointSet far = UniformPoints(20, 5, 42);
  std::vector<double> query(5);
  for (std::size_t q = 0; q < near.size(); ++q) {
    ASSERT_EQ(KnnOf(tree, near.point(q), 7), brute.Knn(near.point(q), 7));
    if (q % 15 == 14) {
      const std::span<const double> f = far.point(q / 15);
      for (std::size_t j = 0; j < 5; ++j) query[j] = 3.0 + 5.0 * f[j];
      ASSERT_EQ(KnnOf(tree, query, 7), brute.Knn(query, 7)) << "far " << q;
    }
  }
  // A change of k starts a new estimate.
  for (std::size_t q = 0; q < 50; ++q) {
    ASSERT_EQ(KnnOf(tree, near.point(q), 40), brute.Knn(near.point(q), 40));
  }
}

// Insertion looks for a parent near recent parent distances first; points
// far from everything (outliers after a dense stream) need the full search.
TEST(CoverTreeInsert, OutliersAfterADenseStreamKeepTheInvariants) {
  const PointSet dense = ArmPoints(2000, 2, 51);  // tiny steps
  CoverTree tree(6);
  BruteForceSearch brute(6);
  std::uint64_t id = 0;
  for (std::size_t i = 0; i < dense.size(); ++i, ++id) {
    ASSERT_TRUE(tree.Insert(id, dense.point(i)).ok());
    brute.Add(id, dense.point(i));
    if (i % 200 == 199) {  // an outlier, then the stream goes on
      std::vector<double> far(dense.point(i).begin(), dense.point(i).end());
      far[i % 6] += 50.0 + static_cast<double>(i);
      ++id;
      ASSERT_TRUE(tree.Insert(id, far).ok());
      brute.Add(id, far);
    }
  }
  ExpectValidAndExact(tree, brute, 100, 19, 4);
}

TEST(CoverTreeBuild, BatchBuildAnswersLikeIncremental) {
  const PointSet points = ClusteredPoints(3000, 6, 20, 5);
  std::vector<std::uint64_t> ids(points.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 3 * i + 1;
  absl::StatusOr<CoverTree> built =
      CoverTree::Build(6, points.coordinates, ids);
  ASSERT_TRUE(built.ok());
  CoverTree incremental(6);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(incremental.Insert(ids[i], points.point(i)).ok());
  }
  ASSERT_TRUE(built->CheckInvariants().ok()) << built->CheckInvariants();
  ASSERT_TRUE(incremental.CheckInvariants().ok());
  const PointSet queries = UniformPoints(100, 6, 6);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    EXPECT_EQ(KnnOf(*built, queries.point(q), 10),
              KnnOf(incremental, queries.point(q), 10));
  }
}

}  // namespace
}  // namespace streamreg
