// Moves proposed over a real three-node NATS JetStream cluster's
// placements: a model whose servers are not those rendezvous hashing
// picks among the live ones is moved, once; a deleted one, one already
// where it belongs and one changed by another server first are not.
#include "server/cluster/rebalancer.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/rendezvous.h"
#include "tests/support/cluster_parts.h"

namespace streamreg {
namespace {

class RebalancerTest : public NatsPlacementsTest {
 protected:
  absl::flat_hash_map<std::string, PlacementStore::Placement> All() {
    absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
        all = Retried([&] { return placements_->All(); });
    EXPECT_TRUE(all.ok()) << all.status();
    return all.ok()
               ? *std::move(all)
               : absl::flat_hash_map<std::string, PlacementStore::Placement>{};
  }

  const std::vector<std::string> live_ = {"server-a:1", "server-b:1",
                                          "server-c:1"};
};

TEST_F(RebalancerTest, AModelOffItsServersIsMovedOnce) {
  const std::vector<std::string> owners = RendezvousOwners("arm", live_, 2);
  Place(*placements_, "arm", {"gone:1", owners[0]});
  Place(*placements_, "hand", RendezvousOwners("hand", live_, 2));
  Place(*placements_, "leg", {"gone:1"});
  Place(*placements_, "leg", {});  // deleted
  Rebalancer rebalancer(*placements_, 2);
  rebalancer.Rebalance(All(), live_);
  EXPECT_EQ(rebalancer.models_moved(), 1u);
  absl::flat_hash_map<std::string, PlacementStore::Placement> now = All();
  EXPECT_EQ(now.at("arm").servers, owners);
  EXPECT_TRUE(now.at("leg").servers.empty());
  // Where they belong now: nothing more to move.
  rebalancer.Rebalance(now, live_);
  EXPECT_EQ(rebalancer.models_moved(), 1u);
}

TEST_F(RebalancerTest, AMoveAnotherChangeCameBeforeIsLeftToTheNextRound) {
  Place(*placements_, "arm", {"gone:1"});
  const absl::flat_hash_map<std::string, PlacementStore::Placement> read =
      All();
  Place(*placements_, "arm",
        {"gone:2"});  // another server's change, after the read
  Rebalancer rebalancer(*placements_, 2);
  rebalancer.Rebalance(read, live_);
  EXPECT_EQ(rebalancer.models_moved(), 0u);
  EXPECT_EQ(All().at("arm").servers, std::vector<std::string>{"gone:2"});
  rebalancer.Rebalance(All(), live_);
  EXPECT_EQ(rebalancer.models_moved(), 1u);
}

}  // namespace
}  // namespace streamreg
