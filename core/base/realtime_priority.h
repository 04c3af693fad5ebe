#ifndef STREAMREG_CORE_BASE_REALTIME_PRIORITY_H_
#define STREAMREG_CORE_BASE_REALTIME_PRIORITY_H_

#include "absl/status/status.h"

namespace streamreg {

// Real-time scheduling (Linux SCHED_FIFO) for the threads that answer a
// control loop: a thread at a real-time priority runs as soon as it is
// woken, ahead of every normally scheduled thread of every process, so a
// robot's answer does not queue behind learning, index rebuilds or other
// processes on a busy machine (docs/threading.md, "Real-time answers").
// Threads inherit their creator's policy: whatever a real-time thread
// starts must leave it (BeginBackgroundThread).

// The SCHED_FIFO priorities Linux offers.
inline constexpr int kLowestRealtimePriority = 1;
inline constexpr int kHighestRealtimePriority = 99;

// OK if this process may run a thread at SCHED_FIFO `priority` (tried on a
// thread of its own); else why not, naming what grants it.
absl::Status CheckRealtimePriority(int priority);

// The calling thread at SCHED_FIFO `priority`, or why not.
absl::Status EnterRealtime(int priority);

// The calling thread back to normal scheduling (SCHED_OTHER, its nice value
// kept) if it runs at a real-time priority; nothing otherwise.
void LeaveRealtime();

// The calling thread at a real-time priority for its lifetime, so that the
// threads it starts meanwhile (a library's) inherit it; then normal again.
// Priority 0: nothing.
class ScopedRealtime {
 public:
  explicit ScopedRealtime(int priority);
  ~ScopedRealtime();
  ScopedRealtime(const ScopedRealtime&) = delete;
  ScopedRealtime& operator=(const ScopedRealtime&) = delete;

  // OK, or why the priority was refused (then nothing changed).
  const absl::Status& status() const { return status_; }

 private:
  bool entered_ = false;
  absl::Status status_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_REALTIME_PRIORITY_H_
