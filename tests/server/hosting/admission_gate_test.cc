// Overload protection's counters: within the limit work is admitted,
// beyond it refused with the limit named and a retry hint; one request
// larger than the limit goes through alone; a ticket passes every gate or
// none; and under contention the gates never hold more than their limit.
#include "server/hosting/admission_gate.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(AdmissionGateTest, AdmitsWithinTheLimitAndRefusesBeyondIt) {
  AdmissionGate gate("samples queued for model 'm'", "--limit", 10);
  EXPECT_TRUE(gate.TryAcquire(6));
  EXPECT_TRUE(gate.TryAcquire(4));
  EXPECT_EQ(gate.held(), 10u);
  EXPECT_FALSE(gate.TryAcquire(1));
  EXPECT_EQ(gate.held(), 10u);
  EXPECT_EQ(gate.refused(), 1u);
  gate.Release(4);
  EXPECT_FALSE(gate.TryAcquire(5));
  EXPECT_TRUE(gate.TryAcquire(4));
  gate.Release(10);
  EXPECT_EQ(gate.held(), 0u);
  EXPECT_EQ(gate.refused(), 2u);
}

TEST(AdmissionGateTest, ARequestLargerThanTheLimitGoesThroughOnlyAlone) {
  AdmissionGate gate("samples", "--limit", 10);
  EXPECT_TRUE(gate.TryAcquire(25));  // nothing held: admitted
  EXPECT_FALSE(gate.TryAcquire(1));
  gate.Release(25);
  EXPECT_TRUE(gate.TryAcquire(1));
  EXPECT_FALSE(gate.TryAcquire(25));  // not alone now
}

TEST(AdmissionGateTest, ZeroIsNoLimit) {
  AdmissionGate gate("samples", "--limit", 0);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(gate.TryAcquire(1'000'000));
  EXPECT_EQ(gate.held(), 1'000'000'000u);
}

TEST(AdmissionGateTest, TheRefusalNamesTheLimitAndCarriesTheRetryHint) {
  AdmissionGate gate("samples queued for model 'arm'",
                     "--max-queued-samples-per-model", 10);
  ASSERT_TRUE(gate.TryAcquire(8));
  const absl::Status refusal = gate.RefusalFor(5);
  EXPECT_EQ(refusal.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refusal.message(),
            "overloaded: 8 samples queued for model 'arm', 5 more would pass "
            "10 (--max-queued-samples-per-model); retry in 100 ms");
  EXPECT_EQ(RetryAfter(refusal), kOverloadRetryAfter);
  EXPECT_EQ(RetryAfter(absl::ResourceExhaustedError("disk full")),
            std::nullopt);
  EXPECT_EQ(RetryAfter(WithRetryAfter(absl::UnavailableError("x"),
                                      absl::Milliseconds(250))),
            absl::Milliseconds(250));
}

TEST(AdmissionGateTest, APacedLimitBindsWhenItIsTheSmallerAndIsNamed) {
  AdmissionGate gate("samples queued for model 'arm'",
                     "--max-queued-samples-per-model", 100);
  std::uint64_t paced = 0;  // what the model learns in the delay, as it goes
  gate.SetPacedLimit([&paced] { return paced; },
                     "what it learns in 100ms, --max-queue-delay");
  EXPECT_EQ(gate.paced_limit(), 0u);  // rate unknown: the count alone
  ASSERT_TRUE(gate.TryAcquire(60));
  EXPECT_TRUE(gate.TryAcquire(40));
  EXPECT_FALSE(gate.TryAcquire(1));
  EXPECT_EQ(gate.RefusalFor(1).message(),
            "overloaded: 100 samples queued for model 'arm', 1 more would "
            "pass 100 (--max-queued-samples-per-model); retry in 100 ms");
  gate.Release(40);
  paced = 64;  // a slow model: the paced limit binds
  EXPECT_FALSE(gate.TryAcquire(5));
  EXPECT_EQ(gate.RefusalFor(5).message(),
            "overloaded: 60 samples queued for model 'arm', 5 more would "
            "pass 64 (what it learns in 100ms, --max-queue-delay); retry in "
            "100 ms");
  EXPECT_EQ(RetryAfter(gate.RefusalFor(5)), kOverloadRetryAfter);
  EXPECT_TRUE(gate.TryAcquire(4));
  paced = 1000;  // a fast one: the count binds again
  EXPECT_TRUE(gate.TryAcquire(36));
  EXPECT_FALSE(gate.TryAcquire(1));
  gate.Release(100);
  // Alone, a request larger than either still goes through.
  paced = 10;
  EXPECT_TRUE(gate.TryAcquire(50));
  EXPECT_EQ(gate.refused(), 3u);

  AdmissionGate paced_only("samples", "--count", 0);
  paced_only.SetPacedLimit([] { return std::uint64_t{3}; }, "--paced");
  EXPECT_TRUE(paced_only.TryAcquire(3));
  EXPECT_FALSE(paced_only.TryAcquire(1));
}

TEST(AdmissionTicketTest, PassesEveryGateOrNone) {
  AdmissionGate model("model", "--per-model", 10);
  AdmissionGate server("server", "--server", 15);
  absl::StatusOr<AdmissionTicket> first =
      AdmissionTicket::Admit({&model, &server}, 8);
  ASSERT_TRUE(first.ok());
  AdmissionGate other_model("other model", "--per-model", 10);
  // The other model's gate admits 8, the server's does not (16 > 15): the
  // other model's share is given back.
  absl::StatusOr<AdmissionTicket> second =
      AdmissionTicket::Admit({&other_model, &server}, 8);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("(--server)"),
            absl::string_view::npos)
      << second.status();
  EXPECT_EQ(other_model.held(), 0u);
  EXPECT_EQ(server.held(), 8u);
  EXPECT_EQ(model.held(), 8u);

  AdmissionTicket moved = *std::move(first);
  EXPECT_EQ(model.held(), 8u);  // a move does not release
  moved = AdmissionTicket();    // assigning over it does
  EXPECT_EQ(model.held(), 0u);
  EXPECT_EQ(server.held(), 0u);
  {
    absl::StatusOr<AdmissionTicket> scoped =
        AdmissionTicket::Admit({&model, &server}, 3);
    ASSERT_TRUE(scoped.ok());
    EXPECT_EQ(server.held(), 3u);
  }
  EXPECT_EQ(server.held(), 0u);  // released when destroyed
}

