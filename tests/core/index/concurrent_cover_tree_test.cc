// Many searching threads and one writer on a ConcurrentCoverTree. Run under
// ThreadSanitizer by the test command (preset "tsan"): a data race fails it.

#include "core/index/concurrent_cover_tree.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/index/brute_force_search.h"
#include "core/index/euclidean_distance.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"
#include "tests/support/test_helpers.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 6;

// Point i of the test's pool; a point's id is its pool index.
const PointSet& Pool() {
  static const PointSet pool = ClusteredPoints(4000, kDim, 10, 77);
  return pool;
}

// A search answer is consistent if it is sorted, within k, and every
// reported distance is the exact distance to the point with that id.
void ExpectConsistent(const std::vector<Neighbor>& got, std::size_t k,
                      std::span<const double> query) {
  ASSERT_LE(got.size(), k);
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_LT(got[i].id, Pool().size());
    ASSERT_EQ(
        got[i].distance,
        EuclideanDistance(query.data(), Pool().point(got[i].id).data(), kDim));
    if (i > 0) {
      ASSERT_TRUE(NeighborLess(got[i - 1], got[i]));
    }
  }
}

TEST(ConcurrentCoverTree, ReadersSeeConsistentAnswersWhileOneThreadWrites) {
  ConcurrentCoverTree tree(kDim);
  for (std::size_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(tree.Insert(i, Pool().point(i)).ok());
  }
  std::atomic<bool> done{false};
  std::atomic<std::size_t> searches{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      std::vector<Neighbor> got;
      std::size_t q = r;
      while (!done.load()) {
        const std::span<const double> query = Pool().point(q % Pool().size());
        ASSERT_TRUE(tree.Knn(query, 8, &got).ok());
        ExpectConsistent(got, 8, query);
        // The same state again, fewer neighbours: a caller moving along,
        // answered from the points kept around its last query.
        ASSERT_TRUE(tree.Knn(query, 4, &got).ok());
        ExpectConsistent(got, 4, query);
        ASSERT_TRUE(tree.Range(query, 0.05, &got).ok());
        ExpectConsistent(got, Pool().size(), query);
        searches.fetch_add(1);
        q += 7;
      }
    });
  }
  // The writer: grow to 4000 points, remove every third, rebuild midway.
  for (std::size_t i = 1000; i < 4000; ++i) {
    ASSERT_TRUE(tree.Insert(i, Pool().point(i)).ok());
    if (i % 3 == 0) {
      ASSERT_TRUE(tree.Remove(i - 500).ok());
    }
    if (i == 2500) tree.Rebuild();
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_GT(searches.load(), 0u);

  // Quiescent: the answers are exact.
  BruteForceSearch brute(kDim);
  tree.Read([&](const CoverTree& t) {
    t.ForEachPoint(
        [&](std::uint64_t id, std::span<const double> p) { brute.Add(id, p); });
    EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
    return 0;
  });
  EXPECT_EQ(brute.size(), tree.size());
  std::vector<Neighbor> got;
  for (std::size_t q = 0; q < 200; ++q) {
    ASSERT_TRUE(tree.Knn(Pool().point(q * 17 % 4000), 10, &got).ok());
    EXPECT_EQ(got, brute.Knn(Pool().point(q * 17 % 4000), 10));
  }
}

// A rebuild builds its tree with no lock held: searches started while it
// runs complete before it ends.
TEST(ConcurrentCoverTree, SearchesProceedDuringRebuild) {
  const PointSet points = UniformPoints(12000, kDim, 5);
  ConcurrentCoverTree tree(*CoverTree::Build(kDim, points.coordinates,
                                             SequentialIds(points.size())));
  std::atomic<int> phase{0};  // 0 before, 1 during, 2 after the rebuild
  std::thread rebuilder([&] {
    phase.store(1);
    tree.Rebuild();
    phase.store(2);
  });
  while (phase.load() == 0) std::this_thread::yield();
  std::size_t completed_during = 0;
  std::vector<Neighbor> got;
  for (std::size_t q = 0; phase.load() == 1; ++q) {
    ASSERT_TRUE(tree.Knn(points.point(q % points.size()), 5, &got).ok());
    if (phase.load() == 1) ++completed_during;
  }
  rebuilder.join();
  // A lock held across the build would let through at most the searches
  // that slipped in before it was taken.
  EXPECT_GT(completed_during, 20u);
  EXPECT_EQ(tree.size(), points.size());
}

