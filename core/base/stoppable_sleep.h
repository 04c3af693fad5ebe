#ifndef STREAMREG_CORE_BASE_STOPPABLE_SLEEP_H_
#define STREAMREG_CORE_BASE_STOPPABLE_SLEEP_H_

#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace streamreg {

// Waits until `deadline`, or only until `stop` is requested if that comes
// first: a thread's pause between its rounds that its owner cuts short
// when it stops it. Whether the deadline came without a stop.
inline bool SleepUntilUnlessStopped(std::stop_token stop, absl::Time deadline) {
  std::mutex mutex;
  std::condition_variable_any woken;
  std::unique_lock lock(mutex);
  woken.wait_until(lock, stop, absl::ToChronoTime(deadline),
                   [] { return false; });
  return !stop.stop_requested();
}

inline bool SleepForUnlessStopped(std::stop_token stop, absl::Duration pause) {
  return SleepUntilUnlessStopped(stop, absl::Now() + pause);
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_STOPPABLE_SLEEP_H_
