// The real-time client's lock-free parts, against a plain queue and a
// plain map: SpscRowRing keeps every row whole and in order, refuses rows
// past its capacity and takes them again once the consumer frees room;
// TickAnswerTable gives a tick's prediction exactly as put, never one torn
// by a write racing the read, and no other tick's. The threaded tests run
// under ThreadSanitizer too (the tsan preset).
#include <atomic>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

#include "client/lib/internal/spsc_row_ring.h"
#include "client/lib/internal/tick_answer_table.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(SpscRowRingTest, KeepsRowsWholeAndInOrderUpToItsCapacity) {
  SpscRowRing ring(/*capacity=*/3, /*width=*/3);  // rounded up to 4
  ASSERT_EQ(ring.capacity(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    const double head[] = {static_cast<double>(i)};
    const double tail[] = {10.0 + i, 20.0 + i};
    EXPECT_TRUE(ring.Push(i, {head, tail}));
  }
  const double row[] = {9, 9, 9};
  EXPECT_FALSE(ring.Push(99, {row})) << "full";
  std::uint64_t tag = 0;
  std::span<const double> front;
  for (std::uint64_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(ring.Front(&tag, &front));
    EXPECT_EQ(tag, i);
    EXPECT_EQ(
        std::vector<double>(front.begin(), front.end()),
        (std::vector<double>{static_cast<double>(i), 10.0 + i, 20.0 + i}));
    ring.Pop();
  }
  EXPECT_TRUE(ring.Push(4, {row})) << "room again";
  for (const std::uint64_t expected : {2, 3, 4}) {
    ASSERT_TRUE(ring.Front(&tag, &front));
    EXPECT_EQ(tag, expected);
    ring.Pop();
  }
  EXPECT_FALSE(ring.Front(&tag, &front)) << "empty";
}

TEST(SpscRowRingTest, HandsEveryRowAcrossThreadsInOrder) {
  constexpr std::uint64_t kRows = 200000;
  SpscRowRing ring(/*capacity=*/64, /*width=*/4);
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < kRows;) {
      const double v = static_cast<double>(i);
      const double row[] = {v, v + 1, v + 2, v + 3};
      if (ring.Push(i, {row})) ++i;  // full: try again
    }
  });
  std::uint64_t next = 0;
  std::uint64_t torn = 0;
  while (next < kRows) {
    std::uint64_t tag = 0;
    std::span<const double> row;
    if (!ring.Front(&tag, &row)) continue;
    ASSERT_EQ(tag, next);
    const double v = static_cast<double>(tag);
    if (row[0] != v || row[1] != v + 1 || row[2] != v + 2 || row[3] != v + 3) {
      ++torn;
    }
    ring.Pop();
    ++next;
  }
  producer.join();
  EXPECT_EQ(torn, 0u);
}

TEST(TickAnswerTableTest, GivesATicksPredictionAsPutAndNoOtherTicks) {
  TickAnswerTable table(/*slots=*/8, /*targets=*/2);
  const double y[] = {1, 2}, lower[] = {0.5, 1.5}, upper[] = {1.5, 2.5};
  table.Put(3, {.learned = 40, .asked_at_tick = 1}, y, lower, upper);
  double got[2] = {}, got_lower[2] = {}, got_upper[2] = {};
  TickAnswerOrigin origin;
  ASSERT_EQ(table.Get(3, &origin, got, got_lower, got_upper),
            TickAnswerTable::Lookup::kFound);
  EXPECT_EQ(origin.learned, 40u);
  EXPECT_EQ(origin.asked_at_tick, 1u);
  EXPECT_EQ(std::vector<double>(got, got + 2), std::vector<double>(y, y + 2));
  EXPECT_EQ(got_lower[1], 1.5);
  EXPECT_EQ(got_upper[0], 1.5);
  // Tick 11 shares tick 3's slot; tick 4 was never put.
  EXPECT_EQ(table.Get(11, &origin, got, {}, {}),
            TickAnswerTable::Lookup::kAbsent);
  EXPECT_EQ(table.Get(4, &origin, got, {}, {}),
            TickAnswerTable::Lookup::kAbsent);
  // A later tick takes the slot; an earlier one does not take it back.
  table.Put(11, {.learned = 41}, upper, y, y);
  table.Put(3, {.learned = 42}, y, y, y);
  EXPECT_EQ(table.Get(3, &origin, got, {}, {}),
            TickAnswerTable::Lookup::kAbsent);
  ASSERT_EQ(table.Get(11, &origin, got, {}, {}),
            TickAnswerTable::Lookup::kFound);
  EXPECT_EQ(origin.learned, 41u);
  EXPECT_EQ(got[0], upper[0]);
}

TEST(TickAnswerTableTest, NeverGivesAReadTornByAWrite) {
  // The writer goes on until the reader has found this many answers (a
  // busy machine may give the reader its first turn late), within a bound
  // that ends the test if it never does.
  constexpr std::uint64_t kReads = 200000;
  constexpr std::uint64_t kMaxTicks = 50000000;
  constexpr std::size_t kTargets = 7;
  TickAnswerTable table(/*slots=*/16, kTargets);
  std::atomic<std::uint64_t> written = 0;
  std::atomic<bool> enough = false, done = false;
  std::thread writer([&] {
    std::vector<double> y(kTargets), lower(kTargets), upper(kTargets);
    for (std::uint64_t tick = 0;
         tick < kMaxTicks && !enough.load(std::memory_order_acquire); ++tick) {
      for (std::size_t i = 0; i < kTargets; ++i) {
        y[i] = static_cast<double>(tick) + static_cast<double>(i);
        lower[i] = y[i] - 1;
        upper[i] = y[i] + 1;
      }
      table.Put(tick, {.learned = tick, .asked_at_tick = tick}, y, lower,
                upper);
      written.store(tick, std::memory_order_release);
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<double> y(kTargets), lower(kTargets), upper(kTargets);
  std::uint64_t found = 0, torn = 0;
  while (!done.load(std::memory_order_acquire)) {
    // The tick just written, and those still being written over it.
    const std::uint64_t tick = written.load(std::memory_order_acquire);
    TickAnswerOrigin origin;
    if (table.Get(tick, &origin, y, lower, upper) !=
        TickAnswerTable::Lookup::kFound) {
      continue;
    }
    if (++found == kReads) enough.store(true, std::memory_order_release);
    bool whole = origin.learned == tick && origin.asked_at_tick == tick;
    for (std::size_t i = 0; i < kTargets; ++i) {
      const double expected =
          static_cast<double>(tick) + static_cast<double>(i);
      whole = whole && y[i] == expected && lower[i] == expected - 1 &&
              upper[i] == expected + 1;
    }
    if (!whole) ++torn;
  }
  writer.join();
  EXPECT_GE(found, kReads);
  EXPECT_EQ(torn, 0u);
}

}  // namespace
}  // namespace streamreg
