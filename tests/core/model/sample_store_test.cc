// SampleStore (core/model/sample_store.h): where each policy puts a sample
// — every one, the last `limit`, or Vitter's reservoir, uniform over the
// stream — deterministically for a seed, resumed exactly from its saved
// counters, and rows shared with a snapshot unchanged by later writes.
#include "core/model/sample_store.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(SampleStoreTest, UnboundedKeepsEverySampleInTheNextSlot) {
  SampleStore store(1, 1, Capacity{}, 0);
  for (std::size_t n = 0; n < 10; ++n) {
    const SampleStore::Placement placement = store.Place();
    EXPECT_TRUE(placement.keep);
    EXPECT_EQ(placement.slot, n);
    EXPECT_FALSE(placement.replaces);
  }
  EXPECT_EQ(store.seen(), 10u);
}

TEST(SampleStoreTest, AWindowReplacesItsOldestSample) {
  SampleStore store(1, 1, Capacity{CapacityPolicy::kWindow, 3}, 0);
  std::vector<std::size_t> held(3, 99);  // slot -> sample number
  for (std::size_t n = 0; n < 10; ++n) {
    const SampleStore::Placement placement = store.Place();
    ASSERT_TRUE(placement.keep);
    EXPECT_EQ(placement.replaces, n >= 3);
    held[placement.slot] = n;
    const double x = static_cast<double>(n);
    store.Put(placement.slot, {&x, 1}, {&x, 1}, n + 100);
  }
  // The last three.
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held, (std::vector<std::size_t>{7, 8, 9}));
  EXPECT_EQ(store.size(), 3u);
}

// Which of `stream` samples a reservoir of `limit` holds at the end.
std::vector<bool> ReservoirHolds(std::size_t stream, std::size_t limit,
                                 std::uint64_t seed) {
  SampleStore store(1, 1, Capacity{CapacityPolicy::kReservoir, limit}, seed);
  std::vector<std::size_t> held(limit);
  for (std::size_t n = 0; n < stream; ++n) {
    const SampleStore::Placement placement = store.Place();
    if (!placement.keep) continue;
    EXPECT_LT(placement.slot, limit);
    EXPECT_EQ(placement.replaces, n >= limit);
    held[placement.slot] = n;
  }
  std::vector<bool> holds(stream, false);
  for (std::size_t n : held) holds[n] = true;
  return holds;
}

TEST(SampleStoreTest, AReservoirHoldsEachSampleWithProbabilityLimitOverSeen) {
  constexpr std::size_t kStream = 20, kLimit = 5, kTrials = 4000;
  std::vector<double> held(kStream, 0.0);
  for (std::uint64_t seed = 1; seed <= kTrials; ++seed) {
    const std::vector<bool> holds = ReservoirHolds(kStream, kLimit, seed);
    for (std::size_t n = 0; n < kStream; ++n) held[n] += holds[n] ? 1 : 0;
  }
  // 5/20 for every sample, first or last: within 4.4 standard deviations.
  const double p = static_cast<double>(kLimit) / kStream;
  const double tolerance = 4.4 * std::sqrt(p * (1 - p) / kTrials);
  for (std::size_t n = 0; n < kStream; ++n) {
    EXPECT_NEAR(held[n] / kTrials, p, tolerance) << "sample " << n;
  }
}

TEST(SampleStoreTest, ASeedDeterminesThePlacementsAndTheCountersResumeThem) {
  EXPECT_EQ(ReservoirHolds(50, 7, 42), ReservoirHolds(50, 7, 42));
  EXPECT_NE(ReservoirHolds(50, 7, 42), ReservoirHolds(50, 7, 43));
  const Capacity reservoir{CapacityPolicy::kReservoir, 4};
  SampleStore original(1, 1, reservoir, 5);
  for (int n = 0; n < 30; ++n) original.Place();
  std::string counters;
  ByteWriter writer(&counters);
  original.SaveCounters(writer);
  SampleStore resumed(1, 1, reservoir, 0);  // another seed: overwritten
  ByteReader reader(counters);
  ASSERT_TRUE(resumed.LoadCounters(reader));
  EXPECT_EQ(resumed.seen(), 30u);
  for (int n = 0; n < 100; ++n) {
    const SampleStore::Placement a = original.Place();
    const SampleStore::Placement b = resumed.Place();
    EXPECT_EQ(a.keep, b.keep);
    EXPECT_EQ(a.slot, b.slot);
    EXPECT_EQ(a.replaces, b.replaces);
  }
  // A cut encoding is refused.
  ByteReader cut(absl::string_view(counters).substr(0, counters.size() - 1));
  EXPECT_FALSE(resumed.LoadCounters(cut));
}

TEST(SampleStoreTest, SharedRowsDoNotChangeWhenTheirSlotIsWrittenAgain) {
  SampleStore store(2, 1, Capacity{CapacityPolicy::kWindow, 2}, 0);
  const auto put = [&store](double value, std::uint64_t id) {
    const std::vector<double> x = {value, -value};
    const SampleStore::Placement placement = store.Place();
    store.Put(placement.slot, x, {x.data(), 1}, id);
    return placement.slot;
  };
  const std::size_t first = put(1.0, 11);
  put(2.0, 12);
  const SampleStore::Rows shared = store.Share();
  EXPECT_EQ(put(3.0, 13), first);  // evicts the first sample
  EXPECT_EQ(store.x(first)[0], 3.0);
  EXPECT_EQ(store.sample_id(first), 13u);
  // The snapshot's rows are as they were.
  EXPECT_EQ(shared.x.Row(first)[0], 1.0);
  EXPECT_EQ(shared.x.Row(first)[1], -1.0);
  EXPECT_EQ(shared.y.Row(first)[0], 1.0);
  EXPECT_EQ(*shared.ids.Row(first), 11u);
}

}  // namespace
}  // namespace streamreg
