#ifndef STREAMREG_SERVER_HOSTING_WORKER_POOL_H_
#define STREAMREG_SERVER_HOSTING_WORKER_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"

namespace streamreg {

// A fixed set of threads running posted tasks in FIFO order. The server
// runs model writes (learning, refits) and reads (predictions) on pools of
// these, off gRPC's callback threads, which then only admit or refuse
// calls and stay free for health checks. The destructor runs every task
// already posted, then joins.
class WorkerPool {
 public:
  explicit WorkerPool(std::size_t num_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Post(std::function<void()> task);
  // Waits until every task posted so far (and any they post) has run.
  void Drain();
  std::size_t num_threads() const { return threads_.size(); }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mutex_);

  Mutex mutex_;
  CondVar ready_;  // a task was posted, or stopping
  CondVar idle_;   // no task queued or running
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mutex_);
  std::size_t running_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;  // fixed after construction
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_WORKER_POOL_H_
