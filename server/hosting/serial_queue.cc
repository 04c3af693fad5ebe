#include "server/hosting/serial_queue.h"

#include <utility>

namespace streamreg {

void SerialQueue::Post(std::function<void()> task) {
  Enqueue(std::move(task), /*urgent=*/false);
}

void SerialQueue::PostUrgent(std::function<void()> task) {
  Enqueue(std::move(task), /*urgent=*/true);
}

void SerialQueue::PostUrgentAfter(absl::Duration delay,
                                  std::function<void()> task) {
  pool_->PostAt(
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(delay),
      [self = shared_from_this(), task = std::move(task)]() mutable {
        self->PostUrgent(std::move(task));
      });
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

void SerialQueue::Defer(std::function<bool()> ready,
                        std::function<void()> continuation) {
  MutexLock lock(&mutex_);
  deferred_ready_ = std::move(ready);
  deferred_ = std::move(continuation);
}

bool SerialQueue::PostDeferred() {
  std::function<bool()> ready;
  std::function<void()> continuation;
  {
    MutexLock lock(&mutex_);
    if (deferred_ == nullptr) return false;
    ready = std::move(deferred_ready_);
    continuation = std::move(deferred_);
    deferred_ready_ = nullptr;
    deferred_ = nullptr;
  }
  // running_ stays set: nothing else is posted until it has run.
  pool_->PostWhen(std::move(ready),
                  [self = shared_from_this(),
                   continuation = std::move(continuation)]() mutable {
                    self->Drain(std::move(continuation));
                  });
  return true;
}

void SerialQueue::Drain(std::function<void()> first) {
  std::function<void()> task = std::move(first);
  while (true) {
    if (task != nullptr) {
      task();
      task = nullptr;  // destroyed before the next lock: its captures may
                       // own much
      if (PostDeferred()) return;
    }
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
}

}  // namespace streamreg
