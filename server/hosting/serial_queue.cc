#include "server/hosting/serial_queue.h"

#include <utility>

namespace streamreg {

void SerialQueue::Post(std::function<void()> task) {
  Enqueue(std::move(task), /*urgent=*/false);
}

void SerialQueue::PostUrgent(std::function<void()> task) {
  Enqueue(std::move(task), /*urgent=*/true);
}

void SerialQueue::Enqueue(std::function<void()> task, bool urgent) {
  {
    MutexLock lock(&mutex_);
    (urgent ? urgent_ : tasks_).push_back(std::move(task));
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
      std::deque<std::function<void()>>& lane =
          urgent_.empty() ? tasks_ : urgent_;
      if (lane.empty()) {
        running_ = false;
        return;
      }
      task = std::move(lane.front());
      lane.pop_front();
    }
    task();  // destroyed before the next lock: its captures may own much
  }
}

}  // namespace streamreg
