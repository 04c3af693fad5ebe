#ifndef STREAMREG_COMMON_RETRY_AFTER_H_
#define STREAMREG_COMMON_RETRY_AFTER_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace streamreg {

// A status's hint of how long to wait before retrying, as a payload: the
// server puts it on its overload refusals (and gRPC's layer sends it as the
// standard grpc-retry-pushback-ms trailer); the client library puts the
// trailer back on the status it returns, and retries no sooner.
absl::Status WithRetryAfter(absl::Status status, absl::Duration retry_after);
// The hint a status carries, if any.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

}  // namespace streamreg

#endif  // STREAMREG_COMMON_RETRY_AFTER_H_
