#include "server/hosting/serial_queue.h"

#include <utility>

namespace streamreg {

void SerialQueue::Post(std::function<void()> task) {
  {
    MutexLock lock(&mutex_);
    tasks_.push_back(std::move(task));
    if (running_) return;
    running_ = true;
  }
  pool_->Post([self = shared_from_this()] { self->Drain(); });
}

void SerialQueue::Drain() {
  while (true) {
    std::function<void()> task;
    {
      MutexLock lock(&mutex_);
      if (tasks_.empty()) {
        running_ = false;
        return;
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();  // destroyed before the next lock: its captures may own much
  }
}

}  // namespace streamreg
