#ifndef STREAMREG_CORE_BASE_MUTEX_H_
#define STREAMREG_CORE_BASE_MUTEX_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace streamreg {

// A mutex that clang's thread-safety analysis knows (fields name it in
// ABSL_GUARDED_BY) and that the sanitizers see: it is a std::mutex, whose
// pthread calls ThreadSanitizer intercepts. (absl::Mutex has the same
// annotations, but Debian's Abseil is not built for ThreadSanitizer, which
// then sees no lock at all.) The interface follows absl::Mutex.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mutex_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mutex_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// Holds a Mutex for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mutex) ABSL_EXCLUSIVE_LOCK_FUNCTION(mutex)
      : mutex_(mutex) {
    mutex_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mutex_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mutex_;
};

// A condition variable waited on with a Mutex held (std::condition_variable;
// timed waits run on the steady clock).
class CondVar {
 public:
  // Releases `mutex` while waiting for a signal (or a spurious wake-up:
  // wait in a loop on the condition) and holds it again on return.
  void Wait(Mutex* mutex) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) {
    std::unique_lock<std::mutex> lock(mutex->mutex_, std::adopt_lock);
    condition_.wait(lock);
    lock.release();
  }
  // The same until `deadline` at the latest: false once it has passed.
  bool WaitUntil(Mutex* mutex, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) {
    std::unique_lock<std::mutex> lock(mutex->mutex_, std::adopt_lock);
    const bool signalled =
        condition_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  // The same until a wall-clock `deadline` (a call's; InfiniteFuture:
  // none), waited out on the steady clock.
  bool WaitUntil(Mutex* mutex, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) {
    if (deadline == absl::InfiniteFuture()) {
      Wait(mutex);
      return true;
    }
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    return WaitUntil(mutex, std::chrono::steady_clock::now() +
                                absl::ToChronoNanoseconds(left));
  }
  void Signal() { condition_.notify_one(); }
  void SignalAll() { condition_.notify_all(); }

 private:
  std::condition_variable condition_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_MUTEX_H_
