#ifndef STREAMREG_SERVER_RPC_CALL_DEADLINE_H_
#define STREAMREG_SERVER_RPC_CALL_DEADLINE_H_

#include <chrono>

#include "absl/time/time.h"
#include "grpcpp/server_context.h"

namespace streamreg {

// The deadline the client set on a call, as the hosting layer takes it:
// absl::InfiniteFuture() when it set none.
inline absl::Time CallDeadline(const grpc::ServerContextBase& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_CALL_DEADLINE_H_
