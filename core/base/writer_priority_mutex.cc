#include "core/base/writer_priority_mutex.h"

#include <mutex>

namespace streamreg {

void WriterPriorityMutex::lock() {
  std::unique_lock<std::mutex> state(state_);
  ++writers_waiting_;
  writer_may_enter_.wait(state, [this] { return WriterMayEnter(); });
  --writers_waiting_;
  writing_ = true;
}

bool WriterPriorityMutex::try_lock() {
  std::lock_guard<std::mutex> state(state_);
  if (!WriterMayEnter()) return false;
  writing_ = true;
  return true;
}

void WriterPriorityMutex::unlock() {
  bool to_writer;
  {
    std::lock_guard<std::mutex> state(state_);
    writing_ = false;
    to_writer = writers_waiting_ > 0;
  }
  // The next writer first; readers only when none waits.
  if (to_writer) {
    writer_may_enter_.notify_one();
  } else {
    reader_may_enter_.notify_all();
  }
}

void WriterPriorityMutex::lock_shared() {
  std::unique_lock<std::mutex> state(state_);
  reader_may_enter_.wait(state, [this] { return ReaderMayEnter(); });
  ++readers_;
}

bool WriterPriorityMutex::try_lock_shared() {
  std::lock_guard<std::mutex> state(state_);
  if (!ReaderMayEnter()) return false;
  ++readers_;
  return true;
}

void WriterPriorityMutex::unlock_shared() {
  bool to_writer;
  {
    std::lock_guard<std::mutex> state(state_);
    --readers_;
    to_writer = readers_ == 0 && writers_waiting_ > 0;
  }
  if (to_writer) writer_may_enter_.notify_one();
}

}  // namespace streamreg
