// A model as a server hosts it (run under ThreadSanitizer): its
// all-or-nothing batches and limits, the group commit of concurrent Learn
// messages, answers and reads against learning's lag, a cluster model's
// snapshot and its restore.
#include "server/hosting/hosted_model.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/background_priority.h"
#include "core/base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/learn_batcher.h"
#include "server/hosting/learn_stage.h"
#include "server/hosting/model_metrics.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/parked_read.h"
#include "server/hosting/serial_queue.h"
#include "server/hosting/snapshot_schedule.h"
#include "server/hosting/worker_pool.h"
#include "server/storage/snapshot_reader.h"
#include "tests/support/hosted_model_fixture.h"
#include "tests/support/hosting_test_support.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST_F(HostedModelTest, ALagIsNeverNegative) {
  // A batch acknowledged after the reader looked at the clock (queued
  // between its reading and the stage's lock) made nothing stale yet: a
  // lag of zero, not a negative one (which the wire's unsigned learn_lag_us
  // showed as 2^64).
  std::unique_ptr<Model> model = *Model::Create(SmallConfig());
  LearnStage stage(model.get(), &learning_);
  Batch batch(3, 1);
  const absl::Time now = absl::Now();
  stage.Enqueue(*model->Validate(batch.samples), now + absl::Seconds(1),
                nullptr, 0, HostedModel::kMaxUnlearned);
  EXPECT_EQ(stage.LagAfter(0, now), absl::ZeroDuration());
  EXPECT_EQ(stage.backlog(now).oldest, absl::ZeroDuration());
  EXPECT_EQ(stage.LagAfter(0, now + absl::Seconds(3)), absl::Seconds(2));
  stage.CatchUp();
}

TEST_F(HostedModelTest, ARetriedBatchIsNotLearnedTwice) {
  auto hosted = Host({.max_samples = 0, .dedup_window = 100});
  Batch batch(10, 1000);
  absl::StatusOr<LearnOutcome> first = hosted->Learn(batch.samples, nullptr);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->accepted, 10u);
  EXPECT_EQ(first->sequence[9], 10u);
  // The same batch again, plus 5 new samples after it.
  Batch more(15, 1000);
  std::vector<Prediction> before;
  absl::StatusOr<LearnOutcome> second = hosted->Learn(more.samples, &before);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->accepted, 5u);
  EXPECT_EQ(second->duplicates, 10u);
  EXPECT_EQ(second->num_samples, 15u);
  EXPECT_TRUE(second->duplicate[3]);
  EXPECT_EQ(second->sequence[3], 4u);  // where it was first learned
  EXPECT_FALSE(second->duplicate[12]);
  EXPECT_EQ(second->sequence[12], 13u);
  EXPECT_EQ(before.size(), 15u);
  hosted->CatchUp();
  EXPECT_EQ(hosted->model().samples_seen(), 15u);
  EXPECT_EQ(hosted->duplicate_samples(), 10u);
}

TEST_F(HostedModelTest, BadBatchesChangeNothingAndNameTheSample) {
  auto hosted = Host({.max_samples = 20, .dedup_window = 100});
  Batch batch(4, 1);
  batch.samples[2].sample_id = batch.samples[0].sample_id;
  absl::StatusOr<LearnOutcome> repeated = hosted->Learn(batch.samples, nullptr);
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repeated.status().message(),
              HasSubstr("samples[2].sample_id: 1 repeats samples[0]"));
  Batch nan(4, 100);
  nan.x[2 * 3 + 1] = std::nan("");
  EXPECT_THAT(hosted->Learn(nan.samples, nullptr).status().message(),
              HasSubstr("samples[3].x[1]: NaN"));
  EXPECT_EQ(hosted->model().samples_seen(), 0u);

  Batch fits(20, 1000);
  ASSERT_TRUE(hosted->Learn(fits.samples, nullptr).ok());
  Batch over(1, 5000);
  absl::StatusOr<LearnOutcome> full = hosted->Learn(over.samples, nullptr);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.status().message(), HasSubstr("--max-samples-per-model"));
  // Duplicates do not count against the limit.
  EXPECT_TRUE(hosted->Learn(fits.samples, nullptr).ok());

  ASSERT_TRUE(hosted->Delete().ok());
  EXPECT_EQ(hosted->Learn(over.samples, nullptr).status().code(),
            absl::StatusCode::kNotFound);
}

