// What an entry of a model's replicated log does to a replica
// (server/cluster/replica_applier.h), without a cluster: samples, a refit
// and a take-over applied in order make the model the engine makes from the
// same calls; a retried batch is all duplicates; what the model refuses (a
// batch it cannot take, an entry that is not one, another model's create
// entry) is that entry's outcome, and every entry is noted applied.
#include "server/cluster/replica_applier.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cluster/log_entries.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

class ReplicaApplierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    hosted_ = Host(/*max_samples=*/0);
    applier_.emplace(hosted_->log_writer(), HostedModel::kMaxUnlearned);
  }

  std::shared_ptr<HostedModel> Host(std::uint64_t max_samples) {
    return std::make_shared<HostedModel>(
        "arm", MakeModel(config_), std::vector<std::string>{},
        absl::FromUnixSeconds(1),
        HostedModel::Limits{.max_samples = max_samples, .dedup_window = 1000},
        HostingPools{&writes_, &learning_});
  }

  // Applies the entry and waits until what it queued is learned.
  absl::StatusOr<LearnOutcome> Apply(std::uint64_t sequence,
                                     const std::string& payload) {
    absl::StatusOr<LearnOutcome> outcome = applier_->Apply(sequence, payload);
    hosted_->CatchUp();
    return outcome;
  }

  const ModelConfig config_ = BaseConfig();
  const Stream stream_ = MakeStream(300, 5);
  WorkerPool writes_{1};
  WorkerPool learning_{1};
  std::shared_ptr<HostedModel> hosted_;
  std::optional<ReplicaApplier> applier_;
};

TEST_F(ReplicaApplierTest, EntriesInOrderMakeTheModelTheEngineMakes) {
  ASSERT_TRUE(Apply(1, EncodeCreateEntry(
                           {"arm", absl::FromUnixSeconds(1), config_, {}}))
                  .ok());
  absl::StatusOr<LearnOutcome> first =
      Apply(2, EncodeSamplesEntry(Slice(stream_, 0, 150)));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->accepted, 150u);
  EXPECT_EQ(first->sequence.back(), 150u);
  ASSERT_TRUE(Apply(3, EncodeRefitEntry()).ok());
  // No such work running: changes nothing, here as on every replica.
  ASSERT_TRUE(Apply(4, EncodeTakeOverEntry({.work = TakeOverKey::Work::kMlkrFit,
                                            .earliest = 12}))
                  .ok());
  ASSERT_TRUE(Apply(5, EncodeSamplesEntry(Slice(stream_, 150, 300),
                                          BatchTakeOvers::kAtFixedCounts))
                  .ok());
  EXPECT_EQ(hosted_->log_applied(), 5u);

  std::unique_ptr<Model> engine = MakeModel(config_);
  ASSERT_TRUE(engine->Learn(Slice(stream_, 0, 150)).ok());
  ASSERT_TRUE(engine->Refit().ok());
  ASSERT_TRUE(engine->Learn(Slice(stream_, 150, 300)).ok());
  ExpectSameModel(hosted_->model(), *engine, MakeStream(40, 99));
}

TEST_F(ReplicaApplierTest, ABatchRetriedInALaterEntryIsAllDuplicates) {
  ASSERT_TRUE(Apply(2, EncodeSamplesEntry(Slice(stream_, 0, 20))).ok());
  absl::StatusOr<LearnOutcome> again =
      Apply(3, EncodeSamplesEntry(Slice(stream_, 10, 30)));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->accepted, 10u);
  EXPECT_EQ(again->duplicates, 10u);
  EXPECT_TRUE(again->duplicate[0]);
  EXPECT_EQ(again->sequence[0], 11u);  // the first copy's place
  EXPECT_FALSE(again->duplicate[10]);
  EXPECT_EQ(again->sequence[10], 21u);
  EXPECT_EQ(hosted_->model().samples_seen(), 30u);
}

TEST_F(ReplicaApplierTest, WhatTheModelRefusesIsTheEntrysOutcomeAndApplied) {
  ASSERT_TRUE(Apply(2, EncodeSamplesEntry(Slice(stream_, 0, 20))).ok());

  Stream bad = MakeStream(3, 7);
  bad.x[4] = std::nan("");
  absl::StatusOr<LearnOutcome> refused =
      Apply(3, EncodeSamplesEntry(Slice(bad, 0, 3)));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
      << refused.status();
  EXPECT_EQ(hosted_->log_applied(), 3u);

  absl::StatusOr<LearnOutcome> damaged = Apply(4, "not an entry");
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr("4"));
  EXPECT_EQ(hosted_->log_applied(), 4u);

  ModelConfig other = config_;
  other.target_names = {"first", "renamed"};
  for (const auto& [sequence, identity] :
       {std::pair<std::uint64_t, ModelIdentity>{
            5, {"hand", absl::FromUnixSeconds(1), config_, {}}},
        {6, {"arm", absl::FromUnixSeconds(1), other, {}}}}) {
    absl::StatusOr<LearnOutcome> created =
        Apply(sequence, EncodeCreateEntry(identity));
    EXPECT_EQ(created.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(created.status().message(),
                HasSubstr("otherwise than 'arm' was made"));
    EXPECT_EQ(hosted_->log_applied(), sequence);
  }
  EXPECT_EQ(hosted_->model().samples_seen(), 20u);  // nothing else learned
}

TEST_F(ReplicaApplierTest, ABatchPastTheSampleLimitIsRefusedAndApplied) {
  hosted_ = Host(/*max_samples=*/25);
  applier_.emplace(hosted_->log_writer(), HostedModel::kMaxUnlearned);
  ASSERT_TRUE(Apply(2, EncodeSamplesEntry(Slice(stream_, 0, 20))).ok());
  absl::StatusOr<LearnOutcome> over =
      Apply(3, EncodeSamplesEntry(Slice(stream_, 20, 30)));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(hosted_->log_applied(), 3u);
  EXPECT_EQ(hosted_->model().samples_seen(), 20u);
}

}  // namespace
}  // namespace streamreg
