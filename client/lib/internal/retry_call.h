#ifndef STREAMREG_CLIENT_LIB_INTERNAL_RETRY_CALL_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_RETRY_CALL_H_

#include <algorithm>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/lib/retry_policy.h"
#include "common/retry_after.h"
#include "common/served_by.h"

namespace streamreg {

// Runs call(attempt) until it succeeds, fails with a status that is not
// retryable, or the policy's attempts are spent (overload refusals: its
// overload_patience); returns the last status. The first failure of a
// call that names the servers serving its model (ServedBy: a cluster's
// server sending the client on) is retried at once, counted as an
// attempt: the client's router has learned where to go. Later ones wait
// the backoff, so that replicas all catching up, which send clients to
// each other, are given the time to catch up.
template <class Call>
absl::Status RetryCall(
    const RetryPolicy& policy, Call call,
    bool (*retryable)(const absl::Status&) = &RetryPolicy::IsRetryable) {
  absl::BitGen random;
  absl::Status status;
  const absl::Time start = absl::Now();
  int failures = 0;  // what counts against max_attempts
  bool sent_on = false;
  for (int attempt = 1;; ++attempt) {
    status = call(attempt);
    if (status.ok() || !retryable(status)) return status;
    if (RetryPolicy::IsOverloadRefusal(status)) {
      if (absl::Now() - start >= policy.overload_patience) return status;
    } else if (++failures >= policy.max_attempts) {
      return status;
    }
    if (!sent_on && !ServedBy(status).empty()) {
      sent_on = true;
      continue;
    }
    const absl::Duration hint =
        std::min(RetryAfter(status).value_or(absl::ZeroDuration()),
                 RetryPolicy::kLongestRetryAfter);
    absl::SleepFor(std::max(policy.Backoff(attempt, random), hint));
  }
}

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_RETRY_CALL_H_
