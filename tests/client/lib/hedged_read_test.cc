// The client library's reads (GetModel, ListModels, Predict) against
// scripted servers of one model: a server that does not answer has the
// next one asked after replica_attempt_timeout while its call is kept, the
// first answer is taken and the other calls are cancelled (HedgedRead); a
// server that fails, or answers an error of its own state, has the next
// one asked at once; an error of the request is taken from the first; the
// calls share one deadline. A Predict stream leaves a stalled server for the
// next.
#include "client/lib/internal/hedged_read.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "client/lib/predict_session.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "streamreg/v1/model_service.grpc.pb.h"
#include "streamreg/v1/regression_service.grpc.pb.h"
#include "tests/support/loopback_servers.h"

namespace streamreg {
namespace {

// How a scripted server answers every read.
struct Script {
  enum class Behaviour {
    kAnswers,
    kSlow,
    kStalled,
    kUnavailable,
    kNotFound,
    kNoSamples,  // FAILED_PRECONDITION: a replica not caught up
    kInvalid,    // INVALID_ARGUMENT: the request's error
    kRedirects,  // UNAVAILABLE naming the other servers as the model's
  };
  Behaviour behaviour = Behaviour::kAnswers;
  std::chrono::milliseconds slow{0};  // kSlow: the wait before answering
  std::string name;                   // its answers carry it
};

// A scripted server's reads as its script says, and what it saw; shared
// by its two services.
struct ScriptedReads {
  // Waits as the script says; the status to answer with (OK: answer).
  grpc::Status Follow(grpc::ServerContext* context) {
    ++calls;
    switch (script.behaviour) {
      case Script::Behaviour::kAnswers:
        return grpc::Status::OK;
      case Script::Behaviour::kSlow:
        std::this_thread::sleep_for(script.slow);
        return grpc::Status::OK;
      case Script::Behaviour::kStalled:
        while (!context->IsCancelled() && !ended) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (context->IsCancelled()) ++cancelled;
        return grpc::Status::CANCELLED;
      case Script::Behaviour::kUnavailable:
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining");
      case Script::Behaviour::kNotFound:
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no model 'm'");
      case Script::Behaviour::kInvalid:
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "queries[0].x: 2 values, the model has 1 input");
      case Script::Behaviour::kNoSamples:
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "model 'm' has no samples to predict from");
      case Script::Behaviour::kRedirects: {
        std::lock_guard<std::mutex> lock(mutex);
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "served by others (servers=" + others + ")");
      }
    }
    return grpc::Status::OK;
  }

  const Script script;
  std::atomic<int> calls = 0;
  std::atomic<int> cancelled = 0;   // calls the client cancelled
  std::atomic<bool> ended = false;  // the test is over: stalls end
  std::mutex mutex = {};
  std::string others = {};  // kRedirects: the other servers, comma-separated
};

class ScriptedModelService final : public v1::ModelService::Service {
 public:
  explicit ScriptedModelService(ScriptedReads* reads) : reads_(reads) {}

  grpc::Status GetModel(grpc::ServerContext* context,
                        const v1::GetModelRequest* request,
                        v1::Model* model) override {
    grpc::Status status = reads_->Follow(context);
    model->set_name(request->name() + "@" + reads_->script.name);
    return status;
  }

  grpc::Status ListModels(grpc::ServerContext* context,
                          const v1::ListModelsRequest* /*request*/,
                          v1::ListModelsResponse* page) override {
    grpc::Status status = reads_->Follow(context);
    page->add_models()->set_name("listed-by-" + reads_->script.name);
    return status;
  }

 private:
  ScriptedReads* const reads_;
};

// Predicts y = 2 x for each query's one input.
class ScriptedRegressionService final : public v1::RegressionService::Service {
 public:
  explicit ScriptedRegressionService(ScriptedReads* reads) : reads_(reads) {}

  grpc::Status Predict(grpc::ServerContext* context,
                       const v1::PredictRequest* request,
                       v1::PredictResponse* response) override {
    grpc::Status status = reads_->Follow(context);
    Answer(*request, response);
    return status;
  }

