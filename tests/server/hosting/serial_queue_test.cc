// A model's write queue (run under ThreadSanitizer): each queue's tasks in
// order one at a time, urgent ones first, timed ones when due, and a task
// that defers keeps its place without holding a thread.
#include "server/hosting/serial_queue.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {
namespace {

TEST(SerialQueueTest, RunsEachQueuesTasksInOrderOneAtATime) {
  WorkerPool pool(4);
  constexpr int kQueues = 3;
  constexpr int kTasks = 2000;
  std::vector<std::shared_ptr<SerialQueue>> queues;
  std::vector<std::vector<int>> order(kQueues);
  std::vector<std::atomic<int>> running(kQueues);
  std::atomic<int> overlaps = 0;
  std::atomic<int> done = 0;
  for (int q = 0; q < kQueues; ++q)
    queues.push_back(SerialQueue::Create(&pool));
  std::vector<std::thread> posters;
  for (int q = 0; q < kQueues; ++q) {
    posters.emplace_back([&, q] {
      for (int t = 0; t < kTasks; ++t) {
        queues[q]->Post([&, q, t] {
          if (running[q].fetch_add(1) != 0) ++overlaps;
          order[q].push_back(t);  // unsynchronized: the queue serializes
          running[q].fetch_sub(1);
          ++done;
        });
      }
    });
  }
  for (std::thread& poster : posters) poster.join();
  while (done.load() < kQueues * kTasks) std::this_thread::yield();
  EXPECT_EQ(overlaps.load(), 0);
  for (int q = 0; q < kQueues; ++q) {
    ASSERT_EQ(order[q].size(), static_cast<std::size_t>(kTasks));
    EXPECT_TRUE(std::is_sorted(order[q].begin(), order[q].end()));
  }
}

// The robot's samples do not wait behind bulk batches: urgent tasks run
// before the others queued, each lane in its own order, one at a time.
TEST(SerialQueueTest, UrgentTasksRunBeforeTheOthersQueued) {
  WorkerPool pool(2);
  std::shared_ptr<SerialQueue> queue = SerialQueue::Create(&pool);
  std::latch holding(1);
  std::latch release(1);
  queue->Post([&] {
    holding.count_down();
    release.wait();
  });
  holding.wait();
  std::vector<std::string> order;  // the queue serializes
  std::latch done(5);
  auto task = [&](std::string name) {
    return [&, name] {
      order.push_back(name);
      done.count_down();
    };
  };
  queue->Post(task("bulk1"));
  queue->PostUrgent(task("urgent1"));
  queue->Post(task("bulk2"));
  queue->PostUrgent(task("urgent2"));
  queue->Post(task("bulk3"));
  release.count_down();
  done.wait();
  EXPECT_THAT(order, ::testing::ElementsAre("urgent1", "urgent2", "bulk1",
                                            "bulk2", "bulk3"));
}

// A task posted for later runs once its time has come, holding no thread
// before: a task posted after it runs first on the pool's only one.
TEST(SerialQueueTest, ATaskPostedForLaterRunsOnceItsTimeHasCome) {
  WorkerPool pool(1);
  std::shared_ptr<SerialQueue> queue = SerialQueue::Create(&pool);
  const absl::Time due = absl::Now() + absl::Milliseconds(50);
  std::vector<std::string> order;  // the queue serializes
  absl::Time ran_at;
  queue->PostUrgentAfter(absl::Milliseconds(50), [&] {
    ran_at = absl::Now();
    order.push_back("later");
  });
  queue->Post([&] { order.push_back("now"); });
  pool.Drain();
  EXPECT_THAT(order, ::testing::ElementsAre("now", "later"));
  EXPECT_GE(ran_at, due);
}

// A task that defers gives up its thread (another queue's task runs on the
// pool's only one) and keeps its place: its continuation runs before the
// tasks queued after it, and they still run in order.
TEST(SerialQueueTest, ADeferredContinuationKeepsItsPlaceAndFreesTheThread) {
  WorkerPool pool(1);
  std::shared_ptr<SerialQueue> deferring = SerialQueue::Create(&pool);
  std::shared_ptr<SerialQueue> other = SerialQueue::Create(&pool);
  std::atomic<bool> ready = false;
  std::vector<std::string> order;  // the queue serializes
  deferring->Post([&] {
    order.push_back("first");
    deferring->Defer([&] { return ready.load(); },
                     [&] {
                       order.push_back("continuation");
                       deferring->Defer(
                           [] { return true; },
                           [&] { order.push_back("second continuation"); });
                     });
  });
  deferring->Post([&] { order.push_back("after"); });
  std::latch other_ran(1);
  other->Post([&] { other_ran.count_down(); });
  other_ran.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_THAT(order, ::testing::ElementsAre("first"));
  ready = true;
  pool.Drain();
  EXPECT_THAT(order, ::testing::ElementsAre("first", "continuation",
                                            "second continuation", "after"));
}

}  // namespace
}  // namespace streamreg
