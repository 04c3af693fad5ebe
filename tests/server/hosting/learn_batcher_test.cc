// The group commit of Learn streams' samples: a call ends at its first
// sample not written, and samples after a resent one wait with it, so a
// model learns each stream in its order.
#include "server/hosting/learn_batcher.h"

#include <memory>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

// The batcher's side of a model: a log that records the ids written, in
// order, taking over their tickets' announcement as a log queueing them for
// learning does, and refuses any write holding `no_room_for` (a disk too
// full for that sample's record).
struct FakeLog {
  LearnStage* stage = nullptr;
  std::uint64_t no_room_for = 0;
  std::vector<std::uint64_t> written;
  std::uint64_t taken_over = 0;
  absl::StatusOr<LearnOutcome> Write(const ValidatedSamples& samples,
                                     const WriteOptions& options) {
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
    // Queued: no longer announced (LearnStage::Enqueue).
    const std::uint64_t announced = options.ticket->TakeAnnounced();
    stage->Withdraw(announced);
    taken_over += announced;
    return outcome;
  }
};

// A model's learn stage, where requests' samples are announced.
struct Announcements {
  WorkerPool learning{1};
  std::unique_ptr<Model> model = *Model::Create(SmallConfig());
  std::shared_ptr<LearnStage> stage =
      std::make_shared<LearnStage>(model.get(), &learning);
  // Announced and neither queued nor withdrawn.
  std::uint64_t held() const { return stage->Unlearned(0); }
};

// A Learn call as the batcher sees it: its requests, ended (as
// LearnReactor keeps it) at its first failed answer or when cancelled.
struct FakeCall {
  bool ended = false;
  std::vector<absl::Status> answers;
  LearnBatcher::Request Request(Announcements& model, const Sample& sample) {
    return {.sample = *model.model->Validate({&sample, 1}),
            .ticket = WriteTicket(model.stage, AdmissionTicket(), 1),
            .abandoned = [this] { return ended; },
            .done =
                [this](LearnBatcher::Result result) {
                  ended |= !result.status.ok();
                  answers.push_back(result.status);
                }};
  }
};

// The writer's side of a group, as HostedModel writes it: the whole batch
// with the group's options; the outcome answers every request.
void WriteWhole(FakeLog& log, LearnBatcher::Group& group) {
  ASSERT_TRUE(group.batch().ok());
  group.Answer(log.Write(*group.batch(), group.options()), nullptr);
}

// A model's learn stage, the batcher, and a log writing to the stage.
class LearnBatcherTest : public ::testing::Test {
 protected:
  LearnBatcherTest() { log_.stage = model_.stage.get(); }

  Announcements model_;
  FakeLog log_;
  LearnBatcher batcher_;
};

// One call's samples through the batcher, with a log that has no room for
// its second sample but room for a single later one: the group is refused
// whole and written request by request, the call ends at that sample, and
// nothing after it is written, in this group or a later one (learned
// before the second sample's resend, it would teach the model another
// order than the stream's).
TEST_F(LearnBatcherTest, ACallEndsAtItsFirstSampleNotWritten) {
  Batch batch(6, 100);
  log_.no_room_for = 101;
  FakeCall call;
  EXPECT_TRUE(batcher_.Add(call.Request(model_, batch.samples[0])));
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_FALSE(batcher_.Add(call.Request(model_, batch.samples[i])));
  }
  EXPECT_EQ(model_.held(), 4u);
  bool more = true;
  LearnBatcher::Group group = batcher_.TakeGroup(&more);
  EXPECT_FALSE(more);
  ASSERT_EQ(group.size(), 4u);
  ASSERT_FALSE(log_.Write(*group.batch(), group.options()).ok());
  // Each alone: 100 is written, 101 refused, and the call, ended there,
  // has 102 and 103 answered CANCELLED without a write.
  std::size_t written_alone = 0;
  while (std::optional<LearnBatcher::Group> alone = group.TakeAlone()) {
    ASSERT_EQ(alone->size(), 1u);
    ++written_alone;
    alone->Answer(log_.Write(*alone->batch(), alone->options()), nullptr);
  }
  EXPECT_EQ(written_alone, 2u);
  for (std::size_t i = 4; i < 6; ++i) {
    batcher_.Add(call.Request(model_, batch.samples[i]));
  }
  EXPECT_TRUE(batcher_.TakeGroup(&more).empty());
  EXPECT_THAT(log_.written, ::testing::ElementsAre(100u));
  ASSERT_EQ(call.answers.size(), 6u);
  EXPECT_TRUE(call.answers[0].ok());
  EXPECT_EQ(call.answers[1].code(), absl::StatusCode::kResourceExhausted);
  for (std::size_t i = 2; i < 6; ++i) {
    EXPECT_EQ(call.answers[i].code(), absl::StatusCode::kCancelled) << i;
  }
  // The sample written was taken over by the log; the others, refused or
  // never written, were withdrawn: none is counted as on its way.
  EXPECT_EQ(log_.taken_over, 1u);
  EXPECT_EQ(model_.held(), 0u);
}