// Submits `samples` to the batcher while the model's write queue is held
// busy, so they all wait and are learned as one group; returns the answers
// in submission order.
std::vector<LearnBatcher::Result> SubmitMessagesWhileBusy(
    const std::shared_ptr<HostedModel>& hosted,
    const std::vector<Sample>& samples, const std::vector<std::size_t>& sizes,
    const std::vector<bool>& cancelled = {}) {
  // Running before the first Submit: the learn batcher's turns are urgent
  // and would run before a blocker still queued.
  std::latch running(1);
  std::latch release(1);
  hosted->writes().Post([&] {
    running.count_down();
    release.wait();
  });
  running.wait();
  std::vector<LearnBatcher::Result> results(sizes.size());
  std::latch answered(static_cast<std::ptrdiff_t>(sizes.size()));
  std::size_t first = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bool cancel = i < cancelled.size() && cancelled[i];
    // A bad sample is refused where it arrives, before the group.
    absl::StatusOr<ValidatedSamples> checked =
        hosted->model().Validate({samples.data() + first, sizes[i]});
    first += sizes[i];
    if (!checked.ok()) {
      results[i].status = checked.status();
      answered.count_down();
      continue;
    }
    const std::uint64_t count = checked->size();
    hosted->LearnInGroup({.sample = *std::move(checked),
                          .ticket = hosted->Announce(AdmissionTicket(), count),
                          .predict = true,
                          .abandoned = [cancel] { return cancel; },
                          .done =
                              [&, i](LearnBatcher::Result result) {
                                results[i] = std::move(result);
                                answered.count_down();
                              }});
  }
  release.count_down();
  answered.wait();
  return results;
}

// One message a sample.
std::vector<LearnBatcher::Result> SubmitWhileBusy(
    const std::shared_ptr<HostedModel>& hosted,
    const std::vector<Sample>& samples,
    const std::vector<bool>& cancelled = {}) {
  return SubmitMessagesWhileBusy(
      hosted, samples, std::vector<std::size_t>(samples.size(), 1), cancelled);
}

// Every prediction of `model` (learned up to now) for the samples' inputs.
std::vector<Prediction> PredictAll(const Model& model,
                                   const std::vector<Sample>& samples) {
  std::vector<Prediction> out;
  for (const Sample& sample : samples) out.push_back(*model.Predict(sample.x));
  return out;
}

TEST_F(HostedModelTest,
       GroupedMessagesAreAnsweredByTheModelBeforeThemAndLearnedInOrder) {
  Batch warmup(40, 1);
  Batch stream(30, 5000);
  auto [grouped, reference] = HostWarmedUp(warmup.samples);
  const std::vector<Prediction> expected =
      PredictAll(*reference, stream.samples);
  const std::vector<LearnBatcher::Result> results =
      SubmitWhileBusy(grouped, stream.samples);
  for (std::size_t i = 0; i < stream.samples.size(); ++i) {
    ASSERT_TRUE(results[i].status.ok()) << results[i].status;
    EXPECT_EQ(results[i].sequence, 41 + i) << i;
    EXPECT_FALSE(results[i].duplicate);
    // One log record for the group, then each answered from the model as
    // it was before the group: it had learned the 40 samples.
    ASSERT_EQ(results[i].before.size(), 1u) << i;
    EXPECT_EQ(results[i].before[0].learned, 40u) << i;
    EXPECT_EQ(results[i].before[0].value, expected[i].value) << i;
    EXPECT_EQ(results[i].before[0].neighbors, expected[i].neighbors) << i;
  }
  // Learned after the answers, in order: the model one-by-one learning
  // makes.
  ASSERT_TRUE(reference->Learn(stream.samples).ok());
  grouped->CatchUp();
  EXPECT_EQ(grouped->model().samples_seen(), 70u);
  const std::vector<Prediction> now = PredictAll(*reference, warmup.samples);
  const std::vector<Prediction> hosted_now =
      PredictAll(grouped->model(), warmup.samples);
  for (std::size_t i = 0; i < now.size(); ++i) {
    EXPECT_EQ(hosted_now[i].value, now[i].value) << i;
    EXPECT_EQ(hosted_now[i].learned, 70u);
  }
  EXPECT_EQ(grouped->model().stats().prequential_mse,
            reference->stats().prequential_mse);
}

