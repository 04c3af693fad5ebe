// The stored samples indexed in a metric's coordinates (core/model/
// metric_index.h), against a brute-force search of the same points mapped
// the same way: inserts and removals, a rebuild that answers in the old
// coordinates until it takes over and in the new ones after (writes made
// meanwhile included), a rebuild on the calling thread, trees that
// reference the owner's rows answering as trees of copies, and a write it
// cannot make reported as its failure.
#include "core/model/metric_index.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t kDim = 3;

// Rows of raw inputs at addresses that never move (room for `capacity`).
class Rows {
 public:
  explicit Rows(std::size_t capacity, std::uint64_t seed) : random_(seed) {
    x_.reserve(capacity * kDim);
  }
  std::span<const double> Add() {
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    // Scales that differ, so that the transform changes the neighbours.
    for (double scale : {1.0, 5.0, 0.2}) x_.push_back(scale * uniform(random_));
    return row(size() - 1);
  }
  std::size_t size() const { return x_.size() / kDim; }
  std::span<const double> row(std::size_t slot) const {
    return {x_.data() + slot * kDim, kDim};
  }
  CopySlotRows Copy() const {
    return [this](std::size_t begin, std::size_t end, std::vector<double>* x,
                  std::vector<double>* y) {
      x->assign(x_.begin() + begin * kDim, x_.begin() + end * kDim);
      if (y != nullptr) y->clear();
    };
  }
  SlotRowPointers Pointers() const {
    return
        [this](std::size_t begin, std::size_t end,
               std::vector<const double*>* x, std::vector<const double*>* y) {
          for (std::size_t slot = begin; slot < end; ++slot) {
            x->push_back(x_.data() + slot * kDim);
          }
          (void)y;
        };
  }

 private:
  std::mt19937_64 random_;
  std::vector<double> x_;
};

MetricTransform Standardized() {
  return MetricTransform::Standardizing({0, 0, 0}, {1.0, 5.0, 0.2});
}
MetricTransform Weighted() {
  return MetricTransform::Diagonal({0.1, 0, 0}, {1.0, 5.0, 0.2},
                                   {3.0, 0.5, 1.0});
}
MetricTransform Rotated() {
  return MetricTransform::Dense({0, 0, 0}, {1.0, 5.0, 0.2},
                                {1.0, 0.5, 0.0,  //
                                 0.0, 1.0, 0.3,  //
                                 0.2, 0.0, 2.0});
}

// The k nearest of `slots` to `query` under `transform`, by brute force.
std::vector<Neighbor> BruteForce(const Rows& rows,
                                 const std::vector<std::uint64_t>& slots,
                                 const MetricTransform& transform,
                                 std::span<const double> query, std::size_t k) {
  const std::vector<double> q = transform.Apply(query);
  std::vector<Neighbor> all;
  for (std::uint64_t slot : slots) {
    const std::vector<double> z = transform.Apply(rows.row(slot));
    double squared = 0.0;
    for (std::size_t i = 0; i < kDim; ++i) {
      squared += (z[i] - q[i]) * (z[i] - q[i]);
    }
    all.push_back({slot, std::sqrt(squared)});
  }
  std::sort(all.begin(), all.end(), [](const Neighbor& a, const Neighbor& b) {
    return a.distance < b.distance;
  });
  all.resize(std::min(k, all.size()));
  return all;
}

// The index's current generation answers as the brute force does, in
// `transform`'s coordinates (which it must be in), over `slots`.
void ExpectAnswersAsBruteForce(const MetricIndex& index, const Rows& rows,
                               const std::vector<std::uint64_t>& slots,
                               const MetricTransform& transform) {
  const std::shared_ptr<const MetricIndex::Generation> live = index.current();
  EXPECT_EQ(live->transform.RelativeChange(transform), 0.0);
  EXPECT_EQ(live->tree.size(), slots.size());
  Rows queries(20, 77);
  for (std::size_t q = 0; q < 20; ++q) {
    const std::span<const double> query = queries.Add();
    std::vector<Neighbor> got;
    ASSERT_TRUE(live->tree.Knn(transform.Apply(query), 7, &got).ok());
    const std::vector<Neighbor> expected =
        BruteForce(rows, slots, transform, query, 7);
    ASSERT_EQ(got.size(), expected.size()) << "query " << q;
    for (std::size_t n = 0; n < got.size(); ++n) {
      EXPECT_EQ(got[n].id, expected[n].id) << "query " << q << ", " << n;
      EXPECT_NEAR(got[n].distance, expected[n].distance, 1e-12);
    }
  }
}

