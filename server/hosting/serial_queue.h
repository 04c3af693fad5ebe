#ifndef STREAMREG_SERVER_HOSTING_SERIAL_QUEUE_H_
#define STREAMREG_SERVER_HOSTING_SERIAL_QUEUE_H_

#include <deque>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {

// Runs its tasks one at a time, in the order posted, on a WorkerPool's
// threads (a "strand"): one per model, so the writes of one model queue
// behind each other without holding a pool thread while they wait, and
// writes of different models run in parallel. Urgent tasks (the robot's
// Learn samples) run before the others queued (bulk Ingest batches), in
// their own order. The pool must outlive it; a queue with tasks pending
// keeps itself alive until they have run.
class SerialQueue : public std::enable_shared_from_this<SerialQueue> {
 public:
  static std::shared_ptr<SerialQueue> Create(WorkerPool* pool) {
    return std::shared_ptr<SerialQueue>(new SerialQueue(pool));
  }
  SerialQueue(const SerialQueue&) = delete;
  SerialQueue& operator=(const SerialQueue&) = delete;

  void Post(std::function<void()> task);
  void PostUrgent(std::function<void()> task);
  // PostUrgent once `delay` has passed (WorkerPool::PostAt), holding no
  // thread until then.
  void PostUrgentAfter(absl::Duration delay, std::function<void()> task);
  // Called by the task running now: once it returns, the queue runs
  // nothing else until `ready()` holds (WorkerPool::PostWhen), and then
  // `continuation` first — so a task that would wait for something can
  // give up its pool thread meanwhile and still keep its place.
  void Defer(std::function<bool()> ready, std::function<void()> continuation);

 private:
  explicit SerialQueue(WorkerPool* pool) : pool_(pool) {}
  void Enqueue(std::function<void()> task, bool urgent);
  // Runs `first` if given, then queued tasks, urgent ones first, until
  // none is left or one defers.
  void Drain(std::function<void()> first = nullptr);
  // Hands a deferred continuation to the pool; whether there was one.
  bool PostDeferred();

  WorkerPool* pool_;
  Mutex mutex_;
  std::deque<std::function<void()>> urgent_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mutex_);
  bool running_ ABSL_GUARDED_BY(mutex_) = false;  // a Drain is posted
  // Set by Defer, taken once the deferring task has returned.
  std::function<bool()> deferred_ready_ ABSL_GUARDED_BY(mutex_);
  std::function<void()> deferred_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_SERIAL_QUEUE_H_
