#ifndef STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_
#define STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_

#include <pthread.h>

namespace streamreg {

// A reader-writer lock that lets a waiting writer in before new readers.
// std::shared_mutex on glibc prefers readers, so a steady stream of searches
// could starve the one thread that inserts; this one cannot. Satisfies the
// SharedMutex requirements (std::unique_lock / std::shared_lock work).
class WriterPriorityMutex {
 public:
  WriterPriorityMutex();
  ~WriterPriorityMutex();
  WriterPriorityMutex(const WriterPriorityMutex&) = delete;
  WriterPriorityMutex& operator=(const WriterPriorityMutex&) = delete;

  void lock();
  bool try_lock();
  void unlock();
  void lock_shared();
  bool try_lock_shared();
  void unlock_shared();

 private:
  pthread_rwlock_t lock_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_WRITER_PRIORITY_MUTEX_H_
