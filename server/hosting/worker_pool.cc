#include "server/hosting/worker_pool.h"

#include <algorithm>
#include <utility>

namespace streamreg {

WorkerPool::WorkerPool(std::size_t num_threads) {
  threads_.reserve(std::max<std::size_t>(num_threads, 1));
  for (std::size_t i = 0; i < std::max<std::size_t>(num_threads, 1); ++i) {
    threads_.emplace_back([this] { Run(); });
  }
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
    ready_.SignalAll();
  }
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::Post(std::function<void()> task) {
  MutexLock lock(&mutex_);
  tasks_.push_back(std::move(task));
  ready_.Signal();
}

void WorkerPool::Run() {
  MutexLock lock(&mutex_);
  while (true) {
    while (!stopping_ && tasks_.empty()) ready_.Wait(&mutex_);
    if (tasks_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    ++running_;
    mutex_.Unlock();
    task();
    task = nullptr;  // its captures are freed outside the lock
    mutex_.Lock();
    if (--running_ == 0 && tasks_.empty()) idle_.SignalAll();
  }
}

void WorkerPool::Drain() {
  MutexLock lock(&mutex_);
  while (!tasks_.empty() || running_ != 0) idle_.Wait(&mutex_);
}

}  // namespace streamreg
