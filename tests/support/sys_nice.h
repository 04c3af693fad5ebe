#ifndef STREAMREG_TESTS_SUPPORT_SYS_NICE_H_
#define STREAMREG_TESTS_SUPPORT_SYS_NICE_H_

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace streamreg {

// Drops CAP_SYS_NICE from the calling thread's effective set (capabilities
// are per thread on Linux, and a thread started later copies its
// creator's), so that a test sees what an unprivileged process is refused;
// false if it could not.
inline bool DropSysNiceOnThisThread() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
  return syscall(SYS_capset, &header, data) == 0;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SYS_NICE_H_