// Messages of several ticks share a group as one-sample messages do: each
// answered with its own samples' predictions, in order, and the last one's
// place.
TEST_F(HostedModelTest, GroupedMessagesOfSeveralSamplesGetTheirOwnAnswers) {
  Batch warmup(40, 1);
  Batch stream(10, 5000);
  auto [grouped, reference] = HostWarmedUp(warmup.samples);
  const std::vector<Prediction> expected =
      PredictAll(*reference, stream.samples);
  const std::vector<std::size_t> sizes = {1, 3, 2, 4};
  const std::vector<LearnBatcher::Result> results =
      SubmitMessagesWhileBusy(grouped, stream.samples, sizes);
  std::size_t first = 0;
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    ASSERT_TRUE(results[m].status.ok()) << results[m].status;
    EXPECT_EQ(results[m].sequence, 40 + first + sizes[m]) << m;
    EXPECT_FALSE(results[m].duplicate);
    ASSERT_EQ(results[m].before.size(), sizes[m]) << m;
    for (std::size_t i = 0; i < sizes[m]; ++i) {
      EXPECT_EQ(results[m].before[i].learned, 40u) << m;
      EXPECT_EQ(results[m].before[i].value, expected[first + i].value) << m;
    }
    first += sizes[m];
  }
  ASSERT_TRUE(reference->Learn(stream.samples).ok());
  grouped->CatchUp();
  EXPECT_EQ(grouped->model().samples_seen(), 50u);
  EXPECT_EQ(grouped->model().stats().prequential_mse,
            reference->stats().prequential_mse);
  // Sent again, every sample of a message is found learned.
  const std::vector<LearnBatcher::Result> again =
      SubmitMessagesWhileBusy(grouped,
                              std::vector<Sample>(stream.samples.begin() + 1,
                                                  stream.samples.begin() + 4),
                              {3});
  ASSERT_TRUE(again[0].status.ok()) << again[0].status;
  EXPECT_TRUE(again[0].duplicate);
  EXPECT_EQ(again[0].sequence, 44u);
}

TEST_F(HostedModelTest, AnswersSayHowFarLearningLagsAndReadsWaitForIt) {
  Batch warmup(20, 1);
  Batch stream(5, 5000);
  auto [hosted, reference] = HostWarmedUp(warmup.samples);
  // The learning thread is held busy: the samples are acknowledged, and
  // wait to be learned.
  std::shared_ptr<std::latch> release = HoldLearning();
  std::vector<LearnOutcome> outcomes;
  std::vector<Prediction> answers;
  for (const Sample& sample : stream.samples) {
    std::vector<Prediction> before;
    absl::StatusOr<LearnOutcome> outcome = hosted->Learn({&sample, 1}, &before);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    outcomes.push_back(*outcome);
    answers.push_back(before[0]);
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_EQ(hosted->samples_learned(), 20u);
  const std::vector<Prediction> stale = PredictAll(*reference, stream.samples);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    EXPECT_EQ(outcomes[i].sequence[0], 21 + i);
    EXPECT_EQ(answers[i].learned, 20u) << i;  // i samples behind
    EXPECT_EQ(answers[i].value, stale[i].value) << i;
    if (i == 0) {
      EXPECT_EQ(outcomes[i].learn_lag[0], absl::ZeroDuration());
    } else {
      // Sample 21 was acknowledged (at least) 2 ms per message earlier.
      EXPECT_GE(outcomes[i].learn_lag[0], absl::Milliseconds(2 * i)) << i;
    }
  }
  release->count_down();
  // A read waits until what was acknowledged before it is learned.
  std::vector<Prediction> read;
  const double x[] = {0.25, -0.5};
  const std::span<const double> queries[] = {x};
  ASSERT_TRUE(hosted->Predict(queries, &read).ok());
  ASSERT_TRUE(reference->Learn(stream.samples).ok());
  EXPECT_EQ(read[0].learned, 25u);
  EXPECT_EQ(read[0].value, reference->Predict(x)->value);
}

