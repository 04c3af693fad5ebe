// A batch's ticket: its samples count as announced from the moment it is
// made until a write takes them over or the ticket goes, and its admission
// is held until then; joined and split tickets keep every count exact.
#include "server/hosting/write_ticket.h"

#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

class WriteTicketTest : public ::testing::Test {
 protected:
  // A ticket of `samples` announced samples, admitted through gate_.
  WriteTicket Ticket(std::uint64_t samples) {
    absl::StatusOr<AdmissionTicket> admitted =
        AdmissionTicket::Admit({&gate_}, samples);
    EXPECT_TRUE(admitted.ok()) << admitted.status();
    return WriteTicket(stage_, *std::move(admitted), samples);
  }
  // Announced, not queued nor withdrawn (nothing is queued here).
  std::uint64_t Announced() const { return stage_->Unlearned(0); }

  WorkerPool learning_{1};
  std::unique_ptr<Model> model_ = *Model::Create(SmallConfig());
  std::shared_ptr<LearnStage> stage_ =
      std::make_shared<LearnStage>(model_.get(), &learning_);
  AdmissionGate gate_{"samples queued", "--max-queued-samples", 100};
};

TEST_F(WriteTicketTest, DroppedItWithdrawsItsSamplesAndGivesItsAdmissionBack) {
  {
    WriteTicket ticket = Ticket(5);
    EXPECT_EQ(Announced(), 5u);
    EXPECT_EQ(gate_.held(), 5u);
  }
  EXPECT_EQ(Announced(), 0u);
  EXPECT_EQ(gate_.held(), 0u);
}

TEST_F(WriteTicketTest, TakenOverItsSamplesAreTheWritesAndItsAdmissionStays) {
  WriteTicket ticket = Ticket(5);
  EXPECT_EQ(ticket.TakeAnnounced(), 5u);
  EXPECT_EQ(ticket.TakeAnnounced(), 0u);  // once
  // The stage takes the count over where it queues them (Enqueue); until
  // then they stay announced there, and the ticket withdraws none.
  ticket.Release();
  EXPECT_EQ(Announced(), 5u);
  EXPECT_EQ(gate_.held(), 0u);
  stage_->Withdraw(5);
}

TEST_F(WriteTicketTest, AMovedTicketHoldsOnceAndAnAssignedOneReleasesItsOwn) {
  WriteTicket first = Ticket(3);
  WriteTicket moved = std::move(first);
  EXPECT_EQ(moved.announced(), 3u);
  EXPECT_EQ(Announced(), 3u);
  moved = Ticket(2);  // the 3 withdrawn, the 2 held
  EXPECT_EQ(Announced(), 2u);
  EXPECT_EQ(gate_.held(), 2u);
  first.Release();  // moved from: holds nothing
  EXPECT_EQ(Announced(), 2u);
}

TEST_F(WriteTicketTest, AGroupJoinsItsRequestsAndSplitsThemBackExactly) {
  WriteTicket group;
  group.Join(Ticket(2));
  group.Join(Ticket(3));
  EXPECT_EQ(group.announced(), 5u);
  EXPECT_EQ(gate_.held(), 5u);
  // Refused as a whole, its requests are written alone, each with its part.
  WriteTicket first = group.Split(2);
  WriteTicket second = group.Split(3);
  EXPECT_EQ(first.announced(), 2u);
  EXPECT_EQ(second.announced(), 3u);
  EXPECT_EQ(group.announced(), 0u);
  EXPECT_EQ(first.TakeAnnounced(), 2u);  // written
  second.Release();                      // refused
  EXPECT_EQ(Announced(), 2u);            // the written two, until queued
  EXPECT_EQ(gate_.held(), 5u);           // admission stays with the group
  group.Release();
  EXPECT_EQ(gate_.held(), 0u);
  stage_->Withdraw(2);
}

}  // namespace
}  // namespace streamreg
