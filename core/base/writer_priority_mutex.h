#ifndef STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_
#define STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_

#include <pthread.h>

#include "absl/base/thread_annotations.h"

namespace streamreg {

// A reader-writer lock that lets a waiting writer in before new readers.
// std::shared_mutex on glibc prefers readers, so a steady stream of searches
// could starve the one thread that inserts; this one cannot. Satisfies the
// SharedMutex requirements, and clang's thread-safety analysis knows it:
// hold it with ExclusiveLock and SharedLock below.
class ABSL_LOCKABLE WriterPriorityMutex {
 public:
  WriterPriorityMutex();
  ~WriterPriorityMutex();
  WriterPriorityMutex(const WriterPriorityMutex&) = delete;
  WriterPriorityMutex& operator=(const WriterPriorityMutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION();
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true);
  void unlock() ABSL_UNLOCK_FUNCTION();
  void lock_shared() ABSL_SHARED_LOCK_FUNCTION();
  bool try_lock_shared() ABSL_SHARED_TRYLOCK_FUNCTION(true);
  void unlock_shared() ABSL_UNLOCK_FUNCTION();

 private:
  pthread_rwlock_t lock_;
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