// A read that names the samples it must have learned (min_learned: a
// write's sequence) waits for those alone: 0 answers at once as the model
// stands, a learned count at once, an acknowledged one once learned (or
// DEADLINE_EXCEEDED at the call's deadline), more than the model holds
// OUT_OF_RANGE at once.
TEST_F(HostedModelTest, AReadWaitsForTheSamplesItAsksForAlone) {
  auto [hosted, reference, release, unlearned] = HostHeldFiveBehind();
  const double x[] = {0.25, -0.5};
  const std::span<const double> queries[] = {x};
  const std::vector<double> stale = reference->Predict(x)->value;
  for (std::uint64_t min_learned : {0, 20}) {
    std::vector<Prediction> read;
    ASSERT_TRUE(hosted
                    ->Predict(queries, &read, {},
                              {.min_learned = min_learned,
                               .deadline = absl::InfiniteFuture()})
                    .ok());
    EXPECT_EQ(read[0].learned, 20u);
    EXPECT_EQ(read[0].value, stale);
  }
  std::vector<Prediction> read;
  const absl::Status not_yet = hosted->Predict(
      queries, &read, {},
      {.min_learned = 23, .deadline = absl::Now() + absl::Milliseconds(50)});
  EXPECT_EQ(not_yet.code(), absl::StatusCode::kDeadlineExceeded) << not_yet;
  EXPECT_THAT(not_yet.message(), HasSubstr("20 samples"));
  EXPECT_THAT(not_yet.message(), HasSubstr("23 asked for (min_learned)"));
  const absl::Status beyond =
      hosted->Predict(queries, &read, {},
                      {.min_learned = 26, .deadline = absl::InfiniteFuture()});
  EXPECT_EQ(beyond.code(), absl::StatusCode::kOutOfRange) << beyond;
  EXPECT_THAT(beyond.message(), HasSubstr("holds 25"));

  std::vector<Prediction> after_writes;
  absl::Status waited;
  // (A structured binding is not captured: clang 14.)
  std::thread reader([&, model = hosted] {
    waited =
        model->Predict(queries, &after_writes, {},
                       {.min_learned = 25, .deadline = absl::InfiniteFuture()});
  });
  release->count_down();
  reader.join();
  ASSERT_TRUE(waited.ok()) << waited;
  ASSERT_TRUE(reference->Learn(unlearned->samples).ok());
  EXPECT_EQ(after_writes[0].learned, 25u);
  EXPECT_EQ(after_writes[0].value, reference->Predict(x)->value);
}

