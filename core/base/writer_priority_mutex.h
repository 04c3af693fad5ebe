#ifndef STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_
#define STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace streamreg {

// A reader-writer lock that lets a waiting writer in before new readers.
// std::shared_mutex on glibc prefers readers, so a steady stream of searches
// could starve the one thread that inserts; this one cannot. Satisfies the
// SharedMutex requirements, and clang's thread-safety analysis knows it:
// hold it with ExclusiveLock and SharedLock below.
//
// Every wait sleeps (a std::mutex and condition variables, which the
// sanitizers see); nothing spins. glibc's writer-preferring rwlock, used
// before, spins a reader that arrives while a writer is taking or giving
// the lock: a real-time reader (--realtime-priority) on every core then
// kept the preempted writer from ever running again until the kernel's
// real-time throttling, about 0.95 s later.
class ABSL_LOCKABLE WriterPriorityMutex {
 public:
  WriterPriorityMutex() = default;
  WriterPriorityMutex(const WriterPriorityMutex&) = delete;
  WriterPriorityMutex& operator=(const WriterPriorityMutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION();
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true);
  void unlock() ABSL_UNLOCK_FUNCTION();
  void lock_shared() ABSL_SHARED_LOCK_FUNCTION();
  bool try_lock_shared() ABSL_SHARED_TRYLOCK_FUNCTION(true);
  void unlock_shared() ABSL_UNLOCK_FUNCTION();

 private:
  // Whether a reader may enter / a writer may enter; with state_ held.
  bool ReaderMayEnter() const { return !writing_ && writers_waiting_ == 0; }
  bool WriterMayEnter() const { return !writing_ && readers_ == 0; }

  std::mutex state_;
  std::condition_variable reader_may_enter_;
  std::condition_variable writer_may_enter_;
  int readers_ = 0;          // holding it shared
  int writers_waiting_ = 0;  // in lock(), not yet holding it
  bool writing_ = false;     // a writer holds it
};

// Holds a WriterPriorityMutex exclusively for its scope.
class ABSL_SCOPED_LOCKABLE ExclusiveLock {
 public:
  explicit ExclusiveLock(WriterPriorityMutex& mutex)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(mutex)
      : mutex_(mutex) {
    mutex_.lock();
  }
  ~ExclusiveLock() ABSL_UNLOCK_FUNCTION() { mutex_.unlock(); }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  WriterPriorityMutex& mutex_;
};

// Holds a WriterPriorityMutex shared for its scope.
class ABSL_SCOPED_LOCKABLE SharedLock {
 public:
  explicit SharedLock(WriterPriorityMutex& mutex)
      ABSL_SHARED_LOCK_FUNCTION(mutex)
      : mutex_(mutex) {
    mutex_.lock_shared();
  }
  ~SharedLock() ABSL_UNLOCK_FUNCTION() { mutex_.unlock_shared(); }
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;

 private:
  WriterPriorityMutex& mutex_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_