  // Each query of the stream as the script says.
  grpc::Status PredictStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::PredictResponse, v1::PredictRequest>* stream)
      override {
    v1::PredictRequest request;
    while (stream->Read(&request)) {
      if (grpc::Status status = reads_->Follow(context); !status.ok()) {
        return status;
      }
      v1::PredictResponse response;
      Answer(request, &response);
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

 private:
  static void Answer(const v1::PredictRequest& request,
                     v1::PredictResponse* response) {
    for (const v1::Query& query : request.queries()) {
      response->add_predictions()->add_y(2.0 * query.x(0));
    }
  }

  ScriptedReads* const reads_;
};

// One scripted server: its reads and both services.
struct ScriptedServer {
  explicit ScriptedServer(const Script& script) : reads{script} {}
  ScriptedReads reads;
  ScriptedModelService models{&reads};
  ScriptedRegressionService regression{&reads};
};

class HedgedReadTest : public ::testing::Test {
 protected:
  // Serves one scripted server per script, and a client given them all.
  // The client is given the first `given` servers (0: all).
  void Serve(const std::vector<Script>& scripts,
             absl::Duration replica_attempt_timeout,
             absl::Duration timeout = absl::Seconds(60),
             std::size_t given = 0) {
    std::vector<std::string> addresses;
    for (const Script& script : scripts) {
      scripted_.push_back(std::make_unique<ScriptedServer>(script));
      std::string address = ServeTogetherOnLoopback(
          {&scripted_.back()->models, &scripted_.back()->regression},
          &servers_);
      ASSERT_FALSE(address.empty());
      addresses.push_back(std::move(address));
    }
    ClientOptions options;
    for (std::size_t s = 0; s < scripts.size(); ++s) {
      std::vector<std::string> others = addresses;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(s));
      std::lock_guard<std::mutex> lock(seen(s).mutex);
      seen(s).others = absl::StrJoin(others, ",");
    }
    if (given != 0) addresses.resize(given);
    options.address = absl::StrJoin(addresses, ",");
    options.retry.initial_backoff = absl::Milliseconds(1);
    options.replica_attempt_timeout = replica_attempt_timeout;
    options.timeout = timeout;
    client_ = std::make_unique<Client>(options);
  }
  void TearDown() override {
    for (auto& server : scripted_) server->reads.ended = true;
    client_.reset();
    for (auto& server : servers_) {
      if (server != nullptr) server->Shutdown();
    }
  }
  ScriptedReads& seen(std::size_t server) { return scripted_[server]->reads; }

  // A GetModel of "m", and how long it took.
  absl::StatusOr<v1::Model> TimedGetModel(absl::Duration* took) {
    const absl::Time start = absl::Now();
    absl::StatusOr<v1::Model> model = client_->GetModel("m");
    *took = absl::Now() - start;
    return model;
  }

  // The first server answers as `first` does at once, the second answers:
  // the read is the second's, asked at once (not after the attempt
  // timeout of 30 s).
  void ExpectTheNextAskedAtOnceAfter(Script::Behaviour first) {
    ASSERT_NO_FATAL_FAILURE(Serve(
        {{first, {}, "first"}, {Script::Behaviour::kAnswers, {}, "second"}},
        absl::Seconds(30)));
    absl::Duration took;
    absl::StatusOr<v1::Model> model = TimedGetModel(&took);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->name(), "m@second");
    EXPECT_LT(took, absl::Seconds(15));
    EXPECT_EQ(seen(0).calls, 1);
  }

  // Waits up to 10 s for the server's handler to see its call cancelled.
  bool SawCancelled(std::size_t server) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (seen(server).cancelled == 0 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return seen(server).cancelled > 0;
  }

  std::vector<std::unique_ptr<ScriptedServer>> scripted_;
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::unique_ptr<Client> client_;
};

using Behaviour = Script::Behaviour;

