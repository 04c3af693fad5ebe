#ifndef STREAMREG_SERVER_HOSTING_WORKER_POOL_H_
#define STREAMREG_SERVER_HOSTING_WORKER_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace streamreg {

// A fixed set of threads running posted tasks in FIFO order. The server
// runs model writes here (learning, refits), off gRPC's callback threads,
// which then stay free for predictions. The destructor runs every task
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
  void Run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> tasks_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_WORKER_POOL_H_
