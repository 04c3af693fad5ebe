// RetryCall: which failures it retries and for how long. An overload
// refusal that carries the server's retry hint is backpressure from a
// server that is alive: waited out for the policy's overload_patience,
// however many attempts that takes; other retryable failures stop after
// max_attempts.
#include "client/lib/retry_policy.h"

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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

// A server sending the client to the model's servers is followed at once
// (with backoffs of an hour, any wait would hang the test), and counts as
// an attempt, so servers that keep sending it elsewhere cannot loop it.
TEST(RetryCallTest, ASendOnToTheModelsServersIsFollowedAtOnce) {
  RetryPolicy policy = QuickPolicy();
  policy.initial_backoff = absl::Hours(1);
  policy.max_backoff = absl::Hours(1);
  const absl::Status elsewhere = ServedByError("arm", {"127.0.0.1:50052"});
  int calls = 0;
  const absl::Time start = absl::Now();
  EXPECT_TRUE(RetryCall(policy, [&](int) {
                return ++calls == 1 ? elsewhere : absl::OkStatus();
              }).ok());
  EXPECT_EQ(calls, 2);
  calls = 0;
  const absl::Status looped = RetryCall(policy, [&](int) {
    ++calls;
    return elsewhere;
  });
  EXPECT_EQ(looped.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, policy.max_attempts);
  EXPECT_LT(absl::Now() - start, absl::Minutes(1));
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
