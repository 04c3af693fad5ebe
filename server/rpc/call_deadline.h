#ifndef STREAMREG_SERVER_RPC_CALL_DEADLINE_H_
#define STREAMREG_SERVER_RPC_CALL_DEADLINE_H_

#include <algorithm>
#include <chrono>

#include "absl/time/clock.h"
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

// Until when a read of figures (GetModel, ListModels, GetMetric, the
// stats after a refit) waits for learning to catch up with what was
// acknowledged before answering as of what is learned: early enough in
// the call for the answer to arrive before its deadline (none: until
// learned, as a client that set no deadline asked).
inline absl::Time FiguresAnswerBy(absl::Time deadline,
                                  absl::Time now = absl::Now()) {
  if (deadline == absl::InfiniteFuture()) return deadline;
  const absl::Duration left = std::max(deadline - now, absl::ZeroDuration());
  return now + left * 0.8;
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_CALL_DEADLINE_H_
