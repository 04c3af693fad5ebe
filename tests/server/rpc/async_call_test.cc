// The server's async call machinery (CompletionQueueThread, AsyncCall and
// its kinds, ListenForCalls) on a real gRPC server in process, with
// reactors of the test's own: each kind of call answers, in order; a
// reactor's OnDone runs once, after its finish and its operations; unary
// calls finish from another thread; cancelled calls and a shutdown with a
// call open end their reactors (and AddressSanitizer finds no call left).
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/rpc/completion_queue_thread.h"
#include "server/rpc/listen_for_calls.h"
#include "streamreg/v1/model_service.grpc.pb.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {
namespace {

using v1::IngestRequest;
using v1::IngestResponse;
using v1::PredictRequest;
using v1::PredictResponse;
using v1::RefitProgress;
using v1::RefitRequest;

// Reactors ended (OnDone), over all tests' servers.
std::atomic<int> reactors_done{0};

// PredictStream: answers each message with num_samples = the length of its
// model name and predictions = how many messages came before it; ends OK
// when the client half-closes.
class EchoReactor final : public BidiReactor<PredictRequest, PredictResponse> {
 public:
  explicit EchoReactor(Call* call) : StreamReactor(call) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    response_.set_num_samples(request_.model().size());
    for (int i = 0; i < messages_; ++i) response_.add_predictions();
    ++messages_;
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "gone"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override {
    ++reactors_done;
    delete this;
  }

 private:
  PredictRequest request_;
  PredictResponse response_;
  int messages_ = 0;
};

// Ingest: counts the messages and answers with the count (batches) once
// the client half-closes.
class CountReactor final : public ReadReactor<IngestRequest, IngestResponse> {
 public:
  CountReactor(Call* call, IngestResponse* response)
      : StreamReactor(call), response_(response) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_->set_batches(response_->batches() + 1);
    StartRead(&request_);
  }
  void OnDone() override {
    ++reactors_done;
    delete this;
  }

 private:
  IngestResponse* const response_;
  IngestRequest request_;
};

// Refit: writes done = 1..3 of total 3, then finishes OK; a request named
// "fail" finishes at once with NOT_FOUND.
class ProgressReactor final : public WriteReactor<RefitRequest, RefitProgress> {
 public:
  ProgressReactor(Call* call, const RefitRequest* request)
      : StreamReactor(call) {
    if (request->name() == "fail") {
      Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "name: fail"));
      return;
    }
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok || written_ == 3) {
      Finish(ok ? grpc::Status::OK
                : grpc::Status(grpc::StatusCode::CANCELLED, "gone"));
      return;
    }
    WriteNext();
  }
  void OnDone() override {
    ++reactors_done;
    delete this;
  }

 private:
  void WriteNext() {
    progress_.set_done(++written_);
    progress_.set_total(3);
    StartWrite(&progress_);
  }

  RefitProgress progress_;
  int written_ = 0;
};

class AsyncCallTest : public testing::Test {
 protected:
  void SetUp() override {
    reactors_done = 0;
    grpc::ServerBuilder builder;
    builder.RegisterService(&regression_);
    builder.RegisterService(&models_);
    queue_ = std::make_unique<CompletionQueueThread>(builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    using Regression = v1::RegressionService::AsyncService;
    using Models = v1::ModelService::AsyncService;
    CompletionQueueThread* queue = queue_.get();
    // Predict: finished on a thread of its own, after the handler returned.
    ListenForCalls(
        queue, &regression_, &Regression::RequestPredict,
        [this](grpc::ServerContext* /*context*/, const PredictRequest* request,
               PredictResponse* response, UnaryReactor* reactor) {
          finishers_.emplace_back([request, response, reactor] {
            absl::SleepFor(absl::Milliseconds(5));
            if (request->model() == "fail") {
              reactor->Finish(
                  grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "model"));
              return;
            }
            response->set_num_samples(request->model().size());
            reactor->Finish(grpc::Status::OK);
          });
        });
    ListenForCalls(
        queue, &regression_, &Regression::RequestPredictStream,
        [](EchoReactor::Call* call) { return new EchoReactor(call); });
    ListenForCalls(queue, &regression_, &Regression::RequestIngest,
                   [](CountReactor::Call* call, IngestResponse* response) {
                     return new CountReactor(call, response);
                   });
    ListenForCalls(
        queue, &models_, &Models::RequestRefit,
        [](ProgressReactor::Call* call, const RefitRequest* request) {
          return new ProgressReactor(call, request);
        });
    queue_->Start();
    channel_ = server_->InProcessChannel({});
    regression_stub_ = v1::RegressionService::NewStub(channel_);
    models_stub_ = v1::ModelService::NewStub(channel_);
  }

  void TearDown() override { StopServer(); }

