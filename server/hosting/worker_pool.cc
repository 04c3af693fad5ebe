#include "server/hosting/worker_pool.h"

#include <algorithm>
#include <utility>

#include "core/base/background_thread.h"

namespace streamreg {

WorkerPool::WorkerPool(std::size_t num_threads, std::string_view name,
                       std::chrono::milliseconds when_poll)
    : when_poll_(when_poll) {
  threads_.reserve(std::max<std::size_t>(num_threads, 1));
  for (std::size_t i = 0; i < std::max<std::size_t>(num_threads, 1); ++i) {
    threads_.emplace_back([this, name = std::string(name)] {
      BeginBackgroundThread(name);
      Run();
    });
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

// Each Post signals after unlocking: a thread woken while the poster still
// held the mutex would block on it at once, and be woken a second time
// when the poster let go (a context switch and a futex call more per task).

void WorkerPool::Post(std::function<void()> task) {
  {
    MutexLock lock(&mutex_);
    tasks_.push_back(std::move(task));
  }
  ready_.Signal();
}

void WorkerPool::PostWhen(std::function<bool()> ready,
                          std::function<void()> task) {
  {
    MutexLock lock(&mutex_);
    waiting_.push_back({std::move(ready), std::move(task)});
  }
  ready_.Signal();
}

void WorkerPool::CheckWaiting() {
  {
    // Taken, so that a thread that has just found every condition false
    // is waiting by the signal (it holds the lock from its check to its
    // wait).
    MutexLock lock(&mutex_);
    if (waiting_.empty()) return;
  }
  ready_.SignalAll();
}

void WorkerPool::PostAt(std::chrono::steady_clock::time_point due,
                        std::function<void()> task) {
  {
    MutexLock lock(&mutex_);
    timed_.emplace(due, std::move(task));
  }
  ready_.Signal();  // a waiting thread takes the earlier time into account
}

void WorkerPool::QueueDueTimed() {
  const auto now = std::chrono::steady_clock::now();
  while (!timed_.empty() && timed_.begin()->first <= now) {
    tasks_.push_back(std::move(timed_.begin()->second));
    timed_.erase(timed_.begin());
  }
}

void WorkerPool::WaitForWork() {
  if (waiting_.empty() && timed_.empty()) {
    ready_.Wait(&mutex_);
    return;
  }
  auto until = std::chrono::steady_clock::time_point::max();
  if (!timed_.empty()) until = timed_.begin()->first;
  if (!waiting_.empty()) {
    until = std::min(until, std::chrono::steady_clock::now() + when_poll_);
  }
  ready_.WaitUntil(&mutex_, until);
}

void WorkerPool::QueueReadyWaiting() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->ready()) {
      tasks_.push_back(std::move(it->task));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkerPool::Run() {
  MutexLock lock(&mutex_);
  while (true) {
    // Checked before each task too: a busy pool must not starve them.
    if (!waiting_.empty()) QueueReadyWaiting();
    if (!timed_.empty()) QueueDueTimed();
    while (tasks_.empty()) {
      if (stopping_ && waiting_.empty() && timed_.empty()) return;  // all run
      WaitForWork();
      QueueReadyWaiting();
      QueueDueTimed();
    }
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    ++running_;
    mutex_.Unlock();
    task();
    task = nullptr;  // its captures are freed outside the lock
    mutex_.Lock();
    --running_;
    if (Idle()) idle_.SignalAll();
  }
}

void WorkerPool::Drain() {
  MutexLock lock(&mutex_);
  while (!Idle()) idle_.Wait(&mutex_);
}

}  // namespace streamreg
