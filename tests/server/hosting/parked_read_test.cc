// Reads parked while they wait for learning (server/hosting/
// parked_read.h): they hold no thread of the reads pool, are answered once
// what was acknowledged before them is learned (as a blocking read would
// be; as that batch is learned, not at the pool's next poll), end at their
// deadline or when their call is abandoned, and raise the background fit
// the learner waits for.
#include "server/hosting/parked_read.h"

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "core/base/background_priority.h"
#include "core/metric/mlkr_fit_exchange.h"
#include "gtest/gtest.h"
#include "server/hosting/model_metrics.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/hosted_model_fixture.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

// A read that waits for learning is parked (PostRead): it holds no thread of
// the reads pool, whose one thread meanwhile answers another model's read,
// and it is answered once the samples acknowledged before it arrived are
// learned — as a blocking read would have been. A parked read also ends at
// its deadline, or when its call is abandoned.
TEST_F(HostedModelTest, AReadWaitingForLearningHoldsNoThread) {
  const Batch warmup(20, 7);
  auto [other, other_reference] = HostWarmedUp(warmup.samples);
  auto [hosted, reference, release, unlearned] = HostHeldFiveBehind();
  const double x[] = {0.25, -0.5};
  const std::span<const double> queries[] = {x};
  WorkerPool reads(1);

  const ReadAfter after = hosted->PinAcknowledged({});
  EXPECT_EQ(after.acknowledged, std::optional<std::uint64_t>(25));
  EXPECT_TRUE(hosted->ReadWaitsForLearning(after));
  // Pinned when 20 were acknowledged, a read waits for nothing now; one
  // past its deadline, or asking for none, neither.
  EXPECT_FALSE(hosted->ReadWaitsForLearning({.acknowledged = 20}));
  EXPECT_FALSE(hosted->ReadWaitsForLearning(
      {.acknowledged = 25, .deadline = absl::Now()}));
  EXPECT_FALSE(hosted->ReadWaitsForLearning({.min_learned = 0}));
  bool parked = false;
  Signal answered;
  absl::Status waited;
  std::vector<Prediction> read;
  PostRead(reads, {.reads = {{hosted, after}},
                   .parked = [&] { parked = true; },
                   .answer =
                       [&, model = hosted] {
                         waited = model->Predict(queries, &read, {}, after);
                         answered.Notify();
                       }});
  EXPECT_TRUE(parked);

  const ReadAfter other_after = other->PinAcknowledged({});
  EXPECT_FALSE(other->ReadWaitsForLearning(other_after));
  Signal other_answered;
  std::vector<Prediction> other_read;
  PostRead(
      reads,
      {.reads = {{other, other_after}},
       .parked = [] { ADD_FAILURE() << "parked"; },
       .answer =
           [&, model = other] {
             EXPECT_TRUE(
                 model->Predict(queries, &other_read, {}, other_after).ok());
             other_answered.Notify();
           }});
  EXPECT_TRUE(other_answered.WaitFor(absl::Seconds(30)))
      << "the reads pool's thread was held by the waiting read";
  EXPECT_FALSE(answered.Notified());

  // Parked reads that end without the samples: past the deadline, and
  // abandoned.
  Signal late;
  PostRead(reads,
           {.reads = {{hosted, hosted->PinAcknowledged(
                                   {.deadline = absl::Now() +
                                                absl::Milliseconds(50)})}},
            .answer = [&] { late.Notify(); }});
  Signal gone;
  PostRead(reads, {.reads = {{hosted, after}},
                   .abandoned = [] { return true; },
                   .answer = [&] { gone.Notify(); }});
  EXPECT_TRUE(late.WaitFor(absl::Seconds(30)));
  EXPECT_TRUE(gone.WaitFor(absl::Seconds(30)));
  EXPECT_FALSE(answered.Notified());

  // A read of several models (a page of ListModels) is parked while any of
  // them would wait, and answered once none would.
  bool page_parked = false;
  Signal page_answered;
  PostRead(reads, {.reads = {{other, other_after}, {hosted, after}},
                   .parked = [&] { page_parked = true; },
                   .answer = [&] { page_answered.Notify(); }});
  EXPECT_TRUE(page_parked);
  EXPECT_FALSE(page_answered.WaitFor(absl::Milliseconds(50)));

  release->count_down();
  ASSERT_TRUE(page_answered.WaitFor(absl::Seconds(30)));
  ASSERT_TRUE(answered.WaitFor(absl::Seconds(30)));
  ASSERT_TRUE(waited.ok()) << waited;
  ASSERT_TRUE(reference->Learn(unlearned->samples).ok());
  EXPECT_EQ(read[0].learned, 25u);
  EXPECT_EQ(read[0].value, reference->Predict(x)->value);
  EXPECT_EQ(other_read[0].value, other_reference->Predict(x)->value);
}

