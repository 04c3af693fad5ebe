// Learn streams in process (server/rpc/learn_reactor.h): each answer the
// engine's prediction as the model stood, to the bit, first and without
// waiting for the fsync; several ticks a message with points ahead; answers
// skipped; the cautious mode answered once durable; streams sharing a group
// counted once; a sample that cannot be made durable or a bad message
// ending the call, naming it, with the samples before it kept.
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/ahead_errors.h"
#include "server/hosting/answer_errors.h"
#include "tests/support/service_fixture.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// The engine's model learning what the server's had learned when it
// answered a Learn message: the answer must be its prediction, to the bit.
class LearnedAsAnswered {
 public:
  explicit LearnedAsAnswered(const v1::ModelSpec& spec)
      : model_(*Model::Create(*ConfigFromSpec(spec))),
        answers_(model_->config()),
        ahead_(model_->config()),
        received_(Rows::kTargets),
        received_ahead_(Rows::kTargets) {}
  std::size_t learned() const { return learned_; }
  // The answer to row `i` of `rows`, streamed in order: the engine's
  // prediction as of `learned`, its interval calibrated on the answers
  // sent before it.
  void Check(const v1::LearnResponse& response, const Rows& rows,
             std::size_t i) {
    for (; learned_ < response.learned(); ++learned_) {
      const Sample sample{rows.input(learned_), rows.target(learned_), 0};
      ASSERT_TRUE(model_->Learn({&sample, 1}).ok());
    }
    Prediction expected =
        *model_->Predict(rows.input(i), PredictOptions::ForNextSample());
    answers_.Answer(&expected, rows.target(i));
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      ASSERT_EQ(response.prediction().y(t), expected.value[t]) << i;
      ASSERT_EQ(response.prediction().lower(t), expected.lower[t]) << i;
      ASSERT_EQ(response.prediction().upper(t), expected.upper[t]) << i;
    }
    received_.Add(PredictedValues(response.prediction()), rows.target(i));
  }
  // The answers to one message of rows [first, first + count) (sample ids
  // kFirstId + row) with queries ahead at the rows `ahead` (naming the
  // ids their rows' samples carry), answered from one state of the model
  // (nothing learned while it was answered): the predictions ahead first,
  // calibrated on the predictions ahead scored before, then the samples
  // scoring the predictions sent ahead for them, then each sample's
  // answer, as Check.
  static constexpr std::uint64_t kFirstId = 7000;
  void CheckMessage(const v1::LearnResponse& response, const Rows& rows,
                    std::size_t first, std::size_t count,
                    std::span<const std::size_t> ahead) {
    for (; learned_ < response.learned(); ++learned_) {
      const Sample sample{rows.input(learned_), rows.target(learned_), 0};
      ASSERT_TRUE(model_->Learn({&sample, 1}).ok());
    }
    ASSERT_EQ(response.ahead_size(), static_cast<int>(ahead.size()));
    for (std::size_t q = 0; q < ahead.size(); ++q) {
      Prediction expected = *model_->Predict(rows.input(ahead[q]),
                                             PredictOptions::ForNextSample());
      answers_.Calibrate(&expected);
      ahead_.Sent(kFirstId + ahead[q], &expected);
      const v1::Prediction& got = response.ahead(static_cast<int>(q));
      ExpectBitEqual(got, expected, first);
      sent_ahead_[ahead[q]] = got;
    }
    ASSERT_EQ(response.predictions_size(), static_cast<int>(count));
    ASSERT_FALSE(response.has_prediction());
    for (std::size_t i = first; i < first + count; ++i) {
      ahead_.Arrived({rows.input(i), rows.target(i), kFirstId + i});
      if (auto it = sent_ahead_.find(i); it != sent_ahead_.end()) {
        received_ahead_.Add(PredictedValues(it->second), rows.target(i));
        sent_ahead_.erase(it);
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      Prediction expected = *model_->Predict(rows.input(first + i),
                                             PredictOptions::ForNextSample());
      answers_.Answer(&expected, rows.target(first + i));
      const v1::Prediction& got = response.predictions(static_cast<int>(i));
      ExpectBitEqual(got, expected, first + i);
      received_.Add(PredictedValues(got), rows.target(first + i));
    }
  }
  // What the model reports of the answers it sent is what this client
  // counted on the answers it received.
  void CheckReported(const v1::ModelStats& stats) const {
    const AnswerErrors::Figures figures = answers_.figures();
    EXPECT_EQ(stats.answers_sent(), received_.count());
    ASSERT_EQ(stats.answer_nmse_size(), Rows::kTargets);
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      EXPECT_DOUBLE_EQ(stats.answer_nmse(t), received_.Nmse(t));
      EXPECT_DOUBLE_EQ(stats.answer_mse(t), received_.MeanSquaredError(t));
      EXPECT_EQ(stats.answer_recent_nmse(t), figures.recent_nmse[t]);
      EXPECT_EQ(stats.answer_interval_coverage(t),
                figures.interval_coverage[t]);
      EXPECT_EQ(stats.answer_interval_half_width(t),
                figures.interval_half_width[t]);
    }
    // And of the predictions ahead it sent and scored.
    const AnswerErrors::Figures ahead = ahead_.figures();
    EXPECT_EQ(stats.ahead_scored(), received_ahead_.count());
    if (received_ahead_.count() == 0) return;
    ASSERT_EQ(stats.ahead_nmse_size(), Rows::kTargets);
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      EXPECT_DOUBLE_EQ(stats.ahead_nmse(t), received_ahead_.Nmse(t));
      EXPECT_EQ(stats.ahead_interval_coverage(t), ahead.interval_coverage[t]);
      EXPECT_EQ(stats.ahead_interval_half_width(t),
                ahead.interval_half_width[t]);
    }
  }

 private:
  static void ExpectBitEqual(const v1::Prediction& got,
                             const Prediction& expected, std::size_t row) {
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      const int w = static_cast<int>(t);
      EXPECT_EQ(got.y(w), expected.value[t]) << row;
      EXPECT_EQ(got.lower(w), expected.lower[t]) << row;
      EXPECT_EQ(got.upper(w), expected.upper[t]) << row;
    }
  }

  std::unique_ptr<Model> model_;
  AnswerErrors answers_;
  AheadErrors ahead_;
  // The predictions ahead received, by row, until its sample is sent.
  std::map<std::size_t, v1::Prediction> sent_ahead_;
  NormalizedError received_;
  NormalizedError received_ahead_;
  std::size_t learned_ = 0;
};

