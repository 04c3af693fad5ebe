#ifndef STREAMREG_CORE_BASE_BACKGROUND_THREAD_H_
#define STREAMREG_CORE_BASE_BACKGROUND_THREAD_H_

#include <string_view>

namespace streamreg {

// First thing on each thread the server starts for its own work (learning,
// fits, rebuilds, snapshots, log reading): names it `name` (at most 15
// bytes kept), so that `top -H`, `perf` and /proc tell the threads apart,
// and takes it out of a real-time priority it inherited from the thread
// that started it (core/base/realtime_priority.h: only the threads answering a
// control loop run real-time). Best effort: a name the system refuses is
// skipped.
void BeginBackgroundThread(std::string_view name);

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_BACKGROUND_THREAD_H_