TEST_F(HedgedReadTest, AStalledServerCostsAReadOneAttemptTimeout) {
  ASSERT_NO_FATAL_FAILURE(Serve(
      {{Behaviour::kStalled, {}, "first"}, {Behaviour::kAnswers, {}, "second"}},
      absl::Milliseconds(200)));
  absl::Duration took;
  absl::StatusOr<v1::Model> model = TimedGetModel(&took);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "m@second");
  EXPECT_GE(took, absl::Milliseconds(200));  // the first was given its turn
  EXPECT_LT(took, absl::Seconds(30));        // not the call's 60 s
  EXPECT_TRUE(SawCancelled(0));              // the unanswered call ended
  // The next read goes to the server that answered, first.
  ASSERT_TRUE(client_->GetModel("m").ok());
  EXPECT_EQ(seen(0).calls, 1);
  EXPECT_EQ(seen(1).calls, 2);
}

TEST_F(HedgedReadTest, ASlowServerAnswersWhileTheNextOneIsStalled) {
  // The slow server's call is kept while the stalled one is asked: its
  // answer comes, where a read that gave the slow one up would have waited
  // for the stalled one to the deadline.
  ASSERT_NO_FATAL_FAILURE(
      Serve({{Behaviour::kSlow, std::chrono::milliseconds(800), "first"},
             {Behaviour::kStalled, {}, "second"}},
            absl::Milliseconds(100)));
  absl::Duration took;
  absl::StatusOr<v1::Model> model = TimedGetModel(&took);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "m@first");
  EXPECT_LT(took, absl::Seconds(30));
  EXPECT_EQ(seen(1).calls, 1);  // asked while the first was slow
  EXPECT_TRUE(SawCancelled(1));
}

TEST_F(HedgedReadTest, AFailingServerHasTheNextAskedAtOnce) {
  ExpectTheNextAskedAtOnceAfter(Behaviour::kUnavailable);
}

TEST_F(HedgedReadTest, AModelOneServerHasNotHeardOfIsReadFromTheNext) {
  ExpectTheNextAskedAtOnceAfter(Behaviour::kNotFound);
}

TEST_F(HedgedReadTest, AModelNoServerHasIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(Serve({{Behaviour::kNotFound, {}, "first"},
                                 {Behaviour::kNotFound, {}, "second"}},
                                absl::Seconds(30)));
  absl::StatusOr<v1::Model> model = client_->GetModel("m");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound)
      << model.status();
  EXPECT_EQ(seen(0).calls, 1);
  EXPECT_EQ(seen(1).calls, 1);
}

TEST_F(HedgedReadTest, AnErrorOfTheRequestIsTakenFromTheFirst) {
  ASSERT_NO_FATAL_FAILURE(Serve(
      {{Behaviour::kInvalid, {}, "first"}, {Behaviour::kAnswers, {}, "second"}},
      absl::Seconds(30)));
  absl::StatusOr<v1::Model> model = client_->GetModel("m");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
      << model.status();
  EXPECT_EQ(seen(0).calls, 1);
  EXPECT_EQ(seen(1).calls, 0);
}

TEST_F(HedgedReadTest, AReplicaNotCaughtUpDoesNotCutAnAnswerShort) {
  // The replica asked second has no samples yet: the first, slow, answers.
  ASSERT_NO_FATAL_FAILURE(
      Serve({{Behaviour::kSlow, std::chrono::milliseconds(500), "first"},
             {Behaviour::kNoSamples, {}, "second"}},
            absl::Milliseconds(100)));
  absl::StatusOr<v1::Model> model = client_->GetModel("m");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "m@first");
  EXPECT_EQ(seen(1).calls, 1);
}

TEST_F(HedgedReadTest, TheErrorOfAServerIsReturnedWhenNoneAnswers) {
  ASSERT_NO_FATAL_FAILURE(Serve({{Behaviour::kUnavailable, {}, "first"},
                                 {Behaviour::kNoSamples, {}, "second"}},
                                absl::Milliseconds(100)));
  absl::StatusOr<v1::Model> model = client_->GetModel("m");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition)
      << model.status();
}

