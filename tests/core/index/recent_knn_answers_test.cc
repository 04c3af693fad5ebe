// Unit tests of RecentKnnAnswers (the caps a search near a recent answer
// starts with) and of the cover tree's k-NN searches that use them: a cap
// is the triangle inequality's bound, held per source and k; a search whose
// cap no longer holds is retried, and answers stay exact.

#include "core/index/recent_knn_answers.h"

#include <algorithm>
#include <cmath>
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

// The reach of an answer (query p, k-th distance r) for a query q:
// |q - p| + r, the cap RecentKnnAnswers gives up to its rounding margin.
double Reach(std::span<const double> q, std::span<const double> p, double r) {
  return EuclideanDistance(q.data(), p.data(), q.size()) + r;
}

// On a controller's ticks the cap holds (it is at least the exact k-th
// distance), is no looser than the triangle inequality's bound from the
// last tick's answer, and is close to the exact distance, which is what
// makes it worth having.
TEST(RecentKnnAnswersTest, ACapFromTheLastTickHoldsAndIsTight) {
  const std::size_t n = 6000, k = 32;
  const PointSet points = ArmPoints(n, 3, 7);
  const PointSet ticks = ArmTicks(n, 3, 300, 7);
  const BruteForceSearch brute = BruteForceOver(points);
  RecentKnnAnswers answers;
  EXPECT_EQ(answers.Cap(ticks.point(0), k), kInfinity);
  std::vector<double> excess;  // cap over the exact k-th distance
  double previous = 0.0;
  for (std::size_t t = 0; t < ticks.size(); ++t) {
    const std::span<const double> q = ticks.point(t);
    const double exact = brute.Knn(q, k).back().distance;
    if (t > 0) {
      const double cap = answers.Cap(q, k);
      const double reach = Reach(q, ticks.point(t - 1), previous);
      ASSERT_GE(cap, exact) << "tick " << t;
      EXPECT_LE(cap, reach * (1.0 + 1e-9)) << "tick " << t;
      excess.push_back(cap / exact);
    }
    answers.Record(q, k, exact);
    previous = exact;
  }
  std::sort(excess.begin(), excess.end());
  EXPECT_LT(excess[excess.size() / 2], 1.05);
  EXPECT_LT(excess.back(), 1.5);
}

// An answer caps searches for as many neighbours as it found or fewer, in
// its own source's coordinates and dimension only.
TEST(RecentKnnAnswersTest, CapsOnlyItsOwnSourceAndAtMostItsK) {
  RecentKnnAnswers answers;
  const std::vector<double> p = {0.0, 0.0};
  const std::vector<double> q = {3.0, 4.0};  // 5 from p
  answers.Record(p, 10, 1.0, /*source=*/1);
  EXPECT_NEAR(answers.Cap(p, 10, 1), 1.0, 1e-9);
  EXPECT_NEAR(answers.Cap(q, 10, 1), 6.0, 1e-9);
  EXPECT_NEAR(answers.Cap(q, 4, 1), 6.0, 1e-9);
  EXPECT_EQ(answers.Cap(q, 11, 1), kInfinity);
  EXPECT_EQ(answers.Cap(q, 10, 2), kInfinity);
  EXPECT_EQ(answers.Cap(std::vector<double>{3.0, 4.0, 0.0}, 10, 1), kInfinity);
  EXPECT_EQ(answers.Cap(q, 0, 1), kInfinity);
  // Of several answers, the tightest cap.
  answers.Record(q, 10, 0.5, 1);
  EXPECT_NEAR(answers.Cap(q, 10, 1), 0.5, 1e-9);
  // Nothing is learned from a search that found no k-th neighbour.
  answers.Record(p, 20, kInfinity, 1);
  EXPECT_EQ(answers.Cap(p, 20, 1), kInfinity);
  // A copy keeps the answers.
  const RecentKnnAnswers copy = answers;
  EXPECT_NEAR(copy.Cap(q, 10, 1), 0.5, 1e-9);
}

// Two callers' interleaved streams each keep their own latest answer in
// place (a state within its last answer's reach replaces it); a query far
// from every answer takes the oldest place.
TEST(RecentKnnAnswersTest, KeepsEachCallersLatestAnswer) {
  RecentKnnAnswers answers;
  std::vector<double> a = {0.0, 0.0}, b = {100.0, 0.0};
  for (int step = 0; step < 40; ++step) {
    a[1] += 0.1;
    b[1] -= 0.1;
    answers.Record(a, 8, 1.0);
    answers.Record(b, 8, 1.0);
  }
  // Six more callers, far from both and from each other: eight in all.
  for (int far = 1; far <= 6; ++far) {
    answers.Record(std::vector<double>{0.0, 1000.0 * far}, 8, 1.0);
  }
  std::vector<double> a_next = {0.0, a[1] + 0.1};
  std::vector<double> b_next = {100.0, b[1] - 0.1};
  EXPECT_NEAR(answers.Cap(a_next, 8), 1.1, 1e-9);
  EXPECT_NEAR(answers.Cap(b_next, 8), 1.1, 1e-9);
  // A ninth takes the oldest place: a's (recorded before b's last).
  answers.Record(std::vector<double>{0.0, -5000.0}, 8, 1.0);
  EXPECT_GT(answers.Cap(a_next, 8), 90.0);
  EXPECT_NEAR(answers.Cap(b_next, 8), 1.1, 1e-9);
}

// The cover tree's k-NN search on a controller's ticks answers as brute
// force does, also when the points of the last answer were removed (its
// cap then fails and the search is retried) and when the tree changes
// between ticks.
TEST(CoverTreeKnn, SearchesCappedByTheLastAnswerStayExact) {
  const std::size_t n = 4000, k = 24;
  const PointSet points = ArmPoints(n, 3, 11);
  const PointSet ticks = ArmTicks(n, 3, 240, 11);
  CoverTree tree = GrownCoverTree(points);
  BruteForceSearch brute = BruteForceOver(points);
  std::vector<Neighbor> got;
  for (std::size_t t = 0; t < ticks.size(); ++t) {
    const std::span<const double> q = ticks.point(t);
    ASSERT_TRUE(tree.Knn(q, k, &got).ok());
    ASSERT_EQ(got, brute.Knn(q, k)) << "tick " << t;
    if (t % 3 == 1) {
      // The answer's points go: the next tick's cap from it no longer holds.
      for (const Neighbor& neighbor : got) {
        ASSERT_TRUE(tree.Remove(neighbor.id).ok());
        ASSERT_TRUE(brute.Remove(neighbor.id));
      }
    } else if (t % 3 == 2) {
      // The tick itself is learned: the next tick's nearest.
      ASSERT_TRUE(tree.Insert(n + t, q).ok());
      brute.Add(n + t, q);
    }
  }
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

}  // namespace
}  // namespace streamreg
