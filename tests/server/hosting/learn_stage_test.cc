// The second half of a hosted model's write path (run under
// ThreadSanitizer): samples queued in batches are learned in order exactly
// as if learned at once; announced samples count as unlearned until queued
// or withdrawn; a wait for learning ends at its deadline; work run in order
// sees everything queued before it; reads wait for what was acknowledged;
// a stage is destroyed only once its queued work is done with it.
#include "server/hosting/learn_stage.h"

#include <atomic>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/hosting_test_support.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

class LearnStageTest : public ::testing::Test {
 protected:
  LearnStageTest()
      : model_(MakeModel(BaseConfig())), stage_(model_.get(), &learning_) {}
  ~LearnStageTest() override { stage_.CatchUp(); }

  // Samples [begin, end) of the stream, checked by the model.
  ValidatedSamples Batch(std::size_t begin, std::size_t end) {
    samples_.push_back(Slice(stream_, begin, end));
    absl::StatusOr<ValidatedSamples> batch = model_->Validate(samples_.back());
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.ok() ? *std::move(batch) : ValidatedSamples();
  }
  void Enqueue(std::size_t begin, std::size_t end,
               std::uint64_t announced = 0) {
    stage_.Enqueue(Batch(begin, end), absl::Now(), nullptr, announced,
                   /*max_unlearned=*/1000);
  }
  std::shared_ptr<std::latch> HoldLearning() { return HoldThread(learning_); }

  const Stream stream_ = MakeStream(300, 3);
  std::vector<std::vector<Sample>> samples_;
  WorkerPool learning_{1};
  std::unique_ptr<Model> model_;
  LearnStage stage_;
};

TEST_F(LearnStageTest, QueuedBatchesAreLearnedAsIfLearnedAtOnce) {
  Enqueue(0, 100);
  Enqueue(100, 110);
  Enqueue(110, 300);
  stage_.CatchUp();
  EXPECT_EQ(stage_.learned(), 300u);
  EXPECT_EQ(stage_.queued(), 300u);
  std::unique_ptr<Model> at_once = MakeModel(BaseConfig());
  ASSERT_TRUE(at_once->Learn(Slice(stream_, 0, 300)).ok());
  ExpectSameModel(*model_, *at_once, MakeStream(30, 4));
}

TEST_F(LearnStageTest, AnnouncedSamplesAreUnlearnedUntilQueuedOrWithdrawn) {
  stage_.Announce(5);
  EXPECT_EQ(stage_.Unlearned(0), 5u);
  stage_.Withdraw(2);  // refused or duplicates
  EXPECT_EQ(stage_.Unlearned(0), 3u);
  std::shared_ptr<std::latch> release = HoldLearning();
  Enqueue(0, 3, /*announced=*/3);  // taken over: queued, not learned
  EXPECT_EQ(stage_.Unlearned(0), 3u);
  EXPECT_EQ(stage_.learned(), 0u);
  release->count_down();
  stage_.CatchUp();
  EXPECT_EQ(stage_.Unlearned(stage_.learned()), 0u);
}

TEST_F(LearnStageTest, AWaitForLearningEndsAtItsDeadline) {
  std::shared_ptr<std::latch> release = HoldLearning();
  Enqueue(0, 5);
  EXPECT_FALSE(stage_.WaitLearned(5, absl::Now() + absl::Milliseconds(50)));
  EXPECT_TRUE(stage_.WaitLearned(0, absl::Now()));  // nothing to wait for
  release->count_down();
  EXPECT_TRUE(stage_.WaitLearned(5, absl::Now() + absl::Seconds(30)));
  EXPECT_EQ(model_->samples_seen(), 5u);
}

TEST_F(LearnStageTest, WorkRunInOrderSeesEverythingQueuedBeforeIt) {
  Enqueue(0, 40);
  std::uint64_t seen = 0;
  ASSERT_TRUE(stage_
                  .RunInOrder(
                      [&] {
                        seen = model_->samples_seen();
                        return absl::OkStatus();
                      },
                      nullptr)
                  .ok());
  EXPECT_EQ(seen, 40u);
  const absl::Status failed = stage_.RunInOrder(
      [] { return absl::InternalError("refit failed"); }, nullptr);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
}

TEST_F(LearnStageTest, ReadsWaitForWhatWasAcknowledgedOnly) {
  Enqueue(0, 10);
  EXPECT_EQ(stage_.acknowledged(), 0u);  // a replica's entries from others
  stage_.MarkAcknowledged();
  EXPECT_EQ(stage_.acknowledged(), 10u);
  Enqueue(10, 15);
  EXPECT_EQ(stage_.acknowledged(), 10u);
}

TEST_F(LearnStageTest, IsDestroyedOnlyOnceItsQueuedWorkIsDoneWithIt) {
  // A batch's learning goes on using the stage after its samples count as
  // learned (it tells the parked reads' pools): an owner that destroys a
  // stage once CatchUp returns must not free it under that work.
  auto stage = std::make_unique<LearnStage>(model_.get(), &learning_);
  std::shared_ptr<std::latch> release = HoldLearning();
  stage->Enqueue(Batch(0, 5), absl::Now(), nullptr, 0,
                 /*max_unlearned=*/1000);
  std::atomic<bool> destroyed = false;
  std::thread destroyer([&] {
    stage.reset();
    destroyed.store(true);
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(destroyed.load());
  release->count_down();
  destroyer.join();
  EXPECT_EQ(model_->samples_seen(), 5u);
}

}  // namespace
}  // namespace streamreg