TEST_F(HedgedReadTest, TheServersAFailureNamesAreLeftToTheRetry) {
  // A client given only the first server, with one attempt: the servers
  // its answer names are not asked (a test's read of one server, or a
  // caller's policy of no retries, stays so).
  ASSERT_NO_FATAL_FAILURE(Serve({{Behaviour::kRedirects, {}, "first"},
                                 {Behaviour::kAnswers, {}, "second"}},
                                absl::Milliseconds(100), absl::Seconds(60),
                                /*given=*/1));
  ClientOptions one_attempt = client_->options();
  one_attempt.retry.max_attempts = 1;
  client_ = std::make_unique<Client>(one_attempt);
  absl::StatusOr<v1::Model> model = client_->GetModel("m");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnavailable)
      << model.status();
  EXPECT_EQ(seen(1).calls, 0);
  // The next read goes where it was sent.
  model = client_->GetModel("m");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "m@second");
}

TEST_F(HedgedReadTest, AReadOfTheOnlyServerWaitsForItsAnswer) {
  ASSERT_NO_FATAL_FAILURE(
      Serve({{Behaviour::kSlow, std::chrono::milliseconds(500), "only"}},
            absl::Milliseconds(50)));
  absl::StatusOr<v1::Model> model = client_->GetModel("m");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "m@only");
  EXPECT_EQ(seen(0).calls, 1);
}

TEST_F(HedgedReadTest, TheCallsShareOneDeadline) {
  ASSERT_NO_FATAL_FAILURE(Serve(
      {{Behaviour::kStalled, {}, "first"}, {Behaviour::kStalled, {}, "second"}},
      absl::Milliseconds(100), absl::Seconds(1)));
  absl::Duration took;
  absl::StatusOr<v1::Model> model = TimedGetModel(&took);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDeadlineExceeded)
      << model.status();
  EXPECT_GE(took, absl::Seconds(1));
  EXPECT_LT(took, absl::Seconds(10));  // not retried, not 1 s per server
  EXPECT_EQ(seen(0).calls, 1);
  EXPECT_EQ(seen(1).calls, 1);
}

TEST_F(HedgedReadTest, PredictionsComeWholeFromTheServerThatAnswered) {
  ASSERT_NO_FATAL_FAILURE(Serve(
      {{Behaviour::kStalled, {}, "first"}, {Behaviour::kAnswers, {}, "second"}},
      absl::Milliseconds(100)));
  const std::vector<double> x = {1.0, 2.0, 3.0};
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client_->Predict("m", x, 1);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  ASSERT_EQ(predictions->size(), 3u);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(PredictedValues((*predictions)[i]).front(), 2.0 * x[i]);
  }
  EXPECT_TRUE(SawCancelled(0));
}

TEST_F(HedgedReadTest, AListingComesFromTheServerThatAnswered) {
  ASSERT_NO_FATAL_FAILURE(Serve(
      {{Behaviour::kStalled, {}, "first"}, {Behaviour::kAnswers, {}, "second"}},
      absl::Milliseconds(100)));
  absl::StatusOr<std::vector<v1::Model>> models = client_->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ(models->front().name(), "listed-by-second");
}

// A Predict stream is not hedged: while the model has another server, a
// query not answered within replica_attempt_timeout gives the stream up
// (AttemptBound) and goes to the next server.
TEST_F(HedgedReadTest, APredictSessionLeavesAStalledServerForTheNext) {
  ASSERT_NO_FATAL_FAILURE(Serve(
      {{Behaviour::kStalled, {}, "first"}, {Behaviour::kAnswers, {}, "second"}},
      absl::Milliseconds(200)));
  std::unique_ptr<PredictSession> session = client_->StartPredict("m");
  const double x[] = {1.5};
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::Prediction> prediction = session->Predict(x);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(prediction.ok()) << prediction.status();
  EXPECT_EQ(PredictedValues(*prediction).front(), 3.0);
  EXPECT_GE(took, absl::Milliseconds(200));
  EXPECT_LT(took, absl::Seconds(30));
  EXPECT_TRUE(SawCancelled(0));
  for (int i = 0; i < 20; ++i) {  // the next queries go on at once
    ASSERT_TRUE(session->Predict(x).ok());
  }
  EXPECT_EQ(seen(0).calls, 1);
  EXPECT_EQ(seen(1).calls, 21);
  EXPECT_TRUE(session->Close().ok());
}

}  // namespace
}  // namespace streamreg
