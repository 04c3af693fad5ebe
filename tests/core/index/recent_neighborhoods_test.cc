// Unit tests of RecentNeighborhoods (the stored points kept around recent
// queries) and of the cover tree's k-NN searches answered from them: an
// answer from a ball is the brute-force answer or no answer, and stays so
// as points are inserted and removed.

#include "core/index/recent_neighborhoods.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "core/index/brute_force_search.h"
#include "core/index/cover_tree.h"
#include "core/index/euclidean_distance.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"
#include "tests/support/test_helpers.h"

namespace streamreg {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Keeps the ball of `brute`'s points within `radius` of `center`.
void KeepBall(const RecentNeighborhoods& kept, const BruteForceSearch& brute,
              std::span<const double> center, double radius) {
  const std::vector<Neighbor> within = brute.Range(center, radius);
  std::vector<double> row(brute.dim());
  kept.Keep(center, radius, within, [&](std::uint64_t id) -> const double* {
    for (std::size_t i = 0; i < brute.size(); ++i) {
      if (brute.id(i) == id) return brute.point(i).data();
    }
    ADD_FAILURE() << "no point " << id;
    return row.data();
  });
}

// Along a controller's ticks from the ball's centre, every answer the ball
// gives is brute force's; it answers near its centre and stops answering
// once the ticks have left it.
TEST(RecentNeighborhoodsTest, AnswersExactlyNearItsCentreAndNotBeyond) {
  const std::size_t n = 3000;
  const PointSet points = ArmPoints(n, 3, 5);
  const PointSet ticks = ArmTicks(n, 3, 400, 5);
  const BruteForceSearch brute = BruteForceOver(points);
  RecentNeighborhoods kept(points.dim);
  std::vector<Neighbor> got;
  EXPECT_EQ(kept.MemoryUsage(), 0u);
  EXPECT_FALSE(kept.Knn(ticks.point(0), 1, kInfinity, 0.0, &got));
  const double radius = brute.Knn(ticks.point(0), 60).back().distance;
  KeepBall(kept, brute, ticks.point(0), radius);
  std::size_t answered = 0, last_answered = 0;
  for (std::size_t t = 0; t < ticks.size(); ++t) {
    for (const std::size_t k : {1, 8, 24}) {
      const std::span<const double> q = ticks.point(t);
      if (kept.Knn(q, k, kInfinity, 0.0, &got)) {
        ASSERT_EQ(got, brute.Knn(q, k)) << "tick " << t << ", k " << k;
        ++answered;
        last_answered = t;
      }
    }
  }
  EXPECT_GE(kept.MemoryUsage(), 60 * (points.dim + 1) * sizeof(double));
  // At its centre it holds for every k below the points it has; the
  // farthest of them lies on its edge, which it cannot vouch for (another
  // point could lie there too, beyond the rounding's margin).
  ASSERT_TRUE(kept.Knn(ticks.point(0), 59, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(ticks.point(0), 59));
  EXPECT_FALSE(kept.Knn(ticks.point(0), 60, kInfinity, 0.0, &got));
  EXPECT_GT(answered, 30u);
  EXPECT_LT(last_answered, ticks.size() - 1);
  // A cap below the k-th distance, or a likely k-th distance beyond the
  // ball, and it does not answer.
  const double kth = brute.Knn(ticks.point(0), 24).back().distance;
  EXPECT_FALSE(kept.Knn(ticks.point(0), 24, 0.99 * kth, 0.0, &got));
  EXPECT_FALSE(kept.Knn(ticks.point(0), 24, kInfinity, 2.0 * radius, &got));
  EXPECT_TRUE(kept.Knn(ticks.point(0), 24, kth, kth, &got));
}

// A query near the ball's edge has neighbours outside it: the ball answers
// only for as far as it reaches past the query (its radius less the
// query's distance to the centre), so it answers exactly or not at all.
TEST(RecentNeighborhoodsTest, DoesNotAnswerForNeighboursBeyondItsEdge) {
  const std::size_t n = 3000, k = 8;
  const PointSet points = ArmPoints(n, 3, 21);
  const BruteForceSearch brute = BruteForceOver(points);
  RecentNeighborhoods kept(points.dim);
  const std::span<const double> center = points.point(500);
  const std::vector<Neighbor> ball = brute.Knn(center, 41);
  const double radius = ball.back().distance;
  KeepBall(kept, brute, center, radius);
  std::size_t outside = 0;  // queries with a neighbour outside the ball
  std::vector<Neighbor> got;
  for (const Neighbor& inside : ball) {
    const std::vector<double> q(points.point(inside.id).begin(),
                                points.point(inside.id).end());
    const std::vector<Neighbor> exact = brute.Knn(q, k);
    for (const Neighbor& neighbor : exact) {
      const std::span<const double> p = points.point(neighbor.id);
      if (EuclideanDistance(p.data(), center.data(), p.size()) > radius) {
        ++outside;
        break;
      }
    }
    if (kept.Knn(q, k, kInfinity, 0.0, &got)) {
      EXPECT_EQ(got, exact) << "query " << inside.id;
    }
  }
  EXPECT_GT(outside, 5u);
}

// Points stored or removed after a ball was kept show in its answers.
TEST(RecentNeighborhoodsTest, InsertedAndRemovedPointsChangeItsAnswers) {
  const std::size_t n = 2000;
  const PointSet points = ArmPoints(n, 3, 9);
  BruteForceSearch brute = BruteForceOver(points);
  RecentNeighborhoods kept(points.dim);
  const std::span<const double> center = points.point(100);
  const double radius = brute.Knn(center, 40).back().distance;
  KeepBall(kept, brute, center, radius);
  const RecentNeighborhoods copy = kept;
  std::vector<Neighbor> got;

  // A new point at the centre is everyone's nearest.
  std::vector<double> added(center.begin(), center.end());
  added[0] += 1e-6;
  kept.Inserted(n, added.data());
  brute.Add(n, added);
  ASSERT_TRUE(kept.Knn(center, 5, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(center, 5));
  EXPECT_EQ(got[1].id, n);
  // A point far away joins no ball.
  std::vector<double> far(center.begin(), center.end());
  far[0] += 100.0;
  kept.Inserted(n + 1, far.data());
  brute.Add(n + 1, far);
  ASSERT_TRUE(kept.Knn(center, 20, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(center, 20));

  // The nearest ten go: the ball's answer is the next ten and more.
  for (const Neighbor& gone : brute.Knn(center, 10)) {
    std::vector<double> row;
    for (std::size_t i = 0; i < brute.size(); ++i) {
      if (brute.id(i) == gone.id) {
        row.assign(brute.point(i).begin(), brute.point(i).end());
      }
    }
    kept.Removed(gone.id, row.data());
    ASSERT_TRUE(brute.Remove(gone.id));
  }
  ASSERT_TRUE(kept.Knn(center, 20, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(center, 20));
  // It holds 31 now (40 and the new one, less ten), the last on its edge.
  EXPECT_TRUE(kept.Knn(center, 30, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(center, 30));
  EXPECT_FALSE(kept.Knn(center, 31, kInfinity, 0.0, &got));

  // The copy, taken before, saw none of it.
  ASSERT_TRUE(copy.Knn(center, 39, kInfinity, 0.0, &got));
  EXPECT_EQ(got, BruteForceOver(points).Knn(center, 39));
}

// Two callers' balls are both kept beside others; a new caller far from all
// takes the least recently used ball's place.
TEST(RecentNeighborhoodsTest, KeepsEachCallersBallAndDropsTheLeastUsed) {
  const std::size_t n = 2000;
  const PointSet points = ArmPoints(n, 3, 13);
  const BruteForceSearch brute = BruteForceOver(points);
  RecentNeighborhoods kept(points.dim);
  std::vector<Neighbor> got;
  const std::span<const double> a = points.point(10), b = points.point(1500);
  KeepBall(kept, brute, a, brute.Knn(a, 21).back().distance);
  KeepBall(kept, brute, b, brute.Knn(b, 21).back().distance);
  std::size_t far = 0;
  const auto keep_far = [&] {
    std::vector<double> center(a.begin(), a.end());
    center[0] += 1000.0 * static_cast<double>(++far);
    kept.Keep(center, 1.0, {},
              [](std::uint64_t) -> const double* { return nullptr; });
  };
  // Six more fill the eight places, and a ninth replaces the oldest of
  // them (a and b were used since).
  for (std::size_t i = 0; i < RecentNeighborhoods::kBalls - 2; ++i) {
    keep_far();
  }
  ASSERT_TRUE(kept.Knn(a, 20, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(a, 20));
  ASSERT_TRUE(kept.Knn(b, 20, kInfinity, 0.0, &got));
  EXPECT_EQ(got, brute.Knn(b, 20));
  keep_far();
  EXPECT_TRUE(kept.Knn(a, 20, kInfinity, 0.0, &got));
  EXPECT_TRUE(kept.Knn(b, 20, kInfinity, 0.0, &got));
  // Seven more: the six far ones older than a and b go first, then a
  // (used before b).
  for (int i = 0; i < 7; ++i) keep_far();
  EXPECT_FALSE(kept.Knn(a, 20, kInfinity, 0.0, &got));
  EXPECT_TRUE(kept.Knn(b, 20, kInfinity, 0.0, &got));
}

// The cover tree answers a caller's repeated and nearby searches from the
// points it kept (at a smaller k, at the same state again, at the next
// tick) exactly as brute force does, while points are stored and removed
// between them.
TEST(CoverTreeKnn, SearchesFromKeptPointsStayExactAsTheTreeChanges) {
  const std::size_t n = 4000;
  const PointSet points = ArmPoints(n, 3, 17);
  const PointSet ticks = ArmTicks(n, 3, 200, 17);
  CoverTree tree = GrownCoverTree(points);
  BruteForceSearch brute = BruteForceOver(points);
  std::vector<Neighbor> got;
  std::uint64_t next_id = n;
  for (std::size_t t = 0; t < ticks.size(); ++t) {
    const std::span<const double> q = ticks.point(t);
    ASSERT_TRUE(tree.Knn(q, 24, &got).ok());
    ASSERT_EQ(got, brute.Knn(q, 24)) << "tick " << t;
    // A point stored right at the state, then the same state at a smaller
    // k: the kept points must have taken it in.
    std::vector<double> near(q.begin(), q.end());
    near[t % near.size()] += 1e-7;
    ASSERT_TRUE(tree.Insert(next_id, near).ok());
    brute.Add(next_id, near);
    ++next_id;
    ASSERT_TRUE(tree.Knn(q, 8, &got).ok());
    ASSERT_EQ(got, brute.Knn(q, 8)) << "tick " << t << " after a store";
    // Its nearest two removed, and the state again.
    if (t % 2 == 1) {
      for (const Neighbor& gone : brute.Knn(q, 2)) {
        ASSERT_TRUE(tree.Remove(gone.id).ok());
        ASSERT_TRUE(brute.Remove(gone.id));
      }
      ASSERT_TRUE(tree.Knn(q, 8, &got).ok());
      ASSERT_EQ(got, brute.Knn(q, 8)) << "tick " << t << " after removals";
    }
  }
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

}  // namespace
}  // namespace streamreg
