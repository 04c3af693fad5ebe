// Servers as members of a real three-node NATS JetStream cluster: each
// one's heartbeats make it live, the live list is in name order, and a
// server that stops is still counted for half the liveness period after
// it dropped out of the list, then not.
#include "server/cluster/membership.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/cluster_parts.h"

namespace streamreg {
namespace {

constexpr absl::Duration kTtl = absl::Seconds(2);

class MembershipTest : public NatsPlacementsTest {
 protected:
  PlacementStore::Options PlacementOptions() const override {
    return {.server_ttl = kTtl};
  }

  std::vector<std::string> Steady(Membership& membership) {
    absl::StatusOr<std::vector<std::string>> live =
        Retried([&] { return membership.SteadyLiveServers(); });
    EXPECT_TRUE(live.ok()) << live.status();
    return live.ok() ? *std::move(live) : std::vector<std::string>{};
  }
};

TEST_F(MembershipTest, AStoppedServerCountsUntilHalfAPeriodAfterItDroppedOut) {
  Membership b(*placements_, "server-b:1", kTtl);
  Membership a(*placements_, "server-a:1", kTtl);
  EXPECT_EQ(a.live_servers(), 0u);
  ASSERT_TRUE(Retried([&] { return a.Heartbeat(); }).ok());
  ASSERT_TRUE(Retried([&] { return b.Heartbeat(); }).ok());
  EXPECT_EQ(Steady(a), (std::vector<std::string>{"server-a:1", "server-b:1"}));
  EXPECT_EQ(a.live_servers(), 2u);
  EXPECT_EQ(a.heartbeat_failures(), 0u);
  EXPECT_TRUE(a.HeartbeatsSteady());

  // b stops; a goes on beating. b's liveness expires after kTtl, and a
  // still counts it for kTtl / 2 after it last saw it.
  const absl::Time b_stopped = absl::Now();
  bool dropped = false;
  absl::Time dropped_at;
  while (absl::Now() - b_stopped < 4 * kTtl) {
    ASSERT_TRUE(Retried([&] { return a.Heartbeat(); }).ok());
    const std::vector<std::string> live = Steady(a);
    if (live == std::vector<std::string>{"server-a:1"}) {
      dropped = true;
      dropped_at = absl::Now();
      break;
    }
    EXPECT_EQ(live, (std::vector<std::string>{"server-a:1", "server-b:1"}));
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(dropped) << "server-b was still counted after 4 periods";
  // Its liveness lasts kTtl after its last heartbeat, then kTtl / 2 more
  // of grace (less the moments between its heartbeat and b_stopped).
  EXPECT_GE(dropped_at - b_stopped, kTtl * 1.25);
  EXPECT_EQ(a.live_servers(), 1u);
}

}  // namespace
}  // namespace streamreg