TEST_F(ServiceTest, LearnAnswersFirstWithTheModelAsItStands) {
  const Rows rows(300, 3);
  const v1::ModelSpec spec = RowsSpec();
  ASSERT_TRUE(client_->CreateModel("robot", spec).ok());
  LearnedAsAnswered reference(spec);
  std::vector<std::uint64_t> durable_numbers;
  LearnSessionOptions options;
  options.on_durable = [&](std::uint64_t sample, absl::Duration lag) {
    durable_numbers.push_back(sample);
    EXPECT_GE(lag, absl::ZeroDuration());
  };
  std::unique_ptr<LearnSession> session = client_->StartLearn("robot", options);
  std::uint64_t watermark = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    absl::StatusOr<v1::LearnResponse> response =
        session->Learn(rows.input(i), rows.target(i), 7000 + i);
    ASSERT_TRUE(response.ok()) << response.status();
    // Answered before it is durable: no sequence yet.
    ASSERT_EQ(response->sequence(), 0u);
    // The watermark never goes back, and never covers a message not sent
    // (it may cover its own, made durable before the answer was written).
    ASSERT_GE(response->durable_messages(), watermark);
    ASSERT_LE(response->durable_messages(), i + 1);
    watermark = response->durable_messages();
    // Never its own sample; samples are learned in order.
    ASSERT_LE(response->learned(), i);
    ASSERT_GE(response->learned(), reference.learned());
    ASSERT_LE(response->learned() + response->unlearned(), i + 1);
    ASSERT_NO_FATAL_FAILURE(reference.Check(*response, rows, i));
  }
  // Close waits for the closing watermark: every sample durable, each
  // reported once, in order.
  EXPECT_TRUE(session->Close().ok());
  reference.CheckReported(client_->GetModel("robot")->stats());
  EXPECT_EQ(session->durable_samples(), rows.size());
  EXPECT_EQ(session->unconfirmed_samples(), 0u);
  ASSERT_EQ(durable_numbers.size(), rows.size());
  for (std::size_t i = 0; i < durable_numbers.size(); ++i) {
    EXPECT_EQ(durable_numbers[i], i + 1);
  }
  EXPECT_EQ(NumSamples("robot"), rows.size());
}

