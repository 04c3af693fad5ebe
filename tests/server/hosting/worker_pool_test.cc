// The hosting layer's thread pool (run under ThreadSanitizer): timed tasks
// by their time, never before it, and tasks posted to run once a condition
// holds, holding no thread meanwhile, checked at once when the pool is told
// one may hold.
#include "server/hosting/worker_pool.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Timed tasks run by their time, not in the order posted (equal times in
// that order), never before it; Drain waits for them, and so does the
// destructor.
TEST(WorkerPoolTest, TimedTasksRunByTheirTimeNeverBefore) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> order;  // one thread: no race
  std::vector<std::pair<Clock::time_point, Clock::time_point>> due_and_ran;
  const Clock::time_point start = Clock::now();
  auto at = [&](int ms, std::string name) {
    return [&, due = start + std::chrono::milliseconds(ms), name] {
      order.push_back(name);
      due_and_ran.emplace_back(due, Clock::now());
    };
  };
  {
    WorkerPool pool(1);
    pool.PostAt(start + std::chrono::milliseconds(40), at(40, "late"));
    pool.PostAt(start + std::chrono::milliseconds(20), at(20, "early"));
    pool.PostAt(start + std::chrono::milliseconds(20), at(20, "early, 2nd"));
    pool.Post([&] { order.push_back("now"); });
    pool.Drain();
    EXPECT_THAT(order,
                ::testing::ElementsAre("now", "early", "early, 2nd", "late"));
    pool.PostAt(Clock::now() + std::chrono::milliseconds(30),
                [&] { order.push_back("at the destructor"); });
  }
  EXPECT_EQ(order.back(), "at the destructor");
  for (const auto& [due, ran] : due_and_ran) EXPECT_GE(ran, due);
}

// A task posted to run once a condition holds runs after it holds, on a
// pool thread, without holding one meanwhile; Drain waits for it.
TEST(WorkerPoolTest, PostWhenRunsTheTaskOnceItsConditionHolds) {
  WorkerPool pool(1);
  std::atomic<bool> ready = false;
  std::atomic<int> ran = 0;
  pool.PostWhen([&] { return ready.load(); }, [&] { ran = 1; });
  std::latch other(1);
  pool.Post([&] { other.count_down(); });
  other.wait();  // the only thread was free for another task
  EXPECT_EQ(ran.load(), 0);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ready = true;
  });
  pool.Drain();
  EXPECT_EQ(ran.load(), 1);
  release.join();
}

// A pool told that a condition may hold (CheckWaiting) checks it then: with
// a poll of an hour, the task runs only because it was told.
TEST(WorkerPoolTest, CheckWaitingRunsATaskWhoseConditionHoldsNow) {
  WorkerPool pool(1, "worker", std::chrono::hours(1));
  std::atomic<bool> ready = false;
  std::latch ran(1);
  pool.PostWhen([&] { return ready.load(); }, [&] { ran.count_down(); });
  pool.CheckWaiting();  // not yet: nothing runs
  std::latch other(1);
  pool.Post([&] { other.count_down(); });
  other.wait();
  EXPECT_FALSE(ran.try_wait());
  ready = true;
  pool.CheckWaiting();
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!ran.try_wait() && absl::Now() < give_up)
    absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(ran.try_wait()) << "the task waited for the poll";
}

}  // namespace
}  // namespace streamreg
