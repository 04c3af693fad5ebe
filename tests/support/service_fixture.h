#ifndef STREAMREG_TESTS_SUPPORT_SERVICE_FIXTURE_H_
#define STREAMREG_TESTS_SUPPORT_SERVICE_FIXTURE_H_

#include <filesystem>
#include <latch>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "gtest/gtest.h"
#include "server/rpc/server.h"
#include "server/rpc/spec_conversion.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {

// The gRPC service's tests (tests/server/rpc/): a server in process on a
// fresh data directory, a client of it, and the engine references they
// compare with.

// The engine's predictions of every row of `queries`, as `options` asks.
inline std::vector<Prediction> EnginePredictions(
    const Model& model, const Rows& queries, const PredictOptions& options) {
  std::vector<std::span<const double>> points;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    points.push_back(queries.input(q));
  }
  std::vector<Prediction> predictions;
  EXPECT_TRUE(model.Predict(points, &predictions, options).ok());
  return predictions;
}

// Holds a model's write queue with a task that waits until Release() (or
// destruction): what is admitted meanwhile waits there. The latches are
// shared with the task, so they outlive it.
class HeldWrites {
 public:
  explicit HeldWrites(HostedModel& model)
      : release_(std::make_shared<std::latch>(1)) {
    auto holding = std::make_shared<std::latch>(1);
    model.writes().Post([holding, release = release_] {
      holding->count_down();
      release->wait();
    });
    holding->wait();
  }
  HeldWrites(const HeldWrites&) = delete;
  HeldWrites& operator=(const HeldWrites&) = delete;
  ~HeldWrites() { Release(); }

  void Release() {
    if (!released_) release_->count_down();
    released_ = true;
  }

 private:
  std::shared_ptr<std::latch> release_;
  bool released_ = false;
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(ServerOptions{}); }
  void TearDown() override {
    client_.reset();
    server_.reset();
    for (const std::string& directory : directories_) {
      std::filesystem::remove_all(directory);
    }
  }

  // The engine references here (Reference, LearnedAsAnswered) learn the
  // samples alone: the server's models take over at fixed counts, as they
  // do (the logged rule's records: durability_test).
  void StartServer(ServerOptions options) {
    client_.reset();
    server_.reset();
    directories_.push_back(FreshDirectory());
    options.drain_timeout = absl::Seconds(2);
    options.take_over = TakeOverRule::kFixedCount;
    ASSERT_NO_FATAL_FAILURE(
        StartTestServer(std::move(options), directories_.back(), &server_));
    ClientOptions client_options;
    client_options.address = server_->address();
    client_options.batch_size = 100;
    client_options.retry.max_attempts = 2;
    client_ = std::make_unique<Client>(client_options);
  }

  // Creates `name` and ingests rows [0, n) of `rows`.
  void CreateAndIngest(const std::string& name, const Rows& rows, std::size_t n,
                       const v1::ModelSpec& spec = RowsSpec()) {
    ASSERT_TRUE(client_->CreateModel(name, spec).ok());
    std::unique_ptr<Ingester> ingester = client_->StartIngest(name);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
    }
    absl::StatusOr<IngestSummary> summary = ingester->Finish();
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_EQ(summary->accepted, n);
  }

  // The engine's model for `spec`, fed rows [0, n) in order.
  static std::unique_ptr<Model> Reference(const v1::ModelSpec& spec,
                                          const Rows& rows, std::size_t n) {
    std::unique_ptr<Model> model = *Model::Create(*ConfigFromSpec(spec));
    for (std::size_t i = 0; i < n; ++i) {
      const Sample sample{rows.input(i), rows.target(i), 0};
      EXPECT_TRUE(model->Learn({&sample, 1}).ok());
    }
    return model;
  }

  absl::Status Ingest(const v1::IngestRequest& request,
                      v1::IngestResponse* response) {
    grpc::ClientContext context;
    auto writer = client_->regression().Ingest(&context, response);
    writer->Write(request);
    writer->WritesDone();
    return FromGrpcStatus(writer->Finish());
  }

  // An Ingest message of rows [first, first + 8) for `model`.
  static v1::IngestRequest BatchOf(const Rows& rows, const std::string& model,
                                   std::size_t first) {
    v1::IngestRequest request;
    request.set_model(model);
    for (std::size_t i = first; i < first + 8; ++i) {
      v1::Sample& sample = *request.add_samples();
      sample.mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
      sample.mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    }
    return request;
  }

  // One Ingest call of `request` in `context` (whose trailers tell the
  // retry hint).
  absl::Status IngestIn(grpc::ClientContext& context,
                        const v1::IngestRequest& request) {
    v1::IngestResponse response;
    auto writer = client_->regression().Ingest(&context, &response);
    writer->Write(request);
    writer->WritesDone();
    return FromGrpcStatus(writer->Finish());
  }

  // Starts an Ingest of rows [20, 28) into `model`, whose write queue is
  // held (HeldWrites), on a thread, and waits up to 30 s for its 8 samples
  // to be admitted; the caller joins the thread.
  std::thread AdmitHeldBatch(const Rows& rows, HostedModel& model) {
    std::thread admitted([this, &rows, name = model.name()] {
      grpc::ClientContext context;
      EXPECT_TRUE(IngestIn(context, BatchOf(rows, name, 20)).ok());
    });
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (model.queued_samples().held() < 8 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return admitted;
  }

  // A server on `file_system` with model "m" that has learned rows
  // [0, 50) of `rows`.
  void StartWithModelOn(FaultInjectingFileSystem& file_system,
                        const Rows& rows) {
    ServerOptions options;
    options.storage.file_system = &file_system;
    StartServer(options);
    ASSERT_NO_FATAL_FAILURE(CreateAndIngest("m", rows, 50));
    ASSERT_EQ(NumSamples("m"), 50u);  // learned (GetModel waits for that)
  }

  // Waits (up to 30 s) until one fsync waits in a held `file_system`.
  static void WaitForOneSyncHeld(const FaultInjectingFileSystem& file_system) {
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (file_system.syncs_waiting() == 0 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_EQ(file_system.syncs_waiting(), 1);
  }

  std::uint64_t NumSamples(const std::string& name) {
    return client_->GetModel(name)->stats().num_samples();
  }
  // Waits (up to 30 s) until the model has learned `samples`: a Learn
  // stream's sample reaches the model just after its answer is sent.
  std::uint64_t WaitLearned(const std::string& name, std::uint64_t samples) {
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (NumSamples(name) < samples && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return NumSamples(name);
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
  std::vector<std::string> directories_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SERVICE_FIXTURE_H_