// A loop that predicts ahead: each message carries a few ticks' samples
// and the points of the ticks to come; every sample is answered from the
// model as it stood (before any of them was learned), every point ahead
// too, with the answers' intervals; the samples are learned in order and
// only the samples' answers are scored.
TEST_F(ServiceTest, ALearnMessageOfSeveralTicksAnswersEachAndThePointsAhead) {
  const Rows rows(200, 3);
  const v1::ModelSpec spec = RowsSpec();
  ASSERT_TRUE(client_->CreateModel("robot", spec).ok());
  LearnedAsAnswered reference(spec);
  std::unique_ptr<LearnSession> session = client_->StartLearn("robot");
  constexpr std::size_t kTicks = 5;
  constexpr std::size_t kAhead = 3;
  for (std::size_t first = 0; first + kTicks + kAhead <= rows.size();
       first += kTicks) {
    std::vector<TickSample> samples;
    for (std::size_t i = first; i < first + kTicks; ++i) {
      samples.push_back(
          {rows.input(i), rows.target(i), LearnedAsAnswered::kFirstId + i});
    }
    std::vector<AheadPoint> ahead;
    std::vector<std::size_t> ahead_rows;
    for (std::size_t i = first + kTicks; i < first + kTicks + kAhead; ++i) {
      ahead.push_back({rows.input(i), LearnedAsAnswered::kFirstId + i});
      ahead_rows.push_back(i);
    }
    absl::StatusOr<v1::LearnResponse> response =
        session->LearnAhead(samples, ahead);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->learned(), first);
    EXPECT_EQ(response->unlearned(), 0u);
    ASSERT_NO_FATAL_FAILURE(
        reference.CheckMessage(*response, rows, first, kTicks, ahead_rows));
    // Learned before the next message: its answers come from one state.
    ASSERT_EQ(WaitLearned("robot", first + kTicks), first + kTicks);
  }
  EXPECT_TRUE(session->Close().ok());
  const v1::ModelStats stats = client_->GetModel("robot")->stats();
  reference.CheckReported(stats);
  // Three of each message's five ticks had a prediction ahead.
  EXPECT_EQ(stats.ahead_scored(), 3 * (rows.size() / kTicks - 2));
  EXPECT_EQ(session->unconfirmed_samples(), 0u);
}

// Points ahead alone: answered, nothing learned, and the message counts
// as durable at once in the watermark.
TEST_F(ServiceTest, ALearnMessageOfPointsAheadAloneLearnsNothing) {
  const Rows rows(60, 3);
  ASSERT_TRUE(client_->CreateModel("robot", RowsSpec()).ok());
  std::unique_ptr<LearnSession> session = client_->StartLearn("robot");
  for (std::size_t i = 0; i < 50; ++i) {
    ASSERT_TRUE(session->Learn(rows.input(i), rows.target(i), 100 + i).ok());
  }
  ASSERT_EQ(WaitLearned("robot", 50), 50u);
  const std::vector<AheadPoint> ahead = {{rows.input(55)}, {rows.input(56)}};
  absl::StatusOr<v1::LearnResponse> response = session->LearnAhead({}, ahead);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->ahead_size(), 2);
  EXPECT_EQ(response->predictions_size(), 0);
  // How stale the predictions ahead were: made after the 50 were learned.
  EXPECT_EQ(response->learned(), 50u);
  EXPECT_EQ(response->unlearned(), 0u);
  EXPECT_LE(response->durable_messages(), 51u);
  const std::vector<v1::Prediction> direct =
      *client_->Predict("robot", rows.inputs(55, 57), Rows::kDim);
  for (int q = 0; q < 2; ++q) {
    EXPECT_EQ(response->ahead(q).y(0), direct[q].y(0)) << q;
    EXPECT_EQ(response->ahead(q).y(1), direct[q].y(1)) << q;
  }
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(session->durable_samples(), 50u);
  EXPECT_EQ(NumSamples("robot"), 50u);
  EXPECT_EQ(client_->GetModel("robot")->stats().answers_sent(), 50u);
}

