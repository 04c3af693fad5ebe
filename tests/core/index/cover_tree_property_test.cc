// Property tests: the cover tree against a brute-force scan, on random and
// adversarial data, under random interleavings of insert, remove and query.
// Every k-NN and range answer must be identical (ids and distances); the
// cover-tree invariants are checked along the way.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/index/brute_force_search.h"
#include "core/index/cover_tree.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"

namespace streamreg {

// Names the strategy in test names and failure messages.
void PrintTo(CoverTree::Strategy strategy, std::ostream* os) {
  static constexpr const char* kNames[] = {"adaptive", "tree", "scan"};
  *os << kNames[static_cast<int>(strategy)];
}

namespace {

struct Scenario {
  std::string name;
  std::function<PointSet()> make_pool;  // points to draw insertions from
  std::size_t ops = 3000;

  friend void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }
};

// Points with many exact duplicates: `n` draws from only `distinct` locations.
PointSet DuplicateHeavy(std::size_t n, std::size_t dim, std::size_t distinct,
                        std::uint64_t seed) {
  const PointSet locations = UniformPoints(distinct, dim, seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, distinct - 1);
  PointSet points{dim, {}};
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const double> p = locations.point(pick(rng));
    points.coordinates.insert(points.coordinates.end(), p.begin(), p.end());
  }
  return points;
}

// An integer lattice: very many equal distances, so ties decide results.
PointSet Lattice(std::size_t side, std::size_t dim) {
  PointSet points{dim, {}};
  std::size_t total = 1;
  for (std::size_t j = 0; j < dim; ++j) total *= side;
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t rest = i;
    for (std::size_t j = 0; j < dim; ++j) {
      points.coordinates.push_back(static_cast<double>(rest % side));
      rest /= side;
    }
  }
  return points;
}

// d = 1 with values on a coarse grid: duplicates and ties in one dimension.
PointSet CoarseLine(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> step(0, 255);
  PointSet points{1, {}};
  for (std::size_t i = 0; i < n; ++i)
    points.coordinates.push_back(step(rng) / 64.0);
  return points;
}

std::vector<Scenario> Scenarios() {
  return {
      {"uniform_d3", [] { return UniformPoints(1500, 3, 1); }},
      {"uniform_d21", [] { return UniformPoints(1500, 21, 2); }},
      {"clustered_d8", [] { return ClusteredPoints(1500, 8, 12, 3); }},
      {"trajectory_d21", [] { return ArmPoints(1500, 7, 4); }},
      {"trajectory_d6_long",
       [] {
         PointSet p = ArmPoints(20000, 2, 5);
         PointSet every_tenth{p.dim, {}};
         for (std::size_t i = 0; i < p.size(); i += 10) {
           every_tenth.coordinates.insert(every_tenth.coordinates.end(),
                                          p.point(i).begin(), p.point(i).end());
         }
         return every_tenth;
       }},
      {"duplicates_d4", [] { return DuplicateHeavy(2000, 4, 6, 6); }},
      {"lattice_d2", [] { return Lattice(40, 2); }},
      {"lattice_d3", [] { return Lattice(11, 3); }},
      {"coarse_line_d1", [] { return CoarseLine(1200, 7); }},
      {"uniform_d1", [] { return UniformPoints(1200, 1, 8); }},
      {"uniform_d128", [] { return UniformPoints(400, 128, 9); }, 1200},
  };
}

using Strategy = CoverTree::Strategy;

std::string StrategyName(Strategy strategy) {
  return testing::PrintToString(strategy);
}

// Each data set under each search strategy: a tree walk, a scan, and the
// adaptive choice between them must all give the brute-force answers.
class CoverTreeProperty
    : public testing::TestWithParam<std::tuple<Scenario, Strategy>> {};

// Compares every answer of `tree` with `brute` for one query.
void ExpectSameAnswers(const CoverTree& tree, const BruteForceSearch& brute,
                       std::span<const double> query, std::mt19937_64& rng,
                       const std::string& context) {
  std::vector<Neighbor> got;
  const std::size_t n = brute.size();
  for (std::size_t k : {std::size_t{1}, std::size_t{3}, std::size_t{10},
                        std::size_t{64}, n + 2}) {
    ASSERT_TRUE(tree.Knn(query, k, &got).ok());
    ASSERT_EQ(got, brute.Knn(query, k)) << context << " k=" << k;
  }
  // Radii exactly at a neighbour's distance put points on the boundary.
  std::vector<double> radii = {0.0};
  const std::vector<Neighbor> all = brute.Knn(query, n);
  if (!all.empty()) {
    std::uniform_int_distribution<std::size_t> pick(0, all.size() - 1);
    radii.push_back(all[pick(rng)].distance);
    radii.push_back(all[std::min<std::size_t>(all.size() - 1, 7)].distance);
    radii.push_back(all.back().distance * 1.01);
  }
  for (double r : radii) {
    ASSERT_TRUE(tree.Range(query, r, &got).ok());
    ASSERT_EQ(got, brute.Range(query, r)) << context << " r=" << r;
  }
}

