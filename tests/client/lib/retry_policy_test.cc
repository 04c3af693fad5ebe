// RetryCall: which failures it retries and for how long. An overload
// refusal that carries the server's retry hint is backpressure from a
// server that is alive: waited out for the policy's overload_patience,
// however many attempts that takes; other retryable failures stop after
// max_attempts.
#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/lib/internal/retry_call.h"
#include "common/retry_after.h"
#include "common/served_by.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

RetryPolicy QuickPolicy() {
  RetryPolicy policy;
  policy.max_attempts = 3;
  policy.initial_backoff = absl::Milliseconds(1);
  policy.max_backoff = absl::Milliseconds(2);
  return policy;
}

absl::Status Overloaded() {
  return WithRetryAfter(absl::ResourceExhaustedError("overloaded"),
                        absl::Milliseconds(1));
}

TEST(RetryCallTest, OverloadRefusalsAreWaitedOutBeyondTheAttempts) {
  int calls = 0;
  const absl::Status status = RetryCall(
      QuickPolicy(),
      [&](int) { return ++calls <= 10 ? Overloaded() : absl::OkStatus(); },
      &RetryPolicy::IsRetryableResend);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(calls, 11);
}

TEST(RetryCallTest, OverloadRefusalsStopAfterThePatience) {
  RetryPolicy policy = QuickPolicy();
  policy.overload_patience = absl::Milliseconds(100);
  int calls = 0;
  const absl::Time start = absl::Now();
  const absl::Status status = RetryCall(
      policy,
      [&](int) {
        ++calls;
        return Overloaded();
      },
      &RetryPolicy::IsRetryableResend);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GE(absl::Now() - start, policy.overload_patience);
  EXPECT_GT(calls, policy.max_attempts);
}

TEST(RetryCallTest, OtherFailuresStopAfterMaxAttemptsOverloadsBetweenThem) {
  int calls = 0;
  // Unavailable, overloaded, unavailable, overloaded, unavailable: the
  // third unavailable is the last attempt.
  const absl::Status status = RetryCall(
      QuickPolicy(),
      [&](int) {
        ++calls;
        return calls % 2 == 0 ? Overloaded()
                              : absl::UnavailableError("restarting");
      },
      &RetryPolicy::IsRetryableResend);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, 5);
}

// A call's first send-on to the model's servers is followed at once (with
// backoffs of an hour, any wait would hang the test).
TEST(RetryCallTest, AFirstSendOnToTheModelsServersIsFollowedAtOnce) {
  RetryPolicy policy = QuickPolicy();
  policy.initial_backoff = absl::Hours(1);
  policy.max_backoff = absl::Hours(1);
  int calls = 0;
  const absl::Time start = absl::Now();
  EXPECT_TRUE(RetryCall(policy, [&](int) {
                return ++calls == 1 ? ServedByError("arm", {"127.0.0.1:50052"})
                                    : absl::OkStatus();
              }).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_LT(absl::Now() - start, absl::Minutes(1));
}

// Send-ons count as attempts, so servers that keep sending the client on
// (replicas all catching up) cannot loop it; after the first they wait the
// backoff like other failures.
TEST(RetryCallTest, SendOnsCountAsAttempts) {
  int calls = 0;
  const absl::Status looped = RetryCall(QuickPolicy(), [&](int) {
    ++calls;
    return ServedByError("arm", {"127.0.0.1:50052"});
  });
  EXPECT_EQ(looped.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, QuickPolicy().max_attempts);
}

TEST(RetryCallTest, AnOverloadIsNotRetriedWhereTheCallMayNotBeRepeated) {
  int calls = 0;
  const absl::Status status = RetryCall(QuickPolicy(), [&](int) {
    ++calls;
    return Overloaded();
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace streamreg
