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

// The run: every slot in it is recent (a search skips them unmeasured), in
// a reservoir's random reuse, a ring that wraps and an append-only store;
// and in the last two it holds the whole lag since the last wrap.
TEST(RecentSlotsTest, ItsRunHoldsOnlyRecentSlots) {
  std::mt19937_64 random(5);
  std::uniform_int_distribution<std::uint64_t> slot_of(0, 40);
  for (const std::string store : {"reservoir", "ring", "append"}) {
    RecentSlots recent(30);
    std::vector<std::uint64_t> history;
    std::uint64_t longest = 0;
    for (std::uint64_t seen = 1; seen <= 600; ++seen) {
      const std::uint64_t slot = store == "reservoir" ? slot_of(random)
                                 : store == "ring"    ? (seen - 1) % 100
                                                      : seen - 1;
      recent.Add(slot, seen);
      history.push_back(slot);
      // Contains answers from the run when the run is all of them.
      for (std::uint64_t probe = 0; probe <= 610; ++probe) {
        ASSERT_EQ(recent.Contains(probe),
                  ReferenceContains(history, recent.lag(), probe))
            << store << " seen " << seen << " slot " << probe;
      }
      const IdRange run = recent.run();
      for (std::uint64_t probe = run.lo; !run.empty() && probe <= run.hi;
           ++probe) {
        ASSERT_TRUE(recent.Contains(probe))
            << store << " seen " << seen << " slot " << probe;
      }
      if (run.empty()) continue;
      longest = std::max<std::uint64_t>(longest, run.hi - run.lo + 1);
      if (store != "reservoir") {
        // Since the last wrap: the lag's slots from the first one up to
        // this one, when they did not wrap.
        const std::uint64_t expected = std::min<std::uint64_t>(
            recent.lag(), store == "ring" ? slot + 1 : recent.lag());
        ASSERT_EQ(run.hi - run.lo + 1, expected) << store << " seen " << seen;
      }
    }
    if (store != "reservoir") {
      EXPECT_EQ(longest, 30u) << store;
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
  // The run is rebuilt from the slots: 9, 2, 7, 1, 8 end in the run [8, 8].
  EXPECT_EQ(loaded.run().lo, recent.run().lo);
  EXPECT_EQ(loaded.run().hi, recent.run().hi);
  EXPECT_EQ(loaded.run().lo, 8u);
  EXPECT_EQ(loaded.run().hi, 8u);
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
