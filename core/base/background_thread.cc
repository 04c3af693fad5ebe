#include "core/base/background_thread.h"

#include <pthread.h>

#include <string>

#include "core/base/realtime_priority.h"

namespace streamreg {

// The longest thread name Linux keeps, without its terminating zero.
constexpr std::size_t kLongestThreadName = 15;

void BeginBackgroundThread(std::string_view name) {
  const std::string kept(name.substr(0, kLongestThreadName));
  (void)pthread_setname_np(pthread_self(), kept.c_str());
  LeaveRealtime();
}

}  // namespace streamreg