// A read parked for learning gives back its place among the server's reads
// and keeps its model's until it is answered.
TEST(AdmissionTicketTest, ReleasesOneGateAloneAndTheRestLater) {
  AdmissionGate model("model", "--per-model", 10);
  AdmissionGate server("server", "--server", 15);
  AdmissionGate elsewhere("elsewhere", "--elsewhere", 15);
  absl::StatusOr<AdmissionTicket> ticket =
      AdmissionTicket::Admit({&model, &server}, 4);
  ASSERT_TRUE(ticket.ok());
  ticket->ReleaseAt(server);
  EXPECT_EQ(server.held(), 0u);
  EXPECT_EQ(model.held(), 4u);
  ticket->ReleaseAt(server);     // nothing held there any more
  ticket->ReleaseAt(elsewhere);  // nor ever
  EXPECT_EQ(server.held(), 0u);
  EXPECT_EQ(elsewhere.held(), 0u);
  ticket->Release();
  EXPECT_EQ(model.held(), 0u);
  EXPECT_EQ(server.held(), 0u);
}

// Threads admitting and releasing at random never make a gate hold more
// than its limit (no request here is larger than the limit), and every
// admission is given back.
TEST(AdmissionGateTest, NeverHoldsMoreThanItsLimitUnderContention) {
  constexpr std::uint64_t kLimit = 64;
  AdmissionGate model("model", "--per-model", kLimit);
  AdmissionGate server("server", "--server", kLimit + 16);
  std::atomic<std::uint64_t> max_seen{0};
  std::atomic<std::uint64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::uint64_t amount = 1 + (i * 7 + t) % 16;
        absl::StatusOr<AdmissionTicket> ticket =
            AdmissionTicket::Admit({&model, &server}, amount);
        if (!ticket.ok()) continue;
        admitted.fetch_add(1);
        std::uint64_t held = model.held();
        std::uint64_t seen = max_seen.load();
        while (held > seen && !max_seen.compare_exchange_weak(seen, held)) {
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(max_seen.load(), kLimit);
  EXPECT_GT(admitted.load(), 0u);
  EXPECT_EQ(model.held(), 0u);
  EXPECT_EQ(server.held(), 0u);
}

}  // namespace
}  // namespace streamreg
