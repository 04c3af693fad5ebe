// Ingester against scripted Ingest services, with another server of the
// model to go to: a server that stops answering pings (a paused process)
// has its stream cancelled after replica_attempt_timeout and the batches
// go to the next server; a server that is only slow to answer the stream,
// and answers pings, keeps it (StallProbe).
#include "client/lib/ingester.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "client/lib/client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "streamreg/v1/regression_service.grpc.pb.h"
#include "tests/support/loopback_servers.h"

namespace streamreg {
namespace {

// Ingest calls and pings as the test scripts them: kAnswers answers both;
// kSlow answers pings at once but each Ingest call only after `slow`;
// kStalled answers neither (an Ingest call ends when the client cancels
// it, a ping once the test ends).
class ScriptedIngestService final : public v1::RegressionService::Service {
 public:
  enum class Behaviour { kAnswers, kSlow, kStalled };
  explicit ScriptedIngestService(
      Behaviour behaviour,
      std::chrono::milliseconds slow = std::chrono::milliseconds(0))
      : behaviour_(behaviour), slow_(slow) {}

  grpc::Status Ingest(grpc::ServerContext* context,
                      grpc::ServerReader<v1::IngestRequest>* reader,
                      v1::IngestResponse* response) override {
    v1::IngestRequest request;
    std::uint64_t samples = 0;
    while (reader->Read(&request)) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const v1::Sample& sample : request.samples()) {
        received_.push_back(sample.sample_id());
        ++samples;
      }
      if (behaviour_ == Behaviour::kStalled) break;
    }
    if (behaviour_ == Behaviour::kStalled) {
      while (!context->IsCancelled()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      cancelled_ = true;
      return grpc::Status::CANCELLED;
    }
    std::this_thread::sleep_for(slow_);
    response->set_accepted(samples);
    response->set_batches(1);
    response->set_num_samples(samples);
    return grpc::Status::OK;
  }

  grpc::Status Ping(grpc::ServerContext* /*context*/,
                    const v1::PingRequest* /*request*/,
                    v1::PingResponse* /*response*/) override {
    while (behaviour_ == Behaviour::kStalled && !ended_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return grpc::Status::OK;
  }

  std::vector<std::uint64_t> received() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }
  bool cancelled() const { return cancelled_; }
  // Lets a stalled ping go (before the server shuts down).
  void End() { ended_ = true; }

 private:
  const Behaviour behaviour_;
  const std::chrono::milliseconds slow_;
  std::atomic<bool> cancelled_ = false;
  std::atomic<bool> ended_ = false;
  std::mutex mutex_;
  std::vector<std::uint64_t> received_;
};

// Two scripted servers on loopback (first_, second_) and a client given
// both. The services outlive the servers, which are shut down first.
class IngesterTest : public ::testing::Test {
 protected:
  void Serve(std::unique_ptr<ScriptedIngestService> first,
             std::unique_ptr<ScriptedIngestService> second) {
    first_ = std::move(first);
    second_ = std::move(second);
    const std::vector<std::string> addresses =
        ServeOnLoopback({first_.get(), second_.get()}, &servers_);
    ASSERT_EQ(addresses.size(), 2u);
    ClientOptions options;
    options.address = absl::StrJoin(addresses, ",");
    options.batch_size = 10;
    options.retry.initial_backoff = absl::Milliseconds(1);
    options.replica_attempt_timeout = absl::Milliseconds(200);
    // Long: a stalled stream waited out would show.
    options.timeout = absl::Seconds(60);
    client_ = std::make_unique<Client>(options);
  }
  void TearDown() override {
    for (ScriptedIngestService* service : {first_.get(), second_.get()}) {
      if (service != nullptr) service->End();
    }
    client_.reset();
    for (auto& server : servers_) server->Shutdown();
    servers_.clear();
  }

  // Ingests 30 samples (ids 1..30): the summary, or the error.
  absl::StatusOr<IngestSummary> IngestThirty() {
    Ingester ingester(client_.get(), "m");
    const double x[] = {1.0};
    for (std::uint64_t id = 1; id <= 30; ++id) {
      const double y[] = {static_cast<double>(id)};
      if (absl::Status added = ingester.Add(x, y, id); !added.ok()) {
        return added;
      }
    }
    return ingester.Finish();
  }

  static std::vector<std::uint64_t> Ids(std::uint64_t first,
                                        std::uint64_t last) {
    std::vector<std::uint64_t> ids;
    for (std::uint64_t id = first; id <= last; ++id) ids.push_back(id);
    return ids;
  }

  std::unique_ptr<ScriptedIngestService> first_, second_;
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::unique_ptr<Client> client_;
};

TEST_F(IngesterTest, LeavesAServerThatStopsAnsweringPingsForTheNext) {
  using Behaviour = ScriptedIngestService::Behaviour;
  ASSERT_NO_FATAL_FAILURE(
      Serve(std::make_unique<ScriptedIngestService>(Behaviour::kStalled),
            std::make_unique<ScriptedIngestService>(Behaviour::kAnswers)));
  const absl::Time start = absl::Now();
  absl::StatusOr<IngestSummary> summary = IngestThirty();
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(summary.ok()) << summary.status();
  // Left after a missed ping, not the call's 60 s.
  EXPECT_LT(took, absl::Seconds(15));
  EXPECT_EQ(first_->received(), Ids(1, 10));   // its first batch
  EXPECT_EQ(second_->received(), Ids(1, 30));  // all, the first resent
  EXPECT_EQ(summary->accepted, 30u);
  // The cancellation reaches the stalled server's handler.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!first_->cancelled() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE(first_->cancelled());
}

TEST_F(IngesterTest, KeepsASlowServerThatAnswersPings) {
  using Behaviour = ScriptedIngestService::Behaviour;
  ASSERT_NO_FATAL_FAILURE(
      Serve(std::make_unique<ScriptedIngestService>(
                Behaviour::kSlow, std::chrono::milliseconds(800)),
            std::make_unique<ScriptedIngestService>(Behaviour::kAnswers)));
  absl::StatusOr<IngestSummary> summary = IngestThirty();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(first_->received(), Ids(1, 30));
  EXPECT_TRUE(second_->received().empty());
  EXPECT_EQ(summary->accepted, 30u);
}

}  // namespace
}  // namespace streamreg