// A tree grown point by point is rebuilt in the background each time it
// doubles, while readers search and the writer keeps writing; no write is
// lost across the swaps.
TEST(ConcurrentCoverTree, BackgroundRebuildsKeepEveryWrite) {
  ConcurrentCoverTree::Options options;
  options.rebuild_min_size = 256;
  ConcurrentCoverTree tree(kDim, options);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::vector<Neighbor> got;
    for (std::size_t q = 0; !done.load(); q += 13) {
      const std::span<const double> query = Pool().point(q % Pool().size());
      ASSERT_TRUE(tree.Knn(query, 6, &got).ok());
      ExpectConsistent(got, 6, query);
    }
  });
  for (std::size_t i = 0; i < 4000; ++i) {
    ASSERT_TRUE(tree.Insert(i, Pool().point(i)).ok());
    if (i % 5 == 4) {
      ASSERT_TRUE(tree.Remove(i - 2).ok());
    }
  }
  tree.WaitForBackgroundRebuild();
  done.store(true);
  reader.join();
  // The first doubling (at 256 points) surely started a rebuild, and it
  // finished; how many later ones ran depends on how fast builds are (a
  // doubling during a rebuild waits for it), so only one is certain.
  EXPECT_GE(tree.rebuild_count(), 1u);

  BruteForceSearch brute(kDim);
  for (std::size_t i = 0; i < 4000; ++i) {
    if (i % 5 != 2) brute.Add(i, Pool().point(i));
  }
  EXPECT_EQ(tree.size(), brute.size());
  tree.Read([&](const CoverTree& t) {
    EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
    return 0;
  });
  std::vector<Neighbor> got;
  for (std::size_t q = 0; q < 300; ++q) {
    const std::span<const double> query = Pool().point(q * 11 % 4000);
    ASSERT_TRUE(tree.Knn(query, 9, &got).ok());
    EXPECT_EQ(got, brute.Knn(query, 9));
  }
}

// A tree destroyed while it rebuilds in the background abandons the build
// (its stop is requested; the builder gives up and touches nothing of the
// tree after that); under the sanitizers a use of the destroyed tree, or a
// builder left running, fails the test.
TEST(ConcurrentCoverTree, ADestroyedTreeAbandonsItsBackgroundRebuild) {
  ConcurrentCoverTree::Options options;
  options.rebuild_min_size = 256;
  // Each size doubles the last build's (a rebuild begins at its insertion)
  // but the last, which may come during the previous rebuild.
  for (std::size_t size : {256, 512, 1024, 2048, 3999}) {
    auto tree = std::make_unique<ConcurrentCoverTree>(kDim, options);
    for (std::size_t i = 0; i < size; ++i) {
      ASSERT_TRUE(tree->Insert(i, Pool().point(i)).ok());
    }
    tree.reset();
  }
}

// A tree about to be replaced builds nothing more: while suspended it grows
// past every rebuild point without a rebuild, a rebuild in flight when it
// is suspended is given up or finished (never waited for), every write is
// kept either way, and once resumed the next write due starts one again.
TEST(ConcurrentCoverTree, ASuspendedTreeStartsNoRebuildAndKeepsEveryWrite) {
  ConcurrentCoverTree::Options options;
  options.rebuild_min_size = 256;
  ConcurrentCoverTree tree(kDim, options);
  for (std::size_t i = 0; i < 256; ++i) {  // a rebuild starts at 256
    ASSERT_TRUE(tree.Insert(i, Pool().point(i)).ok());
  }
  tree.SuspendRebuilds();
  tree.WaitForBackgroundRebuild();
  const std::size_t before = tree.rebuild_count();
  EXPECT_LE(before, 1u);
  for (std::size_t i = 256; i < 3000; ++i) {
    ASSERT_TRUE(tree.Insert(i, Pool().point(i)).ok());
  }
  tree.WaitForBackgroundRebuild();
  EXPECT_EQ(tree.rebuild_count(), before);

  tree.ResumeRebuilds();  // 3000 points: more than twice the last build
  tree.WaitForBackgroundRebuild();
  EXPECT_EQ(tree.rebuild_count(), before + 1);
  BruteForceSearch brute(kDim);
  for (std::size_t i = 0; i < 3000; ++i) brute.Add(i, Pool().point(i));
  EXPECT_EQ(tree.size(), brute.size());
  tree.Read([&](const CoverTree& t) {
    EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
    return 0;
  });
  std::vector<Neighbor> got;
  for (std::size_t q = 0; q < 200; ++q) {
    const std::span<const double> query = Pool().point(q * 7 % 4000);
    ASSERT_TRUE(tree.Knn(query, 9, &got).ok());
    EXPECT_EQ(got, brute.Knn(query, 9));
  }
}

}  // namespace
}  // namespace streamreg
