// RecentSlots: exactly the slots of the last `lag` samples, whatever the
// store does with slots, and its state survives a save and load.
#include "core/model/recent_slots.h"

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
  // over.
  std::mt19937_64 random(3);
  std::uniform_int_distribution<std::uint64_t> slot_of(0, 40);
  for (std::size_t lag : {0u, 1u, 7u, 30u}) {
    RecentSlots recent(lag);
    std::vector<std::uint64_t> history;
    for (int s = 0; s < 500; ++s) {
      const std::uint64_t slot =
          s % 9 == 4 ? RecentSlots::kNotStored : slot_of(random);
      recent.Add(slot);
      history.push_back(slot);
      for (std::uint64_t probe = 0; probe <= 40; ++probe) {
        ASSERT_EQ(recent.Contains(probe),
                  ReferenceContains(history, lag, probe))
            << "lag " << lag << " after " << s << " slot " << probe;
      }
    }
  }
}

TEST(RecentSlotsTest, ASavedStateLoadsExactly) {
  RecentSlots recent(5);
  for (std::uint64_t slot : {3, 4, 4, 9, 2, 7}) recent.Add(slot);
  std::string bytes;
  ByteWriter out(&bytes);
  recent.Save(out);
  RecentSlots loaded(5);
  ByteReader in(bytes);
  ASSERT_TRUE(loaded.Load(in));
  for (std::uint64_t slot : {1, 8}) {
    recent.Add(slot);
    loaded.Add(slot);
  }
  for (std::uint64_t probe = 0; probe < 12; ++probe) {
    EXPECT_EQ(loaded.Contains(probe), recent.Contains(probe)) << probe;
  }
  // More entries than the lag allows: refused.
  RecentSlots shorter(3);
  ByteReader again(bytes);
  EXPECT_FALSE(shorter.Load(again));
}

}  // namespace
}  // namespace streamreg