// A loop that uses its predictions ahead skips its samples' answers: none
// is sent or counted, the samples are learned, and the predictions ahead
// naming them are scored.
TEST_F(ServiceTest, SkippedAnswersAreNeitherSentNorCounted) {
  const Rows rows(80, 3);
  ASSERT_TRUE(client_->CreateModel("robot", RowsSpec()).ok());
  std::unique_ptr<LearnSession> session = client_->StartLearn("robot");
  for (std::size_t first = 0; first < 80; first += 10) {
    std::vector<TickSample> samples;
    for (std::size_t i = first; i < first + 10; ++i) {
      samples.push_back({rows.input(i), rows.target(i), 500 + i});
    }
    // The next message's first four rows, asked ahead.
    std::vector<AheadPoint> ahead;
    for (std::size_t i = first + 10; i < first + 14 && i < 80; ++i) {
      ahead.push_back({rows.input(i), 500 + i});
    }
    absl::StatusOr<v1::LearnResponse> response =
        session->LearnAhead(samples, ahead, /*answer_samples=*/false);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->predictions_size(), 0);
    EXPECT_FALSE(response->has_prediction());
    EXPECT_EQ(response->ahead_size(), static_cast<int>(ahead.size()));
    // How stale the predictions ahead were, of the samples sent before.
    if (!ahead.empty()) {
      EXPECT_LE(response->learned() + response->unlearned(), first);
    }
  }
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(NumSamples("robot"), 80u);
  const v1::ModelStats stats = client_->GetModel("robot")->stats();
  EXPECT_EQ(stats.answers_sent(), 0u);
  EXPECT_EQ(stats.ahead_scored(), 4u * 7);
  // Not with the cautious mode, which answers once durable.
  LearnSessionOptions cautious;
  cautious.answer_when_durable = true;
  std::unique_ptr<LearnSession> careful =
      client_->StartLearn("robot", cautious);
  const std::vector<TickSample> one = {{rows.input(0), rows.target(0), 1}};
  const absl::StatusOr<v1::LearnResponse> refused =
      careful->LearnAhead(one, {}, /*answer_samples=*/false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("answer_when_durable and skip_answers: set one"));
  EXPECT_EQ(NumSamples("robot"), 80u);
}

// The cautious mode with several ticks a message: answered once all are
// durable, with the last one's place; a resent message is found learned.
TEST_F(ServiceTest, TheCautiousModeAnswersSeveralTicksWithTheLastSequence) {
  const Rows rows(100, 3);
  ASSERT_TRUE(client_->CreateModel("robot", RowsSpec()).ok());
  LearnSessionOptions options;
  options.answer_when_durable = true;
  std::unique_ptr<LearnSession> session = client_->StartLearn("robot", options);
  std::vector<TickSample> samples;
  for (std::size_t i = 0; i < 100; ++i) {
    samples.push_back({rows.input(i), rows.target(i), 300 + i});
  }
  const std::vector<AheadPoint> ahead = {{rows.input(0)}};
  for (std::size_t first = 0; first < 100; first += 10) {
    absl::StatusOr<v1::LearnResponse> response = session->LearnAhead(
        std::span<const TickSample>(samples).subspan(first, 10), ahead);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->sequence(), first + 10);
    EXPECT_FALSE(response->duplicate());
    EXPECT_EQ(response->predictions_size(), 10);
    EXPECT_EQ(response->ahead_size(), 1);
    EXPECT_EQ(response->durable_messages(), first / 10 + 1);
  }
  absl::StatusOr<v1::LearnResponse> again = session->LearnAhead(
      std::span<const TickSample>(samples).subspan(20, 10), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->duplicate());
  EXPECT_EQ(again->sequence(), 30u);
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(NumSamples("robot"), 100u);
  EXPECT_EQ(client_->GetModel("robot")->stats().answers_sent(), 110u);
}

