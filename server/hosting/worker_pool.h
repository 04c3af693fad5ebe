#ifndef STREAMREG_SERVER_HOSTING_WORKER_POOL_H_
#define STREAMREG_SERVER_HOSTING_WORKER_POOL_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"

namespace streamreg {

// A fixed set of threads running posted tasks in FIFO order. The server
// runs model writes (learning, refits) and reads (predictions) on pools of
// these, off gRPC's callback threads, which then only admit or refuse
// calls and stay free for health checks. A task may also be posted to run
// once a condition holds (PostWhen: a learner waiting for background work
// without holding a thread, a read waiting for learning); the pool checks
// such conditions every kWhenPollInterval while any is pending, and at
// once when told that one may hold (CheckWaiting). A task may be posted for a
// time (PostAt: a Learn group's linger), run once it has come, to the clock's
// precision, holding no thread before. The destructor runs every task
// already posted — conditional ones once their condition holds, timed
// ones at their time — then joins.
class WorkerPool {
 public:
  static constexpr std::chrono::milliseconds kWhenPollInterval{2};
  // `name`: its threads' (BeginBackgroundThread), e.g. "learning";
  // `when_poll`: how often it checks the conditions of PostWhen's tasks
  // (kWhenPollInterval; tests make it long, to see CheckWaiting alone).
  explicit WorkerPool(std::size_t num_threads, std::string_view name = "worker",
                      std::chrono::milliseconds when_poll = kWhenPollInterval);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Post(std::function<void()> task);
  // Runs `task` like a posted one once `ready()` holds: `ready` must be
  // cheap, thread-safe, and hold eventually (it is called with the pool's
  // lock held, so it must not call into the pool).
  void PostWhen(std::function<bool()> ready, std::function<void()> task);
  // What a task posted with PostWhen waits for may have happened: the
  // pool checks the conditions now rather than at its next poll (a read
  // parked behind one sample's learning waits for that sample, not for
  // the poll's 2 ms). Thread-safe; a lock and a wake-up.
  void CheckWaiting() ABSL_LOCKS_EXCLUDED(mutex_);
  // Runs `task` like a posted one once `due` has come; tasks due at the
  // same time run in the order posted.
  void PostAt(std::chrono::steady_clock::time_point due,
              std::function<void()> task);
  // Waits until every task posted so far (and any they post) has run.
  void Drain();
  std::size_t num_threads() const { return threads_.size(); }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mutex_);
  // Moves the conditional tasks whose condition holds, and the timed
  // tasks whose time has come, to tasks_.
  void QueueReadyWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void QueueDueTimed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Until a task is queued, the pool is stopping with nothing left, or the
  // next timed task or condition check is due.
  void WaitForWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return tasks_.empty() && waiting_.empty() && timed_.empty() &&
           running_ == 0;
  }

  // A task posted to run once its condition holds.
  struct Waiting {
    std::function<bool()> ready;
    std::function<void()> task;
  };

  Mutex mutex_;
  CondVar ready_;  // a task was posted, or stopping
  CondVar idle_;   // no task queued or running
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mutex_);
  std::vector<Waiting> waiting_ ABSL_GUARDED_BY(mutex_);
  // By due time; equal times in the order posted.
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>>
      timed_ ABSL_GUARDED_BY(mutex_);
  std::size_t running_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  const std::chrono::milliseconds when_poll_;
  std::vector<std::thread> threads_;  // fixed after construction
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_WORKER_POOL_H_