TEST_P(CoverTreeProperty, MatchesBruteForceUnderRandomInterleavings) {
  const auto& [scenario, strategy] = GetParam();
  const PointSet pool = scenario.make_pool();
  const std::size_t dim = pool.dim;
  std::mt19937_64 rng(12345);

  // Start from a batch-built tree over the first half of the pool.
  const std::size_t initial = pool.size() / 2;
  std::vector<std::uint64_t> ids(initial);
  for (std::size_t i = 0; i < initial; ++i) ids[i] = 1000 + 7 * i;
  absl::StatusOr<CoverTree> built = CoverTree::Build(
      dim, std::span(pool.coordinates).first(initial * dim), ids);
  ASSERT_TRUE(built.ok()) << built.status();
  CoverTree tree = *std::move(built);
  tree.set_strategy(strategy);
  BruteForceSearch brute(dim);
  absl::flat_hash_map<std::uint64_t, std::size_t> pool_index;  // id -> point
  std::vector<std::uint64_t> present = ids, removed;
  for (std::size_t i = 0; i < initial; ++i) {
    brute.Add(ids[i], pool.point(i));
    pool_index[ids[i]] = i;
  }
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();

  std::size_t next_pool = initial;
  std::uint64_t next_id = 1'000'000'000;  // above the initial ids
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> jitter(0.0, 0.05);
  for (std::size_t op = 0; op < scenario.ops; ++op) {
    const std::string context = absl::StrCat(scenario.name, " op ", op);
    const double r = u(rng);
    if (r < 0.35 && next_pool < pool.size()) {
      const std::uint64_t id = next_id++;
      ASSERT_TRUE(tree.Insert(id, pool.point(next_pool)).ok()) << context;
      brute.Add(id, pool.point(next_pool));
      pool_index[id] = next_pool++;
      present.push_back(id);
    } else if (r < 0.45 && !removed.empty()) {
      // A removed id comes back with its old point.
      std::uniform_int_distribution<std::size_t> pick(0, removed.size() - 1);
      const std::size_t at = pick(rng);
      const std::uint64_t id = removed[at];
      removed.erase(removed.begin() + at);
      ASSERT_TRUE(tree.Insert(id, pool.point(pool_index[id])).ok()) << context;
      brute.Add(id, pool.point(pool_index[id]));
      present.push_back(id);
    } else if (r < 0.75 && !present.empty()) {
      std::uniform_int_distribution<std::size_t> pick(0, present.size() - 1);
      const std::size_t at = pick(rng);
      const std::uint64_t id = present[at];
      present.erase(present.begin() + at);
      ASSERT_TRUE(tree.Remove(id).ok()) << context;
      ASSERT_TRUE(brute.Remove(id));
      removed.push_back(id);
    } else {
      // Queries on a stored point (distance 0), a pool point, or off-data.
      std::vector<double> query(dim);
      std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
      const std::span<const double> base = pool.point(pick(rng));
      const bool exact = u(rng) < 0.5;
      for (std::size_t j = 0; j < dim; ++j) {
        query[j] = base[j] + (exact ? 0.0 : jitter(rng));
      }
      ExpectSameAnswers(tree, brute, query, rng, context);
    }
    ASSERT_EQ(tree.size(), brute.size()) << context;
    if (op % 300 == 0) {
      const absl::Status check = tree.CheckInvariants();
      ASSERT_TRUE(check.ok()) << context << ": " << check;
    }
  }
  ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();

  // The rebuild helper answers the same.
  const CoverTree rebuilt = tree.Rebuilt();
  ASSERT_TRUE(rebuilt.CheckInvariants().ok()) << rebuilt.CheckInvariants();
  for (std::size_t q = 0; q < 50; ++q) {
    std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
    ExpectSameAnswers(rebuilt, brute, pool.point(pick(rng)), rng, "rebuilt");
  }

  // Drain: remove everything, checking invariants as the tree empties.
  std::shuffle(present.begin(), present.end(), rng);
  for (std::size_t i = 0; i < present.size(); ++i) {
    ASSERT_TRUE(tree.Remove(present[i]).ok());
    if (i % 97 == 0) {
      const absl::Status check = tree.CheckInvariants();
      ASSERT_TRUE(check.ok()) << "drain " << i << ": " << check;
    }
  }
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
  std::vector<Neighbor> got;
  ASSERT_TRUE(tree.Knn(pool.point(0), 5, &got).ok());
  EXPECT_TRUE(got.empty());
}