TEST_F(ServiceTest, TheCautiousModeAnswersOnceDurableWithTheSequence) {
  const Rows rows(300, 3);
  const v1::ModelSpec spec = RowsSpec();
  ASSERT_TRUE(client_->CreateModel("robot", spec).ok());
  LearnedAsAnswered reference(spec);
  LearnSessionOptions options;
  options.answer_when_durable = true;
  std::unique_ptr<LearnSession> session = client_->StartLearn("robot", options);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    absl::StatusOr<v1::LearnResponse> response =
        session->Learn(rows.input(i), rows.target(i), 7000 + i);
    ASSERT_TRUE(response.ok()) << response.status();
    ASSERT_EQ(response->sequence(), i + 1);
    ASSERT_FALSE(response->duplicate());
    // Its own message is durable when it is answered.
    ASSERT_EQ(response->durable_messages(), i + 1);
    ASSERT_EQ(session->unconfirmed_samples(), 0u);
    // Never its own sample; samples are learned in order.
    ASSERT_LE(response->learned(), i);
    ASSERT_GE(response->learned(), reference.learned());
    EXPECT_EQ(response->learn_lag_us() == 0, response->learned() == i) << i;
    EXPECT_EQ(response->unlearned(), i - response->learned()) << i;
    ASSERT_NO_FATAL_FAILURE(reference.Check(*response, rows, i));
  }
  reference.CheckReported(client_->GetModel("robot")->stats());
  // A resent sample (its answer was lost) is recognised, not learned again.
  absl::StatusOr<v1::LearnResponse> again =
      session->Learn(rows.input(10), rows.target(10), 7010);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate());
  EXPECT_EQ(again->sequence(), 11u);
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(NumSamples("robot"), rows.size());
  const v1::ModelStats stats = client_->GetModel("robot")->stats();
  EXPECT_EQ(stats.duplicate_samples(), 1u);
  // The resent sample's answer was sent too, and counted.
  EXPECT_EQ(stats.answers_sent(), rows.size() + 1);
}

// Two streams on one model, one answered at once and one once durable:
// their samples share group commits, and each answer is counted once, as
// it was sent.
TEST_F(ServiceTest, EveryAnswerOfStreamsSharingAGroupIsCountedOnce) {
  const Rows rows(400, 3);
  ASSERT_TRUE(client_->CreateModel("robot", RowsSpec()).ok());
  LearnSessionOptions cautious;
  cautious.answer_when_durable = true;
  std::unique_ptr<LearnSession> fast = client_->StartLearn("robot");
  std::unique_ptr<LearnSession> careful =
      client_->StartLearn("robot", cautious);
  NormalizedError received(Rows::kTargets);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    LearnSession& session = i % 2 == 0 ? *fast : *careful;
    absl::StatusOr<v1::LearnResponse> answer =
        session.Learn(rows.input(i), rows.target(i), 9000 + i);
    ASSERT_TRUE(answer.ok()) << answer.status();
    received.Add(PredictedValues(answer->prediction()), rows.target(i));
  }
  EXPECT_TRUE(fast->Close().ok());
  EXPECT_TRUE(careful->Close().ok());
  const v1::ModelStats stats = client_->GetModel("robot")->stats();
  EXPECT_EQ(stats.num_samples(), rows.size());
  EXPECT_EQ(stats.answers_sent(), rows.size());
  for (std::size_t t = 0; t < Rows::kTargets; ++t) {
    EXPECT_DOUBLE_EQ(stats.answer_nmse(t), received.Nmse(t));
  }
}

