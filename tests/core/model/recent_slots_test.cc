// RecentSlots: exactly the slots of the last min(max_lag, seen / 10)
// samples, whatever the store does with slots, and its state survives a
// save and load.
#include "core/model/recent_slots.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

// The slots of the last `lag` entries of `history`, by brute force.
bool ReferenceContains(const std::vector<std::uint64_t>& history,
                       std::size_t lag, std::uint64_t slot) {
  for (std::size_t i = history.size() > lag ? history.size() - lag : 0;
       i < history.size(); ++i) {
    if (history[i] == slot) return true;
  }
  return false;
}

TEST(RecentSlotsTest, HoldsTheSlotsOfTheLastLagSamples) {
  // Slots as a reservoir uses them: random reuse, repeats, samples passed
  // over. The lag grows by one every 10 samples seen, up to max_lag.
  std::mt19937_64 random(3);
  std::uniform_int_distribution<std::uint64_t> slot_of(0, 40);
  for (std::size_t max_lag : {0u, 1u, 7u, 30u}) {
    RecentSlots recent(max_lag);
    std::vector<std::uint64_t> history;
    for (std::uint64_t seen = 1; seen <= 500; ++seen) {
      const std::uint64_t slot =
          seen % 9 == 4 ? RecentSlots::kNotStored : slot_of(random);
      recent.Add(slot, seen);
      history.push_back(slot);
      const std::size_t lag = std::min<std::size_t>(max_lag, seen / 10);
      ASSERT_EQ(recent.lag(), lag) << "max_lag " << max_lag << " seen " << seen;
      for (std::uint64_t probe = 0; probe <= 40; ++probe) {
        ASSERT_EQ(recent.Contains(probe),
                  ReferenceContains(history, lag, probe))
            << "max_lag " << max_lag << " seen " << seen << " slot " << probe;
      }
    }
  }
}

TEST(RecentSlotsTest, ASavedStateLoadsExactly) {
  RecentSlots recent(5);
  std::uint64_t seen = 100;
  for (std::uint64_t slot : {3, 4, 4, 9, 2, 7}) recent.Add(slot, ++seen);
  std::string bytes;
  ByteWriter out(&bytes);
  recent.Save(out);
  RecentSlots loaded(5);
  ByteReader in(bytes);
  ASSERT_TRUE(loaded.Load(in));
  EXPECT_EQ(loaded.lag(), 5u);
  for (std::uint64_t slot : {1, 8}) {
    ++seen;
    recent.Add(slot, seen);
    loaded.Add(slot, seen);
  }
  for (std::uint64_t probe = 0; probe < 12; ++probe) {
    EXPECT_EQ(loaded.Contains(probe), recent.Contains(probe)) << probe;
  }
  // More entries than the lag allows: refused.
  RecentSlots shorter(3);
  ByteReader again(bytes);
  EXPECT_FALSE(shorter.Load(again));
}

TEST(RecentSlotsTest, AStateLongerThanTheStreamAllowsShrinksToIt) {
  // A snapshot of a build whose lag did not grow with the stream: 5 recent
  // samples after 12 seen. The next sample leaves the last 13 / 10 = 1.
  RecentSlots recent(5);
  for (std::uint64_t slot : {3, 4, 9, 2, 7}) recent.Add(slot, 100);
  recent.Add(6, 13);
  EXPECT_EQ(recent.lag(), 1u);
  for (std::uint64_t probe = 0; probe < 12; ++probe) {
    EXPECT_EQ(recent.Contains(probe), probe == 6) << probe;
  }
}

}  // namespace
}  // namespace streamreg