INSTANTIATE_TEST_SUITE_P(
    DataSets, CoverTreeProperty,
    testing::Combine(testing::ValuesIn(Scenarios()),
                     testing::Values(Strategy::kAdaptive, Strategy::kTree,
                                     Strategy::kScan)),
    [](const testing::TestParamInfo<CoverTreeProperty::ParamType>& info) {
      return std::get<0>(info.param).name + "_" +
             StrategyName(std::get<1>(info.param));
    });

// Tiny trees: every subset of a few points, every removal order.
TEST(CoverTreeTiny, EveryInsertAndRemoveOrderOfFourPoints) {
  const PointSet points = UniformPoints(4, 2, 11);
  std::vector<std::size_t> order = {0, 1, 2, 3};
  do {
    CoverTree tree(2);
    BruteForceSearch brute(2);
    std::mt19937_64 rng(1);
    for (std::size_t i : order) {
      ASSERT_TRUE(tree.Insert(i, points.point(i)).ok());
      brute.Add(i, points.point(i));
      ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
      for (std::size_t q = 0; q < 4; ++q) {
        ExpectSameAnswers(tree, brute, points.point(q), rng, "tiny");
      }
    }
    std::vector<std::size_t> removal = order;
    std::reverse(removal.begin(), removal.end());
    std::rotate(removal.begin(), removal.begin() + 1, removal.end());
    for (std::size_t i : removal) {
      ASSERT_TRUE(tree.Remove(i).ok());
      ASSERT_TRUE(brute.Remove(i));
      ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
      for (std::size_t q = 0; q < 4; ++q) {
        ExpectSameAnswers(tree, brute, points.point(q), rng, "tiny");
      }
    }
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(CoverTreeTiny, EmptyAndSingleton) {
  CoverTree tree(3);
  std::vector<Neighbor> got;
  const std::vector<double> q = {0.0, 0.0, 0.0};
  ASSERT_TRUE(tree.Knn(q, 3, &got).ok());
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE(tree.Range(q, 10.0, &got).ok());
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE(tree.Insert(42, std::vector<double>{0.0, 3.0, 4.0}).ok());
  ASSERT_TRUE(tree.Knn(q, 3, &got).ok());
  EXPECT_EQ(got, (std::vector<Neighbor>{{42, 5.0}}));
  ASSERT_TRUE(tree.Knn(q, 0, &got).ok());
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE(tree.Range(q, 4.999, &got).ok());
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE(tree.Range(q, 5.0, &got).ok());
  EXPECT_EQ(got.size(), 1u);
  ASSERT_TRUE(tree.Remove(42).ok());
  EXPECT_TRUE(tree.empty());
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

}  // namespace
}  // namespace streamreg

namespace streamreg {
namespace {

// SplitKnnRules: both answers of one traversal equal brute force — the k
// nearest, and the k nearest of the points not excluded — uncapped, and
// capped whenever the cap held (which it must once it reaches the kept k-th
// distance).
TEST(SplitKnnTest, BothAnswersEqualBruteForceCappedOrNot) {
  // A trajectory: the excluded points (the last 300 and every fifth id) are
  // the nearest ones of the queries that lie on it.
  const PointSet points = ArmPoints(3000, 3, 5);
  CoverTree tree(points.dim);
  BruteForceSearch brute(points.dim);
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(tree.Insert(i, points.point(i)).ok());
    brute.Add(i, points.point(i));
  }
  const auto excluded = [](std::uint64_t id) {
    return id >= 2700 || id % 5 == 0;
  };
  for (std::size_t q : {2999u, 2850u, 1200u, 17u}) {
    const std::span<const double> query = points.point(q);
    for (std::size_t k : {1u, 8u, 64u}) {
      std::vector<Neighbor> kept_expected;
      for (const Neighbor& n : brute.Knn(query, brute.size())) {
        if (!excluded(n.id) && kept_expected.size() < k) {
          kept_expected.push_back(n);
        }
      }
      const double kth = kept_expected.back().distance;
      for (double cap : {std::numeric_limits<double>::infinity(), 0.5 * kth,
                         kth, 2.0 * kth}) {
        // With and without naming the excluded run of ids (the last 300).
        for (IdRange run : {IdRange{}, IdRange::Between(2700, 2999)}) {
          std::vector<Neighbor> all, kept;
          SplitKnnRules rules(k, &all, &kept, excluded, cap, run);
          tree.Search(query.data(), rules);
          rules.Finish();
          const std::string context = absl::StrCat(
              "query ", q, " k ", k, " cap ", cap, " run ", run.lo);
          if (cap >= kth) {
            ASSERT_TRUE(rules.KeptCapHeld()) << context;
          }
          if (!rules.KeptCapHeld()) continue;
          EXPECT_EQ(all, brute.Knn(query, k)) << context;
          EXPECT_EQ(kept, kept_expected) << context;
        }
      }
    }
  }
}

// Search rules that count the points a traversal shows them.
template <class Inner>
struct CountingRules {
  Inner& inner;
  std::size_t visits = 0;
  double Bound() const { return inner.Bound(); }
  double BoundFor(IdRange ids) const { return inner.BoundFor(ids); }
  void Visit(std::uint64_t id, double distance) {
    ++visits;
    inner.Visit(id, distance);
  }
};

// A window over a trajectory: slots reused in a ring (each sample removed
// when its slot is taken again), the last samples excluded, and their run
// of consecutive slots named. Both answers stay exact as the tree's id
// intervals go stale with removals, and naming the run spares the search
// most of the excluded points a query on the trajectory lies among.
TEST(SplitKnnTest, AnExcludedRunOfIdsIsSkippedExactlyInAWindow) {
  constexpr std::size_t kSamples = 6000, kWindow = 1000, kRecent = 300, kK = 8;
  const PointSet points = ArmPoints(kSamples, 3, 5);
  CoverTree tree(points.dim);
  // Walking always: the excluded points, nearest to each query, would have
  // an adaptive tree scan (PruningMonitor) unless the run is named.
  tree.set_strategy(CoverTree::Strategy::kTree);
  BruteForceSearch brute(points.dim);
  std::size_t visits_with_run = 0, visits_without = 0;
  for (std::size_t t = 0; t < kSamples; ++t) {
    const std::uint64_t slot = t % kWindow;
    if (t >= kWindow) {
      ASSERT_TRUE(tree.Remove(slot).ok());
      ASSERT_TRUE(brute.Remove(slot));
    }
    ASSERT_TRUE(tree.Insert(slot, points.point(t)).ok());
    brute.Add(slot, points.point(t));
    if (t < kRecent + kK || t % 97 != 0) continue;
    // Slots of samples t - kRecent + 1 .. t; the run is the part of them
    // since the ring last wrapped.
    const auto excluded = [&](std::uint64_t id) {
      return (t + kWindow - id) % kWindow < kRecent;
    };
    const std::uint64_t first = (t - kRecent + 1) % kWindow;
    const IdRange run = IdRange::Between(first <= slot ? first : 0, slot);
    ASSERT_TRUE(tree.CheckInvariants().ok()) << "t " << t;
    const std::span<const double> query = points.point(t);
    std::vector<Neighbor> kept_expected;
    for (const Neighbor& n : brute.Knn(query, brute.size())) {
      if (!excluded(n.id) && kept_expected.size() < kK) {
        kept_expected.push_back(n);
      }
    }
    for (bool named : {false, true}) {
      std::vector<Neighbor> all, kept;
      SplitKnnRules rules(kK, &all, &kept, excluded,
                          std::numeric_limits<double>::infinity(),
                          named ? run : IdRange{});
      CountingRules<decltype(rules)> counting{rules, 0};
      tree.Search(query.data(), counting);
      rules.Finish();
      (named ? visits_with_run : visits_without) += counting.visits;
      EXPECT_EQ(all, brute.Knn(query, kK)) << "t " << t << " named " << named;
      EXPECT_EQ(kept, kept_expected) << "t " << t << " named " << named;
    }
  }
  EXPECT_LT(3 * visits_with_run, visits_without)
      << visits_with_run << " points visited naming the run, " << visits_without
      << " without";
}

}  // namespace
}  // namespace streamreg
