// Creating and deleting models on a real three-node NATS JetStream
// cluster, as far as placements and logs go: a create is placed on the
// live servers rendezvous hashing picks with its create entry first in a
// log of its own; the same create again finds it made, another is
// refused; a delete empties the placement, and the name created again
// gets a log of the next generation, the old one abandoned.
#include "server/cluster/model_creation.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/rendezvous.h"
#include "tests/support/cluster_parts.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

class ModelCreationTest : public NatsPlacementsTest {
 protected:
  void SetUp() override {
    NatsPlacementsTest::SetUp();
    for (const std::string server :
         {"server-a:1", "server-b:1", "server-c:1"}) {
      members_.push_back(
          std::make_unique<Membership>(*placements_, server, absl::Seconds(5)));
      ASSERT_TRUE(Retried([&] { return members_.back()->Heartbeat(); }).ok());
    }
    janitor_ =
        std::make_unique<StreamJanitor>(*client_, *placements_, absl::Hours(1));
    creation_ = std::make_unique<ModelCreation>(
        *client_, *placements_, *members_[0], *janitor_,
        ModelCreation::Options{
            .replicas = 2, .log = {}, .write_timeout = absl::Seconds(30)});
    identity_ = {"arm", absl::FromUnixSeconds(1), BaseConfig(), {}};
  }

  PlacementStore::Placement PlacementOf(const std::string& name) {
    absl::StatusOr<PlacementStore::Placement> placement =
        Retried([&] { return placements_->Get(name); });
    EXPECT_TRUE(placement.ok()) << placement.status();
    return placement.ok() ? *std::move(placement) : PlacementStore::Placement{};
  }

  std::vector<std::unique_ptr<Membership>> members_;
  std::unique_ptr<StreamJanitor> janitor_;
  std::unique_ptr<ModelCreation> creation_;
  ModelIdentity identity_;
};

TEST_F(ModelCreationTest, ACreateIsPlacedWithItsEntryFirstInALogOfItsOwn) {
  ASSERT_TRUE(creation_->Create(identity_).ok());
  const PlacementStore::Placement placement = PlacementOf("arm");
  EXPECT_TRUE(placement.created);
  EXPECT_EQ(placement.log, 1u);
  EXPECT_EQ(
      placement.servers,
      RendezvousOwners("arm", {"server-a:1", "server-b:1", "server-c:1"}, 2));
  LogStream log = LogStream::Attach(*client_, "arm", {}, placement.log);
  absl::StatusOr<LogEntry> first = Retried([&] { return log.Entry(1); });
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->payload, EncodeCreateEntry(identity_));
  EXPECT_EQ(creation_->logs_given_up(), 0u);
}

TEST_F(ModelCreationTest, TheSameCreateAgainFindsItMadeAnotherIsRefused) {
  ASSERT_TRUE(creation_->Create(identity_).ok());
  // A client's retry after a lost answer.
  EXPECT_TRUE(creation_->Create(identity_).ok());
  ModelIdentity other = identity_;
  other.config.seed = 17;
  const absl::Status refused = creation_->Create(other);
  EXPECT_TRUE(absl::IsAlreadyExists(refused)) << refused;
  EXPECT_EQ(PlacementOf("arm").log, 1u);
}

TEST_F(ModelCreationTest, ANameDeletedAndCreatedAgainGetsTheNextLog) {
  ASSERT_TRUE(creation_->Create(identity_).ok());
  absl::StatusOr<std::uint64_t> unplaced = creation_->Unplace("arm");
  ASSERT_TRUE(unplaced.ok()) << unplaced.status();
  EXPECT_EQ(*unplaced, 1u);
  EXPECT_TRUE(PlacementOf("arm").servers.empty());
  EXPECT_TRUE(absl::IsNotFound(creation_->Unplace("arm").status()));
  EXPECT_TRUE(absl::IsNotFound(creation_->Unplace("hand").status()));

  ModelIdentity again = identity_;
  again.config.seed = 17;  // another model of the name
  ASSERT_TRUE(creation_->Create(again).ok());
  const PlacementStore::Placement placement = PlacementOf("arm");
  EXPECT_TRUE(placement.created);
  EXPECT_EQ(placement.log, 2u);
  // Whatever the first model left in its log is never read: it goes.
  EXPECT_EQ(janitor_->abandoned(), 1u);
}

}  // namespace
}  // namespace streamreg