// A client that dropped its call resends on a new one while the old call's
// samples still wait: the resent ids wait for the next group, and so do the
// samples after them, so that the old call, found cancelled, leaves the
// new one's samples in their order.
TEST_F(LearnBatcherTest, ASampleAfterAResentOneWaitsWithIt) {
  Batch batch(3, 100);
  FakeCall dropped, resent;
  for (std::size_t i = 0; i < 2; ++i) {
    batcher_.Add(dropped.Request(model_, batch.samples[i]));
  }
  for (std::size_t i = 0; i < 3; ++i) {
    batcher_.Add(resent.Request(model_, batch.samples[i]));
  }
  dropped.ended = true;  // its client is gone
  bool more = false;
  LearnBatcher::Group first = batcher_.TakeGroup(&more);
  EXPECT_TRUE(first.empty());  // the dropped call's, answered CANCELLED
  EXPECT_TRUE(more);
  LearnBatcher::Group second = batcher_.TakeGroup(&more);
  EXPECT_FALSE(more);
  WriteWhole(log_, second);
  EXPECT_THAT(log_.written, ::testing::ElementsAre(100u, 101u, 102u));
  EXPECT_EQ(dropped.answers.size(), 2u);
  EXPECT_THAT(dropped.answers,
              ::testing::Each(::testing::Property(
                  &absl::Status::code, absl::StatusCode::kCancelled)));
  EXPECT_THAT(resent.answers, ::testing::Each(absl::OkStatus()));
  // The dropped call's two were withdrawn, the resent three taken over.
  EXPECT_EQ(log_.taken_over, 3u);
  EXPECT_EQ(model_.held(), 0u);
}

// A group is written as one batch — its samples in order, the latest
// deadline, its fsync deferred unless a request waits for predictions —
// and each request gets its own samples' places and predictions.
TEST_F(LearnBatcherTest, AGroupIsOneBatchAndEachRequestGetsItsOwnAnswer) {
  Batch batch(3, 100);
  FakeCall call;
  const absl::Time soon = absl::Now() + absl::Seconds(5);
  const absl::Time later = soon + absl::Seconds(5);
  LearnBatcher::Request early = call.Request(model_, batch.samples[0]);
  early.deadline = soon;
  LearnBatcher::Request waiting = call.Request(model_, batch.samples[1]);
  waiting.deadline = later;
  std::vector<Prediction> told;
  waiting.predict = true;
  waiting.done = [&](LearnBatcher::Result result) { told = result.before; };
  LearnBatcher::Request last = call.Request(model_, batch.samples[2]);
  last.deadline = soon;
  batcher_.Add(std::move(early));
  batcher_.Add(std::move(waiting));
  batcher_.Add(std::move(last));
  bool more = true;
  LearnBatcher::Group group = batcher_.TakeGroup(&more);
  ASSERT_EQ(group.size(), 3u);
  const WriteOptions options = group.options();
  EXPECT_EQ(options.deadline, later);
  EXPECT_TRUE(options.streamed);
  EXPECT_FALSE(options.sync_later);  // an answer waits for it
  EXPECT_EQ(options.ticket->announced(), 3u);
  std::vector<Prediction> before(3);
  for (std::size_t i = 0; i < 3; ++i) before[i].learned = 10 + i;
  absl::StatusOr<LearnOutcome> outcome =
      log_.Write(*group.batch(), group.options());
  outcome->learn_lag.assign(3, absl::Milliseconds(1));
  group.Answer(outcome, &before);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].learned, 11u);  // the second sample's
  EXPECT_THAT(log_.written, ::testing::ElementsAre(100u, 101u, 102u));
  EXPECT_EQ(call.answers.size(), 2u);  // the two that did not predict
  EXPECT_EQ(model_.held(), 0u);
}

}  // namespace
}  // namespace streamreg
