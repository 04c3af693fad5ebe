// LearnSession against a scripted Learn service: it keeps every sample
// until the durability watermark covers it, resends exactly the uncovered
// ones first on a new call after a break (or after a server stalled past
// the attempt timeout, on another server), and Close confirms the rest
// from the trailer of a call that ended OK.
#include "client/lib/learn_session.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "client/lib/client.h"
#include "common/durability_trailer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "streamreg/v1/regression_service.grpc.pb.h"
#include "tests/support/loopback_servers.h"

namespace streamreg {
namespace {

// Learn calls as the test scripts them: the first call answers every
// message with no sample durable and breaks (UNAVAILABLE) after
// `break_after` messages — or, to stall, reads message `break_after` and
// answers nothing until the client cancels the call; later calls report
// every message durable once it is read, and end OK with the trailer.
class ScriptedLearnService final : public v1::RegressionService::Service {
 public:
  enum class Break { kFail, kStall };
  explicit ScriptedLearnService(int break_after, Break how = Break::kFail)
      : break_after_(break_after), how_(how) {}

  grpc::Status Learn(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::LearnResponse, v1::LearnRequest>* stream)
      override {
    int call = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      call = calls_++;
      received_.emplace_back();
    }
    v1::LearnRequest request;
    std::uint64_t messages = 0;
    while (stream->Read(&request)) {
      ++messages;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        received_[call].push_back(request.sample().sample_id());
      }
      if (call == 0 && how_ == Break::kStall &&
          static_cast<int>(messages) == break_after_) {
        while (!context->IsCancelled()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        cancelled_ = true;
        return grpc::Status::CANCELLED;
      }
      v1::LearnResponse response;
      response.mutable_prediction()->add_y(request.sample().y(0));
      response.set_durable_messages(call == 0 ? 0 : messages);
      if (!stream->Write(response)) break;
      if (call == 0 && static_cast<int>(messages) == break_after_) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted break");
      }
    }
    context->AddTrailingMetadata(kDurableMessagesTrailer,
                                 std::to_string(messages));
    return grpc::Status::OK;
  }

  // The sample ids each call received, in order.
  std::vector<std::vector<std::uint64_t>> received() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }
  // A stalled call ended because the client cancelled it.
  bool cancelled() const { return cancelled_.load(); }

 private:
  const int break_after_;
  const Break how_;
  std::atomic<bool> cancelled_ = false;
  std::mutex mutex_;
  int calls_ = 0;
  std::vector<std::vector<std::uint64_t>> received_;
};

class LearnSessionTest : public ::testing::Test {
 protected:
  void Start(int break_after) {
    service_ = std::make_unique<ScriptedLearnService>(break_after);
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ClientOptions options;
    options.address = "127.0.0.1:" + std::to_string(port);
    options.retry.initial_backoff = absl::Milliseconds(1);
    client_ = std::make_unique<Client>(options);
  }
  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) server_->Shutdown();
  }

  std::unique_ptr<ScriptedLearnService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(LearnSessionTest, ResendsExactlyTheUncoveredSamplesFirstAfterABreak) {
  ASSERT_NO_FATAL_FAILURE(Start(/*break_after=*/3));
  std::vector<std::uint64_t> durable;
  LearnSessionOptions options;
  options.on_durable = [&](std::uint64_t sample, absl::Duration) {
    durable.push_back(sample);
  };
  std::unique_ptr<LearnSession> session = client_->StartLearn("m", options);
  const double x[] = {1.0};
  for (std::uint64_t i = 1; i <= 5; ++i) {
    const double y[] = {static_cast<double>(i)};
    absl::StatusOr<v1::LearnResponse> answer = session->Learn(x, y, 100 + i);
    ASSERT_TRUE(answer.ok()) << answer.status();
    // The caller gets the answer to its own sample, never a resent one's.
    EXPECT_EQ(answer->prediction().y(0), static_cast<double>(i));
  }
  // Sample 3 broke the first call: 1 and 2 were answered but not covered,
  // so the second call got 1, 2 again (their ids), then 3, 4, 5.
  const std::vector<std::vector<std::uint64_t>> received = service_->received();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0], (std::vector<std::uint64_t>{101, 102, 103}));
  EXPECT_EQ(received[1], (std::vector<std::uint64_t>{101, 102, 103, 104, 105}));
  EXPECT_EQ(session->durable_samples(), 5u);
  EXPECT_EQ(session->unconfirmed_samples(), 0u);
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(durable, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
}

// A server that stops answering (a paused process) holds a stream open:
// with another server of the model to go to, the session gives the stalled
// sample replica_attempt_timeout, cancels the stream and sends the
// uncovered samples and that one to the next server.
TEST(LearnSessionStallTest, LeavesAStalledServerForTheNextAfterTheTimeout) {
  ScriptedLearnService stalling(/*break_after=*/3,
                                ScriptedLearnService::Break::kStall);
  ScriptedLearnService next(/*break_after=*/1000);
  std::vector<std::unique_ptr<grpc::Server>> servers;
  const std::vector<std::string> addresses =
      ServeOnLoopback({&stalling, &next}, &servers);
  ASSERT_EQ(addresses.size(), 2u);
  ClientOptions options;
  options.address = absl::StrJoin(addresses, ",");
  options.retry.initial_backoff = absl::Milliseconds(1);
  options.replica_attempt_timeout = absl::Milliseconds(200);
  {
    Client client(options);
    std::unique_ptr<LearnSession> session = client.StartLearn("m");
    const double x[] = {1.0};
    for (std::uint64_t i = 1; i <= 5; ++i) {
      const double y[] = {static_cast<double>(i)};
      const absl::Time start = absl::Now();
      absl::StatusOr<v1::LearnResponse> answer = session->Learn(x, y, 300 + i);
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(answer->prediction().y(0), static_cast<double>(i));
      if (i == 3) {
        EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
      }
    }
    EXPECT_TRUE(stalling.cancelled());
    EXPECT_EQ(stalling.received(),
              (std::vector<std::vector<std::uint64_t>>{{301, 302, 303}}));
    EXPECT_EQ(
        next.received(),
        (std::vector<std::vector<std::uint64_t>>{{301, 302, 303, 304, 305}}));
    EXPECT_TRUE(session->Close().ok());
    EXPECT_EQ(session->durable_samples(), 5u);
  }
  for (auto& server : servers) server->Shutdown();
}

TEST_F(LearnSessionTest, CloseConfirmsFromTheTrailerOfACallEndedOk) {
  ASSERT_NO_FATAL_FAILURE(Start(/*break_after=*/1000));
  std::unique_ptr<LearnSession> session = client_->StartLearn("m");
  const double x[] = {1.0};
  for (std::uint64_t i = 1; i <= 4; ++i) {
    const double y[] = {static_cast<double>(i)};
    ASSERT_TRUE(session->Learn(x, y, 200 + i).ok());
  }
  // The first call never reports a sample durable in its answers.
  EXPECT_EQ(session->durable_samples(), 0u);
  EXPECT_EQ(session->unconfirmed_samples(), 4u);
  EXPECT_GT(session->durability_lag(), absl::ZeroDuration());
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(session->durable_samples(), 4u);
  EXPECT_EQ(session->unconfirmed_samples(), 0u);
  EXPECT_EQ(session->durability_lag(), absl::ZeroDuration());
  EXPECT_EQ(service_->received().size(), 1u);  // nothing resent
}

}  // namespace
}  // namespace streamreg