// A read waits for what was acknowledged only until its deadline: a model
// whose learning is held (a take-over waiting for a rebuild) does not hold
// the reading thread past it. A read answers DEADLINE_EXCEEDED naming what
// was learned and acknowledged; the figures answer as of what is learned,
// with the backlog, and once learning goes on they are whole again.
TEST_F(HostedModelTest, AReadWaitsForLearningUntilItsDeadlineOnly) {
  auto [hosted, reference, release, unlearned] = HostHeldFiveBehind();
  const double x[] = {0.25, -0.5};
  const std::span<const double> queries[] = {x};
  std::vector<Prediction> read;
  const absl::Status late = hosted->Predict(
      queries, &read, {}, {.deadline = absl::Now() + absl::Milliseconds(50)});
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_THAT(late.message(), HasSubstr("has learned 20 samples"));
  EXPECT_THAT(late.message(), HasSubstr("fewer than the 25 it acknowledged"));

  const absl::Time now = absl::Now();
  EXPECT_EQ(
      hosted->stats({.deadline = now + absl::Milliseconds(50)}).samples_seen,
      20u);
  EXPECT_EQ(hosted->learn_backlog(absl::Now()).samples, 5u);
  EXPECT_EQ(hosted->metric({.deadline = now}).kind, reference->metric().kind);

  release->count_down();
  EXPECT_EQ(hosted->stats({}).samples_seen, 25u);
  EXPECT_EQ(hosted->learn_backlog(absl::Now()).samples, 0u);
  ASSERT_TRUE(hosted->Predict(queries, &read, {}, {}).ok());
  ASSERT_TRUE(reference->Learn(unlearned->samples).ok());
  EXPECT_EQ(read[0].learned, 25u);
  EXPECT_EQ(read[0].value, reference->Predict(x)->value);
}

TEST_F(HostedModelTest, AGroupAnswersDuplicatesBadSamplesAndCancelledCalls) {
  auto hosted = std::shared_ptr<HostedModel>(
      Host({.max_samples = 0, .dedup_window = 100}));
  Batch batch(5, 100);
  batch.samples[3].sample_id = batch.samples[1].sample_id;  // a resend
  batch.x[2 * 2] = std::nan("");  // a bad sample: never reaches the group
  const std::vector<LearnBatcher::Result> results = SubmitWhileBusy(
      hosted, batch.samples, {false, false, false, false, true});
  EXPECT_TRUE(results[0].status.ok());
  EXPECT_EQ(results[0].sequence, 1u);
  EXPECT_TRUE(results[1].status.ok());
  EXPECT_EQ(results[1].sequence, 2u);
  EXPECT_EQ(results[2].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(results[2].status.message(), HasSubstr("samples[0].x[0]: NaN"));
  // The resend of sample 1 is found learned, with sample 1's place.
  EXPECT_TRUE(results[3].status.ok()) << results[3].status;
  EXPECT_TRUE(results[3].duplicate);
  EXPECT_EQ(results[3].sequence, 2u);
  EXPECT_EQ(results[4].status.code(), absl::StatusCode::kCancelled);
  hosted->CatchUp();
  EXPECT_EQ(hosted->model().samples_seen(), 2u);
}

TEST_F(HostedModelTest, AGroupPastTheSampleLimitIsLearnedAsFarAsItFits) {
  auto hosted = std::shared_ptr<HostedModel>(
      Host({.max_samples = 3, .dedup_window = 100}));
  Batch batch(5, 100);
  const std::vector<LearnBatcher::Result> results =
      SubmitWhileBusy(hosted, batch.samples);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(results[i].status.ok()) << i << ": " << results[i].status;
  }
  for (std::size_t i = 3; i < 5; ++i) {
    EXPECT_EQ(results[i].status.code(), absl::StatusCode::kResourceExhausted);
  }
  hosted->CatchUp();
  EXPECT_EQ(hosted->model().samples_seen(), 3u);
}

TEST_F(HostedModelTest, PredictingWithoutSamplesIsAFailedPrecondition) {
  auto hosted = Host({});
  const double x[] = {1.0, 2.0};
  const std::span<const double> queries[] = {x};
  std::vector<Prediction> out;
  EXPECT_EQ(hosted->Predict(queries, &out).code(),
            absl::StatusCode::kFailedPrecondition);
  Batch batch(3, 0);
  ASSERT_TRUE(hosted->Learn(batch.samples, nullptr).ok());
  EXPECT_TRUE(hosted->Predict(queries, &out).ok());
}

