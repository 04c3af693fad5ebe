// The group commit of Learn streams' samples: a call ends at its first
// sample not written, and samples after a resent one wait with it, so a
// model learns each stream in its order.
#include "server/hosting/learn_batcher.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

// The batcher's side of a model: a log that records the ids written, in
// order, and refuses any write holding `no_room_for` (a disk too full for
// that sample's record).
struct FakeLog {
  std::uint64_t no_room_for = 0;
  std::vector<std::uint64_t> written;
  std::uint64_t withdrawn = 0;
  LearnBatcher::Write write =
      [this](const ValidatedSamples& samples, std::vector<Prediction>*,
             const WriteOptions&) -> absl::StatusOr<LearnOutcome> {
    for (std::size_t s = 0; s < samples.size(); ++s) {
      if (samples[s].sample_id == no_room_for) {
        return absl::ResourceExhaustedError("no space left on the disk");
      }
    }
    LearnOutcome outcome;
    for (std::size_t s = 0; s < samples.size(); ++s) {
      written.push_back(samples[s].sample_id);
      outcome.sequence.push_back(written.size());
      outcome.duplicate.push_back(false);
    }
    return outcome;
  };
  LearnBatcher::Withdraw withdraw = [this](std::uint64_t samples) {
    withdrawn += samples;
  };
};

// A Learn call as the batcher sees it: its requests, ended (as
// LearnReactor keeps it) at its first failed answer or when cancelled.
struct FakeCall {
  bool ended = false;
  std::vector<absl::Status> answers;
  LearnBatcher::Request Request(const Model& model, const Sample& sample) {
    return {.sample = *model.Validate({&sample, 1}),
            .abandoned = [this] { return ended; },
            .done =
                [this](LearnBatcher::Result result) {
                  ended |= !result.status.ok();
                  answers.push_back(result.status);
                }};
  }
};

// One call's samples through the batcher, with a log that has no room for
// its second sample but room for a single later one: the call ends there,
// and nothing after that sample is written, in this group or a later one
// (learned before the second sample's resend, it would teach the model
// another order than the stream's).
TEST(LearnBatcherTest, ACallEndsAtItsFirstSampleNotWritten) {
  const std::unique_ptr<Model> model = *Model::Create(SmallConfig());
  Batch batch(6, 100);
  FakeLog log;
  log.no_room_for = 101;
  FakeCall call;
  LearnBatcher batcher;
  for (std::size_t i = 0; i < 4; ++i) {
    batcher.Add(call.Request(*model, batch.samples[i]));
  }
  EXPECT_FALSE(batcher.Drain(log.write, log.withdraw));
  for (std::size_t i = 4; i < 6; ++i) {
    batcher.Add(call.Request(*model, batch.samples[i]));
  }
  EXPECT_FALSE(batcher.Drain(log.write, log.withdraw));
  EXPECT_THAT(log.written, ::testing::ElementsAre(100u));
  ASSERT_EQ(call.answers.size(), 6u);
  EXPECT_TRUE(call.answers[0].ok());
  EXPECT_EQ(call.answers[1].code(), absl::StatusCode::kResourceExhausted);
  for (std::size_t i = 2; i < 6; ++i) {
    EXPECT_EQ(call.answers[i].code(), absl::StatusCode::kCancelled) << i;
  }
  // The second group was announced and never written.
  EXPECT_EQ(log.withdrawn, 2u);
}

// A client that dropped its call resends on a new one while the old call's
// samples still wait: the resent ids wait for the next group, and so do the
// samples after them, so that the old call, found cancelled, leaves the
// new one's samples in their order.
TEST(LearnBatcherTest, ASampleAfterAResentOneWaitsWithIt) {
  const std::unique_ptr<Model> model = *Model::Create(SmallConfig());
  Batch batch(3, 100);
  FakeLog log;
  FakeCall dropped, resent;
  LearnBatcher batcher;
  for (std::size_t i = 0; i < 2; ++i) {
    batcher.Add(dropped.Request(*model, batch.samples[i]));
  }
  for (std::size_t i = 0; i < 3; ++i) {
    batcher.Add(resent.Request(*model, batch.samples[i]));
  }
  dropped.ended = true;  // its client is gone
  EXPECT_TRUE(batcher.Drain(log.write, log.withdraw));
  EXPECT_FALSE(batcher.Drain(log.write, log.withdraw));
  EXPECT_THAT(log.written, ::testing::ElementsAre(100u, 101u, 102u));
  EXPECT_EQ(dropped.answers.size(), 2u);
  EXPECT_THAT(resent.answers, ::testing::Each(absl::OkStatus()));
  EXPECT_EQ(log.withdrawn, 2u);
}

}  // namespace
}  // namespace streamreg
