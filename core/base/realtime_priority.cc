#include "core/base/realtime_priority.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace streamreg {

absl::Status EnterRealtime(int priority) {
  if (priority < kLowestRealtimePriority ||
      priority > kHighestRealtimePriority) {
    return absl::InvalidArgumentError(
        absl::StrCat("real-time priority ", priority, " is not in ",
                     kLowestRealtimePriority, "..", kHighestRealtimePriority));
  }
  sched_param param{};
  param.sched_priority = priority;
  if (sched_setscheduler(0, SCHED_FIFO, &param) == 0) return absl::OkStatus();
  const int error = errno;
  if (error == EPERM) {
    return absl::PermissionDeniedError(absl::StrCat(
        "SCHED_FIFO priority ", priority,
        " is not permitted: it needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of at "
        "least ",
        priority,
        " (ulimit -r; in a container: --cap-add SYS_NICE, or --ulimit "
        "rtprio=",
        priority, ")"));
  }
  return absl::InternalError(absl::StrCat("SCHED_FIFO priority ", priority,
                                          ": ", std::strerror(error)));
}

void LeaveRealtime() {
  const int policy = sched_getscheduler(0);
  if (policy != SCHED_FIFO && policy != SCHED_RR) return;
  sched_param param{};
  param.sched_priority = 0;
  // Lowering a policy needs no privilege; the nice value is kept.
  (void)sched_setscheduler(0, SCHED_OTHER, &param);
}

absl::Status CheckRealtimePriority(int priority) {
  absl::Status tried;
  std::thread probe([&] { tried = EnterRealtime(priority); });
  probe.join();
  return tried;
}

ScopedRealtime::ScopedRealtime(int priority) {
  if (priority == 0) return;
  status_ = EnterRealtime(priority);
  entered_ = status_.ok();
}

ScopedRealtime::~ScopedRealtime() {
  if (entered_) LeaveRealtime();
}

}  // namespace streamreg