// A write log that keeps a Learn stream's samples waiting `linger` for
// others (a cluster's), and records the size of each batch appended.
class LingeringLog final : public WriteLog {
 public:
  explicit LingeringLog(absl::Duration linger) : linger_(linger) {}
  absl::StatusOr<LearnOutcome> AppendSamples(const ValidatedSamples& batch,
                                             const WriteOptions&) override {
    MutexLock lock(&mutex_);
    appended_.push_back(batch.size());
    LearnOutcome outcome;
    for (std::size_t s = 0; s < batch.size(); ++s) {
      outcome.sequence.push_back(++written_);
      outcome.duplicate.push_back(false);
    }
    return outcome;
  }
  absl::Status AppendRefit(const std::function<void(std::size_t, std::size_t)>&,
                           absl::Time) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status AppendTakeOver(const TakeOverKey&) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Duration GroupLinger() const override { return linger_; }
  std::vector<std::size_t> appended() const {
    MutexLock lock(&mutex_);
    return appended_;
  }

 private:
  const absl::Duration linger_;
  mutable Mutex mutex_;
  std::vector<std::size_t> appended_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t written_ ABSL_GUARDED_BY(mutex_) = 0;
};

// Hands each sample of `samples` to the model's group commit as a Learn
// stream's message (answered when durable if `answer_when_durable`), `gap`
// apart; the results, once all are in or 10 s have passed (then empty).
std::vector<LearnBatcher::Result> LearnInGroups(
    HostedModel& hosted, const std::vector<Sample>& samples,
    bool answer_when_durable, absl::Duration gap = absl::ZeroDuration()) {
  auto results =
      std::make_shared<std::vector<LearnBatcher::Result>>(samples.size());
  auto answered =
      std::make_shared<std::latch>(static_cast<std::ptrdiff_t>(samples.size()));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i > 0) absl::SleepFor(gap);
    hosted.LearnInGroup({.sample = *hosted.model().Validate({&samples[i], 1}),
                         .ticket = hosted.Announce(AdmissionTicket(), 1),
                         .predict = answer_when_durable,
                         .abandoned = [] { return false; },
                         .done =
                             [results, answered, i](LearnBatcher::Result r) {
                               (*results)[i] = std::move(r);
                               answered->count_down();
                             }});
  }
  auto all_in =
      std::async(std::launch::async, [answered] { answered->wait(); });
  if (all_in.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    return {};
  }
  return *results;
}

// In cluster mode a Learn stream's samples that arrive within the log's
// linger go to the log as one append (a 1 kHz arm's, a few at a time
// rather than one by one: here 5, 20 ms apart, within a linger of 2 s),
// each told its place; a message answered only
// once durable is not kept waiting (its stream sends the next one only
// then, so none would join it).
TEST_F(HostedModelTest, StreamedSamplesWithinTheLogsLingerAreAppendedAsOne) {
  Batch stream(5, 100);
  auto lingering = Host({});
  auto log = std::make_shared<LingeringLog>(absl::Seconds(2));
  lingering->AttachWriteLog(log);
  const std::vector<LearnBatcher::Result> results =
      LearnInGroups(*lingering, stream.samples, false, absl::Milliseconds(20));
  ASSERT_EQ(results.size(), 5u);
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].status.ok()) << results[i].status;
    EXPECT_EQ(results[i].sequence, i + 1);
  }
  EXPECT_THAT(log->appended(), ::testing::ElementsAre(5u));

  // A linger longer than LearnInGroups waits: the message asking for a
  // durable answer is written at once, alone.
  // (Warmed up first, to predict.)
  auto [durable, reference] = HostWarmedUp(Batch(10, 1).samples);
  auto long_log = std::make_shared<LingeringLog>(absl::Seconds(20));
  durable->AttachWriteLog(long_log);
  Batch one(1, 200);
  const std::vector<LearnBatcher::Result> answer =
      LearnInGroups(*durable, one.samples, true);
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_TRUE(answer[0].status.ok()) << answer[0].status;
  ASSERT_EQ(answer[0].before.size(), 1u);
  EXPECT_EQ(answer[0].before[0].learned, 10u);
  EXPECT_THAT(long_log->appended(), ::testing::ElementsAre(1u));
}