// A Learn call over the raw stub, one message at a time.
class RawLearnCall {
 public:
  explicit RawLearnCall(Client& client)
      : stream_(client.regression().Learn(&context_)) {}
  bool Send(const Rows& rows, std::size_t i, bool answer_when_durable = false) {
    v1::LearnRequest request;
    request.set_model("m");
    request.set_answer_when_durable(answer_when_durable);
    v1::Sample& sample = *request.mutable_sample();
    sample.mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
    sample.mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    sample.set_sample_id(50'000 + i);
    return stream_->Write(request);
  }
  bool Write(const v1::LearnRequest& request) {
    return stream_->Write(request);
  }
  bool Read(v1::LearnResponse* response) { return stream_->Read(response); }
  absl::Status Finish() {
    stream_->WritesDone();
    v1::LearnResponse ignored;
    while (stream_->Read(&ignored)) {
    }
    return FromGrpcStatus(stream_->Finish());
  }
  // The final watermark the call ended with.
  std::string DurableTrailer() const {
    const auto& trailers = context_.GetServerTrailingMetadata();
    const auto found = trailers.find("streamreg-durable-messages");
    return found == trailers.end()
               ? ""
               : std::string(found->second.data(), found->second.size());
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>>
      stream_;
};

TEST_F(ServiceTest, TheAnswerDoesNotWaitForTheFsyncAndTheWatermarkFollows) {
  FaultInjectingFileSystem file_system;
  const Rows rows(100, 4);
  ASSERT_NO_FATAL_FAILURE(StartWithModelOn(file_system, rows));
  std::shared_ptr<HostedModel> hosted = *server_->registry().Find("m");

  file_system.HoldSyncs();  // every fsync waits from now on
  RawLearnCall call(*client_);
  v1::LearnResponse first;
  ASSERT_TRUE(call.Send(rows, 50));
  ASSERT_TRUE(call.Read(&first));  // answered while its fsync cannot end
  EXPECT_TRUE(first.has_prediction());
  EXPECT_EQ(first.learned(), 50u);
  EXPECT_EQ(first.durable_messages(), 0u);
  // Its log record is written, without an fsync of its own: the deferred
  // one (--learn-linger) comes and waits. The sample is learned meanwhile.
  ASSERT_NO_FATAL_FAILURE(WaitForOneSyncHeld(file_system));
  hosted->CatchUp();
  EXPECT_EQ(hosted->samples_learned(), 51u);
  v1::LearnResponse second;
  ASSERT_TRUE(call.Send(rows, 51));
  ASSERT_TRUE(call.Read(&second));  // the next tick, still not waiting
  EXPECT_EQ(second.durable_messages(), 0u);
  EXPECT_EQ(second.learned(), 51u);

  file_system.ReleaseSyncs();
  // Half-closed: the call ends OK once both are durable, the final
  // watermark in its trailer.
  EXPECT_TRUE(call.Finish().ok());
  EXPECT_EQ(call.DurableTrailer(), "2");
  EXPECT_EQ(NumSamples("m"), 52u);
  server_.reset();  // before the file system it uses
}

TEST_F(ServiceTest, TheCautiousAnswerWaitsForItsFsync) {
  FaultInjectingFileSystem file_system;
  const Rows rows(100, 4);
  ASSERT_NO_FATAL_FAILURE(StartWithModelOn(file_system, rows));

  file_system.HoldSyncs();
  RawLearnCall call(*client_);
  ASSERT_TRUE(call.Send(rows, 50, /*answer_when_durable=*/true));
  std::atomic<bool> answered{false};
  v1::LearnResponse answer;
  std::thread reader([&] {
    EXPECT_TRUE(call.Read(&answer));
    answered = true;
  });
  ASSERT_NO_FATAL_FAILURE(WaitForOneSyncHeld(file_system));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(answered.load());  // not while its fsync waits
  file_system.ReleaseSyncs();
  reader.join();
  EXPECT_EQ(answer.sequence(), 51u);
  EXPECT_EQ(answer.durable_messages(), 1u);
  EXPECT_EQ(answer.learned(), 50u);
  EXPECT_TRUE(call.Finish().ok());
  server_.reset();
}

TEST_F(ServiceTest, ASampleThatCannotBeMadeDurableEndsTheStreamNamingIt) {
  FaultInjectingFileSystem file_system;
  const Rows rows(100, 4);
  ASSERT_NO_FATAL_FAILURE(StartWithModelOn(file_system, rows));

  // A full disk: the record is undone; the stream ends naming the message.
  {
    RawLearnCall call(*client_);
    v1::LearnResponse answer;
    ASSERT_TRUE(call.Send(rows, 50));
    ASSERT_TRUE(call.Read(&answer));  // answered first
    // Once it is logged (and learned), the next record finds the disk full.
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    std::shared_ptr<HostedModel> hosted = *server_->registry().Find("m");
    while (hosted->samples_learned() < 51 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    file_system.append_error = ENOSPC;
    ASSERT_TRUE(call.Send(rows, 51));
    // Its answer may come before the stream ends, or not.
    (void)call.Read(&answer);
    const absl::Status status = call.Finish();
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_THAT(status.message(),
                HasSubstr("message 1: sample not durable, not learned"));
    EXPECT_THAT(status.message(), HasSubstr("No space left on device"));
    file_system.append_error = 0;
  }
  EXPECT_EQ(NumSamples("m"), 51u);
  // A failing fsync (the deferred one, --learn-linger): the sample was
  // logged and learned, and is reported not durable; what reached the disk
  // is unknown, so the log refuses every later write.
  {
    file_system.sync_error = EIO;
    RawLearnCall call(*client_);
    v1::LearnResponse answer;
    ASSERT_TRUE(call.Send(rows, 52));
    const absl::Status status = call.Finish();
    EXPECT_EQ(call.DurableTrailer(), "0");
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_THAT(status.message(),
                HasSubstr("message 0: sample learned, not durable"));
    file_system.sync_error = 0;
  }
  EXPECT_EQ(NumSamples("m"), 52u);
  {
    RawLearnCall call(*client_);
    ASSERT_TRUE(call.Send(rows, 53));
    const absl::Status status = call.Finish();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_THAT(status.message(),
                HasSubstr("message 0: sample not durable, not learned"));
  }
  EXPECT_EQ(NumSamples("m"), 52u);
  server_.reset();
}

// A bad message ends a Learn call, but the samples it sent before are
// written (unlike those after a sample that could not be made durable):
// here they all still wait in the group commit when the bad one arrives.
TEST_F(ServiceTest, ALearnCallEndedByABadMessageWritesTheSamplesBeforeIt) {
  const Rows rows(100, 4);
  ASSERT_TRUE(client_->CreateModel("m", RowsSpec()).ok());
  std::shared_ptr<HostedModel> hosted = *server_->registry().Find("m");
  RawLearnCall call(*client_);
  {
    HeldWrites held(*hosted);
    v1::LearnResponse answer;
    for (std::size_t i = 0; i < 20; ++i) {
      ASSERT_TRUE(call.Send(rows, i));
      ASSERT_TRUE(call.Read(&answer));  // answered first
    }
    v1::LearnRequest bad;
    bad.set_model("m");
    bad.mutable_sample()->add_x(1.0);  // one input of four
    bad.mutable_sample()->add_y(0.0);
    ASSERT_TRUE(call.Write(bad));
    // (Time for the server to read it while the samples wait.)
    absl::SleepFor(absl::Milliseconds(200));
  }
  const absl::Status status = call.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("message 20: sample.x: has 1"));
  EXPECT_EQ(NumSamples("m"), 20u);
}

// A bad message of several ticks names its field, and nothing of it is
// learned; the messages before it are.
TEST_F(ServiceTest, ABadMessageOfSeveralTicksIsRefusedWhole) {
  const Rows rows(40, 3);
  ASSERT_TRUE(client_->CreateModel("m", RowsSpec()).ok());
  auto call_with = [&](const v1::LearnRequest& bad) {
    RawLearnCall call(*client_);
    v1::LearnResponse answer;
    EXPECT_TRUE(call.Send(rows, NumSamples("m")));
    EXPECT_TRUE(call.Read(&answer));
    EXPECT_TRUE(call.Write(bad));
    return call.Finish();
  };
  auto samples_of = [&](std::size_t first, std::size_t count) {
    v1::LearnRequest request;
    request.set_model("m");
    for (std::size_t i = first; i < first + count; ++i) {
      v1::Sample* sample = request.add_samples();
      sample->mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
      sample->mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    }
    return request;
  };
  v1::LearnRequest both = samples_of(10, 3);
  *both.mutable_sample() = both.samples(0);
  v1::LearnRequest nan = samples_of(10, 3);
  nan.mutable_samples(2)->set_x(1, std::nan(""));
  v1::LearnRequest bad_ahead = samples_of(10, 3);
  bad_ahead.add_ahead()->add_x(1.0);
  v1::LearnRequest too_many;
  too_many.set_model("m");
  for (int i = 0; i < 1025; ++i) *too_many.add_samples() = nan.samples(0);
  const std::vector<std::pair<v1::LearnRequest, std::string>> cases = {
      {both, "message 1: sample and samples: set one, not both"},
      {nan, "message 1: samples[2].x[1]: NaN"},
      {bad_ahead, "message 1: ahead[0].x: has 1"},
      {too_many, "message 1: samples: 1025 in one message; at most 1024"}};
  std::uint64_t learned = 0;
  for (const auto& [request, error] : cases) {
    const absl::Status status = call_with(request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr(error));
    EXPECT_EQ(NumSamples("m"), ++learned);  // the message before it only
  }
}

}  // namespace
}  // namespace streamreg
