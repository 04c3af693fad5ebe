#ifndef STREAMREG_SERVER_CLUSTER_RETRIED_UNTIL_H_
#define STREAMREG_SERVER_CLUSTER_RETRIED_UNTIL_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace streamreg {

// How long RetriedUntil waits between two tries.
inline constexpr absl::Duration kClusterRetryPause = absl::Milliseconds(50);

namespace retried_until_internal {
inline const absl::Status& StatusOf(const absl::Status& status) {
  return status;
}
template <class T>
const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}
}  // namespace retried_until_internal

// `call()` again while it answers UNAVAILABLE (the cluster electing a
// leader, a node gone, a JetStream request timed out), until `deadline`;
// returns the last answer. Only for calls that are safe to repeat: appends
// and proposals deduplicated by their ids, a stream's creation (the same
// configuration twice opens the stream that exists).
template <class Call>
auto RetriedUntil(absl::Time deadline, const Call& call) {
  auto result = call();
  while (!result.ok() &&
         absl::IsUnavailable(retried_until_internal::StatusOf(result)) &&
         absl::Now() < deadline) {
    absl::SleepFor(kClusterRetryPause);
    result = call();
  }
  return result;
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_RETRIED_UNTIL_H_