// A log that sends reads elsewhere (a cluster replica catching up) and
// takes no writes.
class ReplayingLog final : public WriteLog {
 public:
  absl::StatusOr<LearnOutcome> AppendSamples(const ValidatedSamples&,
                                             const WriteOptions&) override {
    return absl::UnavailableError("not in this test");
  }
  absl::Status AppendRefit(const std::function<void(std::size_t, std::size_t)>&,
                           absl::Time) override {
    return absl::UnavailableError("not in this test");
  }
  absl::Status AppendTakeOver(const TakeOverKey&) override {
    return absl::UnavailableError("not in this test");
  }
  absl::Status ReadableHere() const override {
    return absl::UnavailableError("catching up; read from b:1");
  }
  absl::Duration UnappliedReadWait() const override {
    return absl::Milliseconds(20);
  }
  absl::Status ReadElsewhere(absl::string_view reason) const override {
    return absl::UnavailableError(absl::StrCat(reason, "; read from b:1"));
  }
};

// A model with no samples whose log sends reads elsewhere answers with the
// log's status (the client then asks the servers it names), not
// FAILED_PRECONDITION, which no client retries.
TEST_F(HostedModelTest, AnEmptyReplicaCatchingUpSendsReadsElsewhere) {
  auto hosted = Host({});
  hosted->AttachWriteLog(std::make_shared<ReplayingLog>());
  const double x[] = {1.0, 2.0};
  const std::span<const double> queries[] = {x};
  std::vector<Prediction> out;
  const absl::Status status = hosted->Predict(queries, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("read from b:1"));
}

// A replica asked for samples it has not applied waits a while for them
// (UnappliedReadWait), then sends the read to the model's other servers —
// however long the call's deadline.
TEST_F(HostedModelTest, AReplicaBehindAReadSendsItElsewhere) {
  auto hosted = Host({});
  Batch batch(3, 0);
  ASSERT_TRUE(hosted->Learn(batch.samples, nullptr).ok());
  hosted->AttachWriteLog(std::make_shared<ReplayingLog>());
  const double x[] = {1.0, 2.0};
  const std::span<const double> queries[] = {x};
  std::vector<Prediction> out;
  const absl::Status status =
      hosted->Predict(queries, &out, {},
                      {.min_learned = 10, .deadline = absl::InfiniteFuture()});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("10 asked for (min_learned)"));
  EXPECT_THAT(status.message(), HasSubstr("read from b:1"));
  EXPECT_TRUE(
      hosted
          ->Predict(queries, &out, {},
                    {.min_learned = 3, .deadline = absl::InfiniteFuture()})
          .ok());
}

// `next` (30 samples, 10 of them seen before: their ids remembered)
// applied as log entry `sequence` by a model and its restored copy alike,
// which then predict alike.
void ExpectToGoOnAlike(HostedModel& original, HostedModel& copy,
                       const Batch& next, std::uint64_t sequence) {
  for (HostedModel* model : {&original, &copy}) {
    absl::StatusOr<LearnOutcome> outcome =
        ApplyAsLogEntry(*model, next.samples, sequence);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_EQ(outcome->accepted, 20u);
    EXPECT_EQ(outcome->duplicates, 10u);
    model->CatchUp();
  }
  Batch queries(25, 2000);
  for (const Sample& query : queries.samples) {
    const std::vector<std::span<const double>> one = {query.x};
    std::vector<Prediction> a, b;
    ASSERT_TRUE(original.Predict(one, &a).ok());
    ASSERT_TRUE(copy.Predict(one, &b).ok());
    EXPECT_EQ(a[0].value, b[0].value);
  }
}