std::vector<std::uint64_t> FirstSlots(std::size_t n) {
  std::vector<std::uint64_t> slots(n);
  for (std::size_t s = 0; s < n; ++s) slots[s] = s;
  return slots;
}

TEST(MetricIndexTest, AnswersAsABruteForceSearchAfterInsertsAndRemovals) {
  Rows rows(400, 1);
  MetricIndex index(Weighted());
  for (std::size_t s = 0; s < 400; ++s) index.Insert(s, rows.Add());
  std::vector<std::uint64_t> kept;
  for (std::uint64_t s = 0; s < 400; ++s) {
    if (s % 3 == 0) {
      index.Remove(s);
    } else {
      kept.push_back(s);
    }
  }
  ASSERT_TRUE(index.failure().ok()) << index.failure();
  ExpectAnswersAsBruteForce(index, rows, kept, Weighted());
  EXPECT_EQ(index.generation(), 0u);
}

TEST(MetricIndexTest,
     ARebuildTakesOverOnlyWhenFinishedWithTheWritesOfMeanwhile) {
  Rows rows(700, 2);
  MetricIndex index(Standardized());
  for (std::size_t s = 0; s < 500; ++s) index.Insert(s, rows.Add());
  index.BeginRebuild(Rotated(), 500, rows.Copy());
  EXPECT_TRUE(index.rebuilding());
  // Written meanwhile: to the live tree, and queued for the new one.
  for (std::size_t s = 500; s < 600; ++s) index.Insert(s, rows.Add());
  ExpectAnswersAsBruteForce(index, rows, FirstSlots(600), Standardized());
  index.WaitForBuild();
  // Caught up: each write goes to both.
  for (std::size_t s = 600; s < 700; ++s) index.Insert(s, rows.Add());
  ExpectAnswersAsBruteForce(index, rows, FirstSlots(700), Standardized());
  index.FinishRebuild();
  EXPECT_FALSE(index.rebuilding());
  EXPECT_EQ(index.generation(), 1u);
  ASSERT_TRUE(index.failure().ok()) << index.failure();
  ExpectAnswersAsBruteForce(index, rows, FirstSlots(700), Rotated());
}

TEST(MetricIndexTest, ARebuildNowMovesToItsCoordinatesAtOnce) {
  Rows rows(300, 3);
  MetricIndex index(Standardized());
  for (std::size_t s = 0; s < 300; ++s) index.Insert(s, rows.Add());
  index.RebuildNow(Weighted(), 300, rows.Copy());
  EXPECT_EQ(index.generation(), 1u);
  ExpectAnswersAsBruteForce(index, rows, FirstSlots(300), Weighted());
}

TEST(MetricIndexTest, TreesReferencingTheRowsAnswerAsTreesOfCopies) {
  Rows rows(600, 4);
  MetricIndex copies(Standardized());
  MetricIndex references(Standardized(),
                         {.pointers = rows.Pointers(), .from_slots = 0});
  for (std::size_t s = 0; s < 300; ++s) {
    const std::span<const double> x = rows.Add();
    copies.Insert(s, x);
    references.Insert(s, x);
  }
  // A diagonal transform references them; a dense one cannot.
  for (const MetricTransform& next : {Weighted(), Rotated()}) {
    for (MetricIndex* index : {&copies, &references}) {
      index->RebuildNow(next, rows.size(), rows.Copy());
    }
    EXPECT_FALSE(copies.current()->references_rows);
    EXPECT_EQ(references.current()->references_rows, !next.is_dense());
    const std::size_t begin = rows.size();
    for (std::size_t s = begin; s < begin + 100; ++s) {
      const std::span<const double> x = rows.Add();
      copies.Insert(s, x);
      references.Insert(s, x);
    }
    ExpectAnswersAsBruteForce(copies, rows, FirstSlots(rows.size()), next);
    ExpectAnswersAsBruteForce(references, rows, FirstSlots(rows.size()), next);
    EXPECT_LT(references.MemoryUsage(),
              next.is_dense() ? SIZE_MAX : copies.MemoryUsage());
  }
}

TEST(MetricIndexTest, AWriteItCannotMakeIsItsFailure) {
  Rows rows(10, 5);
  MetricIndex index(Standardized());
  index.Insert(1, rows.Add());
  ASSERT_TRUE(index.failure().ok());
  index.Insert(1, rows.Add());  // a slot indexed twice
  EXPECT_FALSE(index.failure().ok());
  index.Remove(7);  // the first failure is the one kept
  EXPECT_THAT(index.failure().message(),
              HasSubstr("point id 1: already stored"));
}

}  // namespace
}  // namespace streamreg
