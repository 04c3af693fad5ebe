// PauseStatistics: count, sum and longest of recorded pauses, from any
// thread.
#include "core/base/pause_statistics.h"

#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(PauseStatisticsTest, CountsSumsAndKeepsTheLongest) {
  PauseStatistics pauses;
  EXPECT_EQ(pauses.count(), 0u);
  EXPECT_EQ(pauses.longest_seconds(), 0.0);
  pauses.Record(milliseconds(3));
  pauses.Record(milliseconds(40));
  pauses.Record(microseconds(250));
  EXPECT_EQ(pauses.count(), 3u);
  EXPECT_DOUBLE_EQ(pauses.total_seconds(), 0.04325);
  EXPECT_DOUBLE_EQ(pauses.longest_seconds(), 0.04);
  // A negative duration (a clock that went back) counts as no pause.
  pauses.Record(milliseconds(-5));
  EXPECT_EQ(pauses.count(), 4u);
  EXPECT_DOUBLE_EQ(pauses.total_seconds(), 0.04325);
}

TEST(PauseStatisticsTest, RecordsFromManyThreadsAtOnce) {
  PauseStatistics pauses;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pauses, t] {
      for (int i = 1; i <= 1000; ++i) pauses.Record(microseconds(i + t));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(pauses.count(), 4000u);
  // sum over t of (sum_{i=1}^{1000} i + 1000 t) microseconds
  EXPECT_NEAR(pauses.total_seconds(), (4 * 500500 + 1000 * 6) * 1e-6, 1e-9);
  EXPECT_DOUBLE_EQ(pauses.longest_seconds(), 1003e-6);
}

}  // namespace
}  // namespace streamreg