// Cluster mode's snapshots: the state captured with the last log entry
// applied, read back into a model that goes on exactly as the original.
TEST_F(HostedModelTest, ALogSnapshotHoldsTheLogUpToItsSequenceExactly) {
  ModelRegistry registry({.max_models = 4}, {&pool_, &learning_});
  std::shared_ptr<HostedModel> original =
      *registry.Make("m", SmallConfig(), {}, absl::FromUnixSeconds(7));
  original->log_writer()->NoteApplied(1);  // the create entry
  Batch first(40, 1000);
  ASSERT_TRUE(ApplyAsLogEntry(*original, first.samples, 2).ok());
  Batch bad(3, 5000);
  bad.x[1] = std::nan("");
  EXPECT_FALSE(ApplyAsLogEntry(*original, bad.samples, 3).ok());
  EXPECT_EQ(original->log_applied(), 3u);  // refused, and applied alike

  absl::StatusOr<HostedModel::LogSnapshot> snapshot = original->CaptureForLog();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->log_sequence, 3u);
  EXPECT_EQ(snapshot->num_samples, 40u);
  SnapshotRecords records;
  EXPECT_EQ(ReadSnapshotRecords(snapshot->bytes, "s", 4, {}, &records).code(),
            absl::StatusCode::kDataLoss);  // its end names sequence 3
  ASSERT_TRUE(ReadSnapshotRecords(snapshot->bytes, "s", 3, {}, &records).ok());
  absl::StatusOr<RestoredSnapshot> restored = RestoreSnapshot(records, 3, "s");
  ASSERT_TRUE(restored.ok()) << restored.status();
  absl::StatusOr<std::shared_ptr<HostedModel>> copy =
      registry.MakeRestored(*std::move(restored));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->name(), "m");
  EXPECT_EQ((*copy)->create_time(), absl::FromUnixSeconds(7));
  EXPECT_EQ((*copy)->log_applied(), 3u);

  // The next entry: 10 samples seen before (the ids the snapshot
  // remembers) and 20 new ones, applied alike by both.
  ExpectToGoOnAlike(*original, **copy, Batch(30, 1030), 4);
  EXPECT_EQ((*copy)->model().samples_seen(), 60u);
}

// An increment (a log snapshot built on the one before) restored with that
// whole snapshot, as one: the model and the bookkeeping as of the
// increment's log sequence, going on exactly as the original.
TEST_F(HostedModelTest, ALogIncrementRestoresWithItsSnapshotAsOne) {
  ModelRegistry registry({.max_models = 4}, {&pool_, &learning_});
  std::shared_ptr<HostedModel> original =
      *registry.Make("m", SmallConfig(), {}, absl::FromUnixSeconds(7));
  original->log_writer()->NoteApplied(1);
  Batch first(400, 1000);
  ASSERT_TRUE(ApplyAsLogEntry(*original, first.samples, 2).ok());
  absl::StatusOr<HostedModel::LogSnapshot> whole = original->CaptureForLog();
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_FALSE(whole->increment);
  Batch second(30, 1400);
  ASSERT_TRUE(ApplyAsLogEntry(*original, second.samples, 3).ok());
  absl::StatusOr<HostedModel::LogSnapshot> increment =
      original->CaptureForLog(&whole->base);
  ASSERT_TRUE(increment.ok()) << increment.status();
  EXPECT_TRUE(increment->increment);
  EXPECT_EQ(increment->log_sequence, 3u);
  EXPECT_EQ(increment->num_samples, 430u);
  EXPECT_LT(increment->bytes.size(), whole->bytes.size());

  // Neither part alone in the wrong place.
  EXPECT_EQ(RestoreSnapshotChain({{increment->bytes, 3}}, "s").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(RestoreSnapshotChain({{whole->bytes, 2}, {whole->bytes, 2}}, "s")
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
  absl::StatusOr<RestoredSnapshot> restored =
      RestoreSnapshotChain({{whole->bytes, 2}, {increment->bytes, 3}}, "s");
  ASSERT_TRUE(restored.ok()) << restored.status();
  absl::StatusOr<std::shared_ptr<HostedModel>> copy =
      registry.MakeRestored(*std::move(restored));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->log_applied(), 3u);

  // The next entry: 10 samples of the increment's (ids it remembers) and
  // 20 new ones, applied alike by both.
  ExpectToGoOnAlike(*original, **copy, Batch(30, 1420), 4);
  EXPECT_EQ((*copy)->model().samples_seen(), 450u);
  EXPECT_EQ((*copy)->model().restore_insertions(), 0u);
}

}  // namespace
}  // namespace streamreg