  void StopServer() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(200));
    server_->Wait();
    queue_->Stop();
    for (std::thread& finisher : finishers_) finisher.join();
    finishers_.clear();
    server_.reset();
  }

  // A PredictStream that has had one message answered (null if not).
  std::unique_ptr<grpc::ClientReaderWriter<PredictRequest, PredictResponse>>
  OpenPredictStream(grpc::ClientContext* context) {
    auto stream = regression_stub_->PredictStream(context);
    PredictResponse response;
    if (!stream->Write(PredictRequest()) || !stream->Read(&response)) {
      return nullptr;
    }
    return stream;
  }

  // Waits (up to 10 s) until `count` reactors have ended.
  static bool ReactorsEnd(int count) {
    const absl::Time until = absl::Now() + absl::Seconds(10);
    while (reactors_done.load() < count && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    return reactors_done.load() == count;
  }

  v1::RegressionService::AsyncService regression_;
  v1::ModelService::AsyncService models_;
  std::unique_ptr<CompletionQueueThread> queue_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::thread> finishers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::RegressionService::Stub> regression_stub_;
  std::unique_ptr<v1::ModelService::Stub> models_stub_;
};

TEST_F(AsyncCallTest, AUnaryCallFinishedOnAnotherThreadAnswersItsStatus) {
  for (const std::string model : {"abc", "fail", "abcdef"}) {
    grpc::ClientContext context;
    PredictRequest request;
    request.set_model(model);
    PredictResponse response;
    const grpc::Status status =
        regression_stub_->Predict(&context, request, &response);
    if (model == "fail") {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    } else {
      ASSERT_TRUE(status.ok()) << status.error_message();
      EXPECT_EQ(response.num_samples(), model.size());
    }
  }
}

TEST_F(AsyncCallTest, ABidiStreamAnswersEveryMessageInOrderAndEndsOnce) {
  grpc::ClientContext context;
  auto stream = regression_stub_->PredictStream(&context);
  for (int i = 0; i < 200; ++i) {
    PredictRequest request;
    request.set_model(std::string(i % 7, 'm'));
    ASSERT_TRUE(stream->Write(request));
    PredictResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.num_samples(), static_cast<std::uint64_t>(i % 7));
    EXPECT_EQ(response.predictions_size(), i);  // messages before it
  }
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(ReactorsEnd(1));
}

TEST_F(AsyncCallTest, AClientStreamAnswersWithTheResponseItsReactorFilled) {
  grpc::ClientContext context;
  IngestResponse response;
  auto stream = regression_stub_->Ingest(&context, &response);
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(stream->Write(IngestRequest()));
  ASSERT_TRUE(stream->WritesDone());
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_EQ(response.batches(), 25u);
  EXPECT_TRUE(ReactorsEnd(1));
}

TEST_F(AsyncCallTest, AServerStreamWritesItsMessagesThenItsStatus) {
  {
    grpc::ClientContext context;
    RefitRequest request;
    request.set_name("m");
    auto stream = models_stub_->Refit(&context, request);
    RefitProgress progress;
    std::vector<std::uint64_t> done;
    while (stream->Read(&progress)) done.push_back(progress.done());
    EXPECT_TRUE(stream->Finish().ok());
    EXPECT_EQ(done, (std::vector<std::uint64_t>{1, 2, 3}));
  }
  grpc::ClientContext context;
  RefitRequest request;
  request.set_name("fail");
  auto stream = models_stub_->Refit(&context, request);
  RefitProgress progress;
  EXPECT_FALSE(stream->Read(&progress));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(ReactorsEnd(2));
}

TEST_F(AsyncCallTest, StreamsAtOnceAreEachAnsweredInOrder) {
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      grpc::ClientContext context;
      auto stream = regression_stub_->PredictStream(&context);
      for (int i = 0; i < 50; ++i) {
        PredictResponse response;
        if (!stream->Write(PredictRequest()) || !stream->Read(&response) ||
            response.predictions_size() != i) {
          return;
        }
      }
      stream->WritesDone();
      if (stream->Finish().ok()) ++answered;
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(answered.load(), 8);
  EXPECT_TRUE(ReactorsEnd(8));
}

TEST_F(AsyncCallTest, ACancelledCallEndsItsReactor) {
  grpc::ClientContext context;
  auto stream = OpenPredictStream(&context);
  ASSERT_NE(stream, nullptr);
  context.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(ReactorsEnd(1));
}

TEST_F(AsyncCallTest, ShutdownEndsACallLeftOpen) {
  grpc::ClientContext context;
  auto stream = OpenPredictStream(&context);
  ASSERT_NE(stream, nullptr);
  StopServer();  // the stream is cancelled at the deadline, and ends
  EXPECT_EQ(reactors_done.load(), 1);
  EXPECT_FALSE(stream->Finish().ok());
}

}  // namespace
}  // namespace streamreg
