#include "client/lib/retry_policy.h"

#include "common/exponential_backoff.h"
#include "common/retry_after.h"

namespace streamreg {

bool RetryPolicy::IsRetryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kAborted;
}

bool RetryPolicy::IsRetryableResend(const absl::Status& status) {
  return IsRetryable(status) ||
         status.code() == absl::StatusCode::kDeadlineExceeded ||
         IsOverloadRefusal(status);
}

bool RetryPolicy::IsOverloadRefusal(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted &&
         RetryAfter(status).has_value();
}

absl::Duration RetryPolicy::Backoff(int attempt, absl::BitGen& random) const {
  return BackoffCeiling(attempt, initial_backoff, max_backoff, multiplier) *
         absl::Uniform(random, 0.0, 1.0);
}

}  // namespace streamreg
