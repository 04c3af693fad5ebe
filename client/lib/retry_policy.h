#ifndef STREAMREG_CLIENT_LIB_RETRY_POLICY_H_
#define STREAMREG_CLIENT_LIB_RETRY_POLICY_H_

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace streamreg {

// When and how long to wait before retrying a call that may be repeated
// safely: only on UNAVAILABLE (the server is unreachable, restarting or
// draining) and ABORTED, up to max_attempts in all, waiting
// initial_backoff * multiplier^(attempt-1), capped at max_backoff, with
// full jitter. The defaults wait 3.5 s in all on average (at most 7.1 s):
// enough for a server restarting, or in a cluster for an election or a
// model being set up on the server its placement just named. Where a call
// may be resent (IsRetryableResend), an overload refusal with the server's
// retry hint is retried too, after the hint, for up to overload_patience.
struct RetryPolicy {
  int max_attempts = 8;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  double multiplier = 2.0;
  // Overload refusals that carry the server's retry hint (a server alive,
  // only slower than the writes: under load, or while a model's learning
  // waits at a take-over for a refresh or an index rebuild, which took
  // over a minute at 660,000 samples on 2 cores) are waited out for this
  // long in all, without counting as attempts: max_attempts alone gave up
  // after about 4 s of a server that kept saying "retry in 100 ms".
  absl::Duration overload_patience = absl::Minutes(5);

  // UNAVAILABLE or ABORTED.
  static bool IsRetryable(const absl::Status& status);
  // For a stream whose every message may be resent (Ingest: samples carry
  // ids): also a deadline passed while the server was busy, and an overload
  // refusal that carries the server's retry hint (RetryAfter, from its
  // grpc-retry-pushback-ms trailer; retried no sooner).
  static bool IsRetryableResend(const absl::Status& status);
  // RESOURCE_EXHAUSTED with the server's retry hint: backpressure, not a
  // failure.
  static bool IsOverloadRefusal(const absl::Status& status);
  // The longest server retry hint honoured (a hint of days is a server's
  // bug, not a reason to hang).
  static constexpr absl::Duration kLongestRetryAfter = absl::Seconds(30);

  // The wait before attempt number `attempt` + 1 (attempt counts from 1).
  absl::Duration Backoff(int attempt, absl::BitGen& random) const;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_RETRY_POLICY_H_