// A parked read is answered as the batch it waits for is learned (the
// learn stage tells the reads pool), not at the pool's next poll: with a
// poll of an hour it is answered all the same.
TEST_F(HostedModelTest, AParkedReadIsAnsweredAsWhatItWaitsForIsLearned) {
  auto [hosted, reference, release, unlearned] = HostHeldFiveBehind();
  WorkerPool reads(1, "reads", std::chrono::hours(1));
  const ReadAfter after = hosted->PinAcknowledged({});
  bool parked = false;
  Signal answered;
  PostRead(reads, {.reads = {{hosted, after}},
                   .parked = [&] { parked = true; },
                   .answer = [&] { answered.Notify(); }});
  EXPECT_TRUE(parked);
  EXPECT_FALSE(answered.WaitFor(absl::Milliseconds(50)));
  release->count_down();
  EXPECT_TRUE(answered.WaitFor(absl::Seconds(30)))
      << "the parked read waited for the poll";
}

// A replica's side of a fit exchange whose fits never come from another
// replica: each fit is held back until the learner reaches its take-over
// point and then computed there, so the learner waits for every fit
// whatever the speed of either (MlkrFitExchange).
class NoOtherReplica : public MlkrFitExchange {
 public:
  bool ComputesFirst() const override { return false; }
  void Share(std::uint64_t, const std::vector<MlkrMap>&) override {}
};

// An MLKR fit runs lowered, and the learner stops at its take-over point
// until it is done. A read parked behind that learner depends on the fit:
// the fit is raised to the process's priority (priority inheritance). A
// model with no read waiting leaves its fits lowered — the robot loop's
// answers (as the model stands) wait for no fit. The fits are held back
// (NoOtherReplica) so that the learner meets each unfinished: left to
// race it, a fit may be done before the learner arrives.
TEST_F(HostedModelTest, AReadParkedBehindLearningRaisesTheFitItWaitsFor) {
  ModelConfig config = BusyConfig(SmallConfig());
  config.metric = MetricKind::kMlkr;
  const Batch stream(2500, 1);
  const auto learned_held = [&] {
    std::shared_ptr<HostedModel> hosted =
        Host({.max_samples = 0, .dedup_window = 100}, config);
    hosted->ShareMlkrFits(std::make_shared<NoOtherReplica>());
    std::shared_ptr<std::latch> release = HoldLearning();
    EXPECT_TRUE(hosted->Learn(stream.samples, nullptr).ok());
    return std::make_pair(hosted, release);
  };
  auto [read, release_read] = learned_held();
  WorkerPool reads(1);
  Signal answered;
  const ReadAfter after = read->PinAcknowledged({});
  bool parked = false;
  PostRead(reads, {.reads = {{read, after}},
                   .parked = [&] { parked = true; },
                   .answer = [&] { answered.Notify(); }});
  EXPECT_TRUE(parked);
  release_read->count_down();
  ASSERT_TRUE(answered.WaitFor(absl::Seconds(60)));
  const ModelStats raised = read->model().stats();
  EXPECT_EQ(raised.samples_seen, 2500u);
  // Its stops waited for the fits (how many were raised is recorded, not
  // asserted: a fit that ends between the learner's stop and the raise is
  // not counted).
  EXPECT_GE(raised.fits_prioritized + raised.fit_priority_refused, 1u);
  EXPECT_EQ(raised.fit_priority_refused > 0, !LoweredThreadsCanBeRaised());
  // Those stops, as the status page and /metrics read them: over now.
  const ModelReading::LearningWaits waits =
      ReadModel(*read, absl::Now()).learning_waits;
  EXPECT_GE(waits.count, 1u);
  EXPECT_GT(waits.longest_seconds, 0.0);
  EXPECT_LE(waits.longest_seconds, waits.seconds);
  EXPECT_EQ(waits.current, absl::ZeroDuration());
  ::testing::Test::RecordProperty("fits_prioritized",
                                  static_cast<int>(raised.fits_prioritized));

  auto [unread, release_unread] = learned_held();
  release_unread->count_down();
  unread->CatchUp();
  const ModelStats lowered = unread->model().stats();
  EXPECT_EQ(lowered.samples_seen, 2500u);
  EXPECT_EQ(lowered.fits_prioritized + lowered.fit_priority_refused, 0u);
}

}  // namespace
}  // namespace streamreg
