#ifndef STREAMREG_TESTS_SUPPORT_RESERVED_PORT_H_
#define STREAMREG_TESTS_SUPPORT_RESERVED_PORT_H_

#include "absl/status/statusor.h"

namespace streamreg {

// A loopback TCP port that a test hands to a server it starts (a NATS node,
// say) and that no other test on the machine is handed while this object
// lives. The port is drawn below the kernel's ephemeral range, so neither an
// outgoing connection nor a bind to port 0 takes it meanwhile, and it is
// claimed by an exclusive flock(2) on a file named after it, which the
// tests running beside this one respect and which the kernel releases if
// the test dies. It was free to bind when it was reserved.
class ReservedPort {
 public:
  static absl::StatusOr<ReservedPort> Reserve();
  ReservedPort(ReservedPort&& other) noexcept;
  ReservedPort& operator=(ReservedPort&& other) noexcept;
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  ~ReservedPort();

  int port() const { return port_; }

 private:
  ReservedPort(int port, int lock_fd) : port_(port), lock_fd_(lock_fd) {}

  int port_ = 0;
  int lock_fd_ = -1;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_RESERVED_PORT_H_
