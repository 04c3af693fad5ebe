#include "core/base/writer_priority_mutex.h"

#include <cerrno>
#include <cstdlib>

namespace streamreg {
namespace {

// pthread errors here mean a programming error (e.g. unlock without lock).
void Check(int result) {
  if (result != 0) std::abort();
}

}  // namespace

WriterPriorityMutex::WriterPriorityMutex() {
  pthread_rwlockattr_t attributes;
  Check(pthread_rwlockattr_init(&attributes));
  Check(pthread_rwlockattr_setkind_np(
      &attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
  Check(pthread_rwlock_init(&lock_, &attributes));
  Check(pthread_rwlockattr_destroy(&attributes));
}

WriterPriorityMutex::~WriterPriorityMutex() { pthread_rwlock_destroy(&lock_); }

void WriterPriorityMutex::lock() { Check(pthread_rwlock_wrlock(&lock_)); }

bool WriterPriorityMutex::try_lock() {
  return pthread_rwlock_trywrlock(&lock_) == 0;
}

void WriterPriorityMutex::unlock() { Check(pthread_rwlock_unlock(&lock_)); }

void WriterPriorityMutex::lock_shared() {
  Check(pthread_rwlock_rdlock(&lock_));
}

bool WriterPriorityMutex::try_lock_shared() {
  return pthread_rwlock_tryrdlock(&lock_) == 0;
}

void WriterPriorityMutex::unlock_shared() {
  Check(pthread_rwlock_unlock(&lock_));
}

}  // namespace streamreg
