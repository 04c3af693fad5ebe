// The gRPC service in process, through the C++ client library: every RPC
// against an engine Model fed the same samples (predictions must be equal
// to the last bit), every error status with the field it names and with
// nothing changed, retries that do not learn twice, concurrent streams
// during index rebuilds, cancellation, deadlines and a graceful drain.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "common/normalized_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/ahead_errors.h"
#include "server/hosting/answer_errors.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/request_limits.h"
#include "server/rpc/server.h"
#include "server/rpc/spec_conversion.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// The engine's predictions of every row of `queries`, as `options` asks.
std::vector<Prediction> EnginePredictions(const Model& model,
                                          const Rows& queries,
                                          const PredictOptions& options) {
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

TEST_F(ServiceTest, CreateGetListDeleteAndTheSpecInEffect) {
  v1::ModelSpec spec = RowsSpec(v1::METRIC_UNSPECIFIED);
  spec.add_input_names("a");
  spec.add_input_names("b");
  spec.add_input_names("c");
  absl::StatusOr<v1::Model> created = client_->CreateModel("arm-1", spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->name(), "arm-1");
  EXPECT_EQ(created->spec().metric(), v1::METRIC_MLKR);  // the default
  EXPECT_EQ(created->spec().regressor(), v1::REGRESSOR_KNN);
  EXPECT_EQ(created->spec().tuning().honest_lag(), 200u);
  EXPECT_TRUE(created->spec().linear_base());
  EXPECT_EQ(created->spec().tuning().base_ridge(), 1.0);
  EXPECT_EQ(created->spec().tuning().base_forgetting(), 1.0);
  EXPECT_EQ(created->spec().tuning().base_relative_ridge(), 0.03);
  EXPECT_EQ(created->spec().tuning().gradient_estimator(),
            v1::GRADIENT_ESTIMATOR_LOCAL_LINEAR);
  EXPECT_EQ(created->spec().kernel(), v1::KERNEL_BOX);
  EXPECT_EQ(created->spec().bandwidth_grid_size(), 27);  // the default grid
  EXPECT_EQ(created->spec().tuning().step_ratio(), 0.5);
  EXPECT_EQ(created->spec().tuning().max_scoring_stride(), 8u);
  EXPECT_EQ(created->spec().input_names(2), "c");
  EXPECT_GT(created->create_time().seconds(), 1'700'000'000);
  EXPECT_EQ(created->stats().num_samples(), 0u);

  for (const char* name : {"m0", "m1", "m2", "m3"}) {
    ASSERT_TRUE(client_->CreateModel(name, RowsSpec()).ok());
  }
  // Two at a time, in name order.
  v1::ListModelsRequest request;
  request.set_page_size(2);
  std::vector<std::string> names;
  do {
    grpc::ClientContext context;
    v1::ListModelsResponse page;
    ASSERT_TRUE(client_->models().ListModels(&context, request, &page).ok());
    EXPECT_LE(page.models_size(), 2);
    for (const v1::Model& model : page.models()) names.push_back(model.name());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  EXPECT_THAT(names, ::testing::ElementsAre("arm-1", "m0", "m1", "m2", "m3"));
  EXPECT_EQ(client_->ListModels()->size(), 5u);

  ASSERT_TRUE(client_->DeleteModel("m1").ok());
  EXPECT_EQ(client_->GetModel("m1").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->ListModels()->size(), 4u);
}

// Intervals on the wire: the spec in effect reports the level asked for
// and the calibration's settings; each prediction's interval, and the
// stats' half widths and coverages, are the engine's exactly; a request
// may ask for another level; a level outside (0, 1) is refused naming the
// field, in a spec and in a request, and changes nothing.
TEST_F(ServiceTest, IntervalsOnTheWireAreTheEngines) {
  const Rows rows(1200, 3);
  const Rows queries(40, 4);
  v1::ModelSpec spec = RowsSpec();
  spec.set_interval_level(0.8);
  spec.mutable_tuning()->set_interval_step(0.01);
  CreateAndIngest("bands", rows, rows.size(), spec);
  const v1::Model model = *client_->GetModel("bands");
  EXPECT_EQ(model.spec().interval_level(), 0.8);
  EXPECT_EQ(model.spec().tuning().interval_step(), 0.01);
  EXPECT_EQ(model.spec().tuning().interval_window(), 2000u);
  const std::unique_ptr<Model> reference = Reference(spec, rows, rows.size());
  const ModelStats expected_stats = reference->stats();
  ASSERT_EQ(model.stats().interval_half_width_size(), Rows::kTargets);
  for (std::size_t t = 0; t < Rows::kTargets; ++t) {
    EXPECT_EQ(model.stats().interval_half_width(t),
              expected_stats.interval_half_width[t]);
    EXPECT_EQ(model.stats().interval_coverage(t),
              expected_stats.interval_coverage[t]);
    EXPECT_NEAR(model.stats().interval_coverage(t), 0.8, 0.05);
    // No Learn answer was sent: the next gets the engine's interval for
    // the stream's next sample, and none has a coverage yet.
    EXPECT_EQ(model.stats().answer_interval_half_width(t),
              expected_stats.answer_interval_half_width[t]);
    EXPECT_TRUE(std::isnan(model.stats().answer_interval_coverage(t)));
    EXPECT_TRUE(std::isnan(model.stats().answer_nmse(t)));
  }
  EXPECT_EQ(model.stats().answers_sent(), 0u);
  // Per query and target, the half width at the model's level.
  std::vector<double> model_level_half(queries.size() * Rows::kTargets);
  for (const std::optional<double> level :
       {std::optional<double>(), std::optional<double>(0.95)}) {
    absl::StatusOr<std::vector<v1::Prediction>> predictions =
        client_->Predict("bands", queries.x, Rows::kDim,
                         {.interval_level = level, .with_neighbors = false});
    ASSERT_TRUE(predictions.ok()) << predictions.status();
    const std::vector<Prediction> expected =
        EnginePredictions(*reference, queries, PredictOptions::AtLevel(level));
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const v1::Prediction& got = (*predictions)[q];
      ASSERT_EQ(got.lower_size(), Rows::kTargets);
      for (std::size_t t = 0; t < Rows::kTargets; ++t) {
        ASSERT_EQ(got.lower(t), expected[q].lower[t]) << q;
        ASSERT_EQ(got.upper(t), expected[q].upper[t]) << q;
        const double half = (got.upper(t) - got.lower(t)) / 2;
        // At 95% wider than the model's 80% at the same query.
        if (level.has_value()) {
          EXPECT_GT(half, model_level_half[q * Rows::kTargets + t]);
        } else {
          model_level_half[q * Rows::kTargets + t] = half;
        }
      }
    }
  }
  const absl::StatusOr<std::vector<v1::Prediction>> refused =
      client_->Predict("bands", queries.x, Rows::kDim,
                       {.interval_level = 1.5, .with_neighbors = false});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("interval_level: must be in (0, 1), got 1.5"));
  spec.set_interval_level(0.0);
  const absl::Status bad_spec = client_->CreateModel("bad", spec).status();
  EXPECT_EQ(bad_spec.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_spec.message(),
              HasSubstr("spec.interval_level: must be in (0, 1), got 0"));
  spec.set_interval_level(0.9);
  spec.mutable_tuning()->set_interval_window(0);
  EXPECT_THAT(client_->CreateModel("bad", spec).status().message(),
              HasSubstr("spec.tuning.interval_window: 1 to 100000, got 0"));
  spec.mutable_tuning()->clear_interval_window();
  spec.mutable_tuning()->set_max_scoring_stride(0);
  EXPECT_THAT(client_->CreateModel("bad", spec).status().message(),
              HasSubstr("spec.tuning.max_scoring_stride: 1 to 1024, got 0"));
  EXPECT_EQ(client_->GetModel("bad").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetModel("bands")->stats().num_samples(), rows.size());
}

// A random-feature base asked for on the wire: the spec in effect reports
// its options with their defaults filled in, the model predicts exactly as
// the engine's, and bad options are refused naming the field.
TEST_F(ServiceTest, ARandomFeatureBaseOnTheWireIsTheEngines) {
  const Rows rows(1500, 1);
  const Rows queries(50, 2);
  v1::ModelSpec spec = RowsSpec(v1::METRIC_MLKR);
  spec.mutable_random_feature_base()->set_frequencies(16);
  spec.mutable_random_feature_base()->add_ridges(0.01);
  spec.mutable_random_feature_base()->add_ridges(0.1);
  CreateAndIngest("rf", rows, rows.size(), spec);
  const v1::ModelSpec in_effect = client_->GetModel("rf")->spec();
  ASSERT_TRUE(in_effect.has_random_feature_base());
  EXPECT_EQ(in_effect.random_feature_base().frequencies(), 16u);
  EXPECT_THAT(in_effect.random_feature_base().lengthscales(),
              ::testing::ElementsAre(0.25, 0.5, 1.0, 2.0));
  EXPECT_THAT(in_effect.random_feature_base().ridges(),
              ::testing::ElementsAre(0.01, 0.1));
  EXPECT_FALSE(client_->GetModel("rf")->spec().per_target_base());
  const std::shared_ptr<HostedModel> hosted =
      server_->registry().Find("rf").value();
  const std::unique_ptr<Model> reference = Reference(spec, rows, rows.size());
  hosted->CatchUp();
  const_cast<Model&>(hosted->model()).FinishRebuilds();
  reference->FinishRebuilds();
  EXPECT_GE(reference->stats().base_rebuilds, 1u);
  const v1::ModelStats stats = client_->GetModel("rf")->stats();
  EXPECT_EQ(stats.base_rebuilds(), reference->stats().base_rebuilds);
  EXPECT_EQ(stats.base_lengthscale(), reference->stats().base_lengthscale);
  EXPECT_EQ(stats.base_ridge(), reference->stats().base_ridge);
  EXPECT_TRUE(stats.base_ridge() == 0.01 || stats.base_ridge() == 0.1);
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client_->Predict("rf", queries.x, Rows::kDim);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Prediction expected = *reference->Predict(queries.input(q));
    ASSERT_EQ((*predictions)[q].base_variance_size(), Rows::kTargets);
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      ASSERT_EQ((*predictions)[q].y(t), expected.value[t]) << "query " << q;
      ASSERT_EQ((*predictions)[q].base_variance(t), expected.base_variance[t])
          << "query " << q;
      EXPECT_GT(expected.base_variance[t], 0.0);
    }
  }
  // A model without one reports none, nor a variance.
  CreateAndIngest("linear", rows, 100, RowsSpec());
  EXPECT_FALSE(client_->GetModel("linear")->spec().has_random_feature_base());
  predictions = client_->Predict("linear", queries.x, Rows::kDim);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  EXPECT_EQ(predictions->front().base_variance_size(), 0);

  spec = RowsSpec(v1::METRIC_MLKR);
  spec.mutable_random_feature_base()->set_frequencies(600);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.random_feature_base.frequencies: at least 1"));
  spec.mutable_random_feature_base()->set_frequencies(0);
  spec.mutable_random_feature_base()->add_lengthscales(1.0);
  spec.mutable_random_feature_base()->add_lengthscales(-2.0);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.random_feature_base.lengthscales[1]: must be "
                        "finite and > 0"));
  spec.mutable_random_feature_base()->clear_lengthscales();
  spec.set_linear_base(false);
  const absl::Status no_base = client_->CreateModel("x", spec).status();
  EXPECT_EQ(no_base.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_base.message(),
              HasSubstr("spec.random_feature_base: needs the base on"));
  EXPECT_EQ(client_->GetModel("x").status().code(),
            absl::StatusCode::kNotFound);
}

// The transport baselines of `streamreg bench`: answered at once, unary and
// one response per request on a stream, with no model needed.
TEST_F(ServiceTest, PingAndPingStreamAnswerEveryRequest) {
  grpc::ClientContext unary_context;
  v1::PingResponse response;
  EXPECT_TRUE(client_->regression()
                  .Ping(&unary_context, v1::PingRequest(), &response)
                  .ok());
  grpc::ClientContext stream_context;
  auto stream = client_->regression().PingStream(&stream_context);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(stream->Write(v1::PingRequest())) << i;
    ASSERT_TRUE(stream->Read(&response)) << i;
  }
  stream->WritesDone();
  EXPECT_FALSE(stream->Read(&response));  // nothing unasked for
  EXPECT_TRUE(stream->Finish().ok());
}

// A server given a local socket (`--listen unix:PATH`) reports that
// address, the one its clients dial, and answers there.
TEST_F(ServiceTest, AServerOnALocalSocketNamesItAndAnswersThere) {
  directories_.push_back(FreshDirectory());
  const std::string socket = "unix:" + directories_.back() + "/streamreg.sock";
  ServerOptions options;
  options.listen = socket;
  options.data_dir = directories_.back() + "/data";
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->address(), socket);
  Client client(TestClientOptions(**server));
  absl::StatusOr<std::string> health = client.Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");
  EXPECT_TRUE(client.CreateModel("local", RowsSpec()).ok());
}

// --local_socket: the same server on its TCP port and on a local socket
// (a controller on the same machine dials unix:PATH); a socket it cannot
// make stops the start, naming the flag.
TEST_F(ServiceTest, AServerServesALocalSocketBesideItsPort) {
  directories_.push_back(FreshDirectory());
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.local_socket = directories_.back() + "/streamreg.sock";
  options.data_dir = directories_.back() + "/data";
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->local_socket_address(),
            "unix:" + directories_.back() + "/streamreg.sock");
  Client tcp(TestClientOptions(**server));
  ClientOptions local_options = TestClientOptions(**server);
  local_options.address = (*server)->local_socket_address();
  Client local(local_options);
  ASSERT_TRUE(local.CreateModel("both", RowsSpec()).ok());
  absl::StatusOr<v1::Model> seen = tcp.GetModel("both");
  ASSERT_TRUE(seen.ok()) << seen.status();

  ServerOptions unmakeable;
  unmakeable.listen = "127.0.0.1:0";
  unmakeable.local_socket = directories_.back() + "/no/such/dir/s.sock";
  unmakeable.data_dir = directories_.back() + "/data2";
  absl::StatusOr<std::unique_ptr<Server>> refused =
      Server::Start(std::move(unmakeable));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("--local_socket"));
}

// Asked for them, the samples each target's prediction used are the
// engine's, each with the id the ingester gave its row (the reference
// learned without ids), and the values are those without them.
void ExpectTheEnginesNeighbors(Client& client, const std::string& name,
                               const Model& reference, const Rows& queries) {
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client.Predict(name, queries.x, Rows::kDim,
                     {.interval_level = std::nullopt, .with_neighbors = true});
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  const std::vector<Prediction> expected =
      EnginePredictions(reference, queries, PredictOptions::WithNeighbors());
  ASSERT_EQ(expected.size(), queries.size());
  std::map<std::uint64_t, std::vector<double>> x_of_id;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const v1::Prediction& got = (*predictions)[q];
    ASSERT_EQ(got.used_size(), Rows::kTargets) << name;
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      ASSERT_EQ(got.y(t), expected[q].value[t]) << name << " query " << q;
      const auto& used = got.used(t).neighbors();
      const std::vector<UsedNeighbor>& want = expected[q].used[t];
      ASSERT_EQ(used.size(), want.size()) << name << " query " << q;
      ASSERT_EQ(static_cast<std::uint32_t>(used.size()),
                got.neighbors_per_target(t));
      for (int j = 0; j < used.size(); ++j) {
        EXPECT_EQ(used[j].distance(), want[j].distance);
        EXPECT_EQ(used[j].y(), want[j].y);
        const std::vector<double> x(used[j].x().begin(), used[j].x().end());
        EXPECT_EQ(x, want[j].x);
        EXPECT_NE(used[j].sample_id(), 0u);
        // One id, one sample.
        const auto [seen, added] = x_of_id.emplace(used[j].sample_id(), x);
        EXPECT_EQ(seen->second, x);
      }
    }
  }
}

TEST_F(ServiceTest, IngestedModelsPredictExactlyAsTheEngine) {
  const Rows rows(1500, 1);
  const Rows queries(50, 2);
  for (auto [metric, regressor] :
       {std::pair{v1::METRIC_EUCLIDEAN, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_GRADIENT_WEIGHTS, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_EGOP, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_EGOP, v1::REGRESSOR_AUTO},
        std::pair{v1::METRIC_MLKR, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_GLML, v1::REGRESSOR_KERNEL},
        std::pair{v1::METRIC_AUTO, v1::REGRESSOR_AUTO}}) {
    const std::string name = absl::StrCat(v1::Metric_Name(metric), "-",
                                          v1::Regressor_Name(regressor));
    v1::ModelSpec spec = RowsSpec(metric);
    spec.set_regressor(regressor);
    CreateAndIngest(name, rows, rows.size(), spec);
    const std::shared_ptr<HostedModel> hosted =
        server_->registry().Find(name).value();
    const std::unique_ptr<Model> reference = Reference(spec, rows, rows.size());
    hosted->CatchUp();
    // Both install the background work in flight (an MLKR fit is, at 1,500
    // samples).
    const_cast<Model&>(hosted->model()).FinishRebuilds();
    reference->FinishRebuilds();
    absl::StatusOr<std::vector<v1::Prediction>> predictions =
        client_->Predict(name, queries.x, Rows::kDim);
    ASSERT_TRUE(predictions.ok()) << predictions.status();
    ASSERT_EQ(predictions->size(), queries.size());
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const Prediction expected = *reference->Predict(queries.input(q));
      const v1::Prediction& got = (*predictions)[q];
      for (std::size_t t = 0; t < Rows::kTargets; ++t) {
        ASSERT_EQ(got.y(t), expected.value[t]) << name << " query " << q;
        ASSERT_EQ(got.spread(t), expected.spread[t]);
        ASSERT_EQ(got.neighbors_per_target(t), expected.neighbors[t]);
      }
      EXPECT_EQ(got.neighbors(),
                std::min(expected.neighbors[0], expected.neighbors[1]));
      EXPECT_EQ(got.used_size(), 0);
    }
    // One query a message, as a controller asks (answered on gRPC's thread
    // when nothing is to wait for), as the model stands (min_learned 0) or
    // after every sample: the same answers. More samples than the model
    // holds: OUT_OF_RANGE, so the option reaches the server.
    std::unique_ptr<PredictSession> session = client_->StartPredict(name);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const Prediction expected = *reference->Predict(queries.input(q));
      for (const std::optional<std::uint64_t> min_learned :
           {std::optional<std::uint64_t>(), std::optional<std::uint64_t>(0),
            std::optional<std::uint64_t>(rows.size())}) {
        absl::StatusOr<v1::Prediction> got =
            session->Predict(queries.input(q), {.min_learned = min_learned});
        ASSERT_TRUE(got.ok()) << got.status();
        for (std::size_t t = 0; t < Rows::kTargets; ++t) {
          ASSERT_EQ(got->y(t), expected.value[t]) << name << " query " << q;
          ASSERT_EQ(got->spread(t), expected.spread[t]);
        }
      }
    }
    EXPECT_EQ(
        session->Predict(queries.input(0), {.min_learned = rows.size() + 1})
            .status()
            .code(),
        absl::StatusCode::kOutOfRange);
    ExpectTheEnginesNeighbors(*client_, name, *reference, queries);
    // The metric report is the engine's.
    absl::StatusOr<v1::MetricReport> report = client_->GetMetric(name);
    ASSERT_TRUE(report.ok());
    const MetricReport expected = reference->metric();
    EXPECT_EQ(report->kind(), metric);
    ASSERT_EQ(report->metrics_size(), expected.metrics.size());
    for (int m = 0; m < report->metrics_size(); ++m) {
      const v1::LearnedMetric& got = report->metrics(m);
      EXPECT_EQ(got.kind(), MetricToWire(expected.metrics[m].kind));
      EXPECT_NE(got.kind(), v1::METRIC_AUTO);
      for (std::size_t i = 0; i < Rows::kDim; ++i) {
        EXPECT_EQ(got.weights(i), expected.metrics[m].weights[i]);
      }
      const bool matrix =
          got.kind() == v1::METRIC_EGOP || got.kind() == v1::METRIC_MLKR;
      EXPECT_EQ(got.eigenvalues_size(), matrix ? Rows::kDim : 0);
      // MLKR's map (full rank), fitted by now.
      EXPECT_EQ(got.rank(), got.kind() == v1::METRIC_MLKR ? Rows::kDim : 0);
      EXPECT_EQ(got.map_size(), got.rank() * Rows::kDim);
      for (int k = 0; k < got.map_size(); ++k) {
        EXPECT_EQ(got.map(k), expected.metrics[m].map[k]);
      }
      // GLML: each target's gradient under the Gaussian.
      EXPECT_EQ(got.gradient_size(), got.kind() == v1::METRIC_GLML
                                         ? Rows::kTargets * Rows::kDim
                                         : 0);
      for (int k = 0; k < got.gradient_size(); ++k) {
        EXPECT_EQ(got.gradient(k), expected.metrics[m].gradient[k]);
      }
    }
    // Unset, the linear base is on, except under GLML.
    EXPECT_EQ(client_->GetModel(name)->spec().linear_base(),
              metric != v1::METRIC_GLML);
    // METRIC_AUTO: one metric of each candidate.
    EXPECT_EQ(report->metrics_size(), metric == v1::METRIC_AUTO ? 4 : 1);
    const v1::ModelStats stats = client_->GetModel(name)->stats();
    EXPECT_EQ(stats.num_samples(), rows.size());
    EXPECT_EQ(stats.prequential_nmse(0),
              reference->stats().prequential_nmse[0]);
    // Each target's regressor (REGRESSOR_AUTO's choice).
    ASSERT_EQ(stats.regressor_size(), 2);
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(stats.regressor(t),
                RegressorToWire(reference->stats().regressor[t]));
      EXPECT_NE(stats.regressor(t), v1::REGRESSOR_AUTO);
    }
    // And its metric (METRIC_AUTO's choice).
    ASSERT_EQ(stats.metric_size(), 2);
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(stats.metric(t), MetricToWire(reference->stats().metric[t]));
      EXPECT_NE(stats.metric(t), v1::METRIC_AUTO);
    }
  }
}

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

TEST_F(ServiceTest, AResentIngestBatchIsSkippedByItsIds) {
  const Rows rows(200, 4);
  ASSERT_TRUE(client_->CreateModel("m", RowsSpec()).ok());
  v1::IngestRequest request;
  request.set_model("m");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    v1::Sample& sample = *request.add_samples();
    sample.mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
    sample.mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    sample.set_sample_id(100 + i);
  }
  v1::IngestResponse first;
  ASSERT_TRUE(Ingest(request, &first).ok());
  EXPECT_EQ(first.accepted(), 200u);
  v1::IngestResponse second;
  ASSERT_TRUE(Ingest(request, &second).ok());
  EXPECT_EQ(second.accepted(), 0u);
  EXPECT_EQ(second.duplicates(), 200u);
  EXPECT_EQ(second.num_samples(), 200u);
  EXPECT_EQ(NumSamples("m"), 200u);
}

// A slow producer (a robot logging to the server through Ingest) keeps a
// stream open far longer than the call deadline: the ingester closes each
// stream well before its deadline, so nothing fails.
TEST_F(ServiceTest, AnIngestLongerThanTheDeadlineGoesThrough) {
  const Rows rows(12, 4);
  ASSERT_TRUE(client_->CreateModel("m", RowsSpec()).ok());
  ClientOptions options = client_->options();
  options.timeout = absl::Milliseconds(800);
  options.batch_size = 1;  // every sample is a message
  Client slow_client(options);
  std::unique_ptr<Ingester> ingester = slow_client.StartIngest("m");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok()) << i;
    absl::SleepFor(absl::Milliseconds(150));  // 1.8 s in all
  }
  absl::StatusOr<IngestSummary> summary = ingester->Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 12u);
  EXPECT_EQ(NumSamples("m"), 12u);
}

TEST_F(ServiceTest, BadInputGetsTheRightStatusNamesTheFieldAndChangesNothing) {
  const Rows rows(100, 5);
  CreateAndIngest("m", rows, 50);
  auto expect_error = [&](const v1::IngestRequest& request,
                          absl::StatusCode code, const std::string& message) {
    v1::IngestResponse response;
    const absl::Status status = Ingest(request, &response);
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(status.message(), HasSubstr(message));
    EXPECT_EQ(NumSamples("m"), 50u);
  };
  auto batch = [&](std::size_t n) {
    v1::IngestRequest request;
    request.set_model("m");
    for (std::size_t i = 0; i < n; ++i) {
      v1::Sample& sample = *request.add_samples();
      sample.mutable_x()->Assign(rows.input(50 + i).begin(),
                                 rows.input(50 + i).end());
      sample.mutable_y()->Assign(rows.target(50 + i).begin(),
                                 rows.target(50 + i).end());
    }
    return request;
  };
  v1::IngestRequest wrong_dim = batch(5);
  wrong_dim.mutable_samples(3)->add_x(1.0);
  expect_error(wrong_dim, absl::StatusCode::kInvalidArgument,
               "message 0: samples[3].x: has 4 values");
  v1::IngestRequest nan = batch(5);
  nan.mutable_samples(2)->set_x(1, std::nan(""));
  expect_error(nan, absl::StatusCode::kInvalidArgument,
               "message 0: samples[2].x[1]: NaN");
  v1::IngestRequest inf = batch(5);
  inf.mutable_samples(4)->set_y(0, std::numeric_limits<double>::infinity());
  expect_error(inf, absl::StatusCode::kInvalidArgument, "samples[4].y[0]");
  v1::IngestRequest wrong_targets = batch(2);
  wrong_targets.mutable_samples(1)->clear_y();
  expect_error(wrong_targets, absl::StatusCode::kInvalidArgument,
               "samples[1].y");
  expect_error(batch(0), absl::StatusCode::kInvalidArgument,
               "message 0: samples: empty batch");
  v1::IngestRequest no_model = batch(1);
  no_model.clear_model();
  expect_error(no_model, absl::StatusCode::kInvalidArgument,
               "message 0: model: empty");
  v1::IngestRequest unknown = batch(1);
  unknown.set_model("nope");
  expect_error(unknown, absl::StatusCode::kNotFound, "model 'nope' not found");

  // A bad second message: the first is learned, the error says so.
  {
    grpc::ClientContext context;
    v1::IngestResponse response;
    auto writer = client_->regression().Ingest(&context, &response);
    writer->Write(batch(3));
    writer->Write(nan);
    writer->WritesDone();
    const absl::Status status = FromGrpcStatus(writer->Finish());
    EXPECT_THAT(status.message(),
                HasSubstr("message 1: samples[2].x[1]: NaN (1 earlier "
                          "messages were learned: 3 samples)"));
    EXPECT_EQ(NumSamples("m"), 53u);
  }

  // Model management errors.
  v1::ModelSpec spec = RowsSpec();
  EXPECT_EQ(client_->CreateModel("m", spec).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(client_->CreateModel("", spec).status().message(),
              HasSubstr("name: empty"));
  EXPECT_THAT(client_->CreateModel("a/b", spec).status().message(),
              HasSubstr("name: 'a/b' may contain only"));
  spec.set_input_dim(0);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.input_dim"));
  spec = RowsSpec();
  spec.mutable_tuning()->set_step_ratio(-1);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.step_ratio"));
  spec = RowsSpec();
  spec.mutable_tuning()->set_gradient_estimator(
      static_cast<v1::GradientEstimator>(7));
  EXPECT_EQ(client_->CreateModel("x", spec).status().message(),
            "spec.tuning.gradient_estimator: unknown value 7");
  spec.mutable_tuning()->set_gradient_estimator(
      v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES);
  absl::StatusOr<v1::Model> papers = client_->CreateModel("papers", spec);
  ASSERT_TRUE(papers.ok()) << papers.status();
  EXPECT_EQ(papers->spec().tuning().gradient_estimator(),
            v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES);
  spec = RowsSpec();
  spec.set_linear_base(true);
  spec.mutable_tuning()->set_base_forgetting(0);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.base_forgetting"));
  spec.mutable_tuning()->clear_base_forgetting();
  spec.mutable_tuning()->set_base_ridge(-1);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.base_ridge"));
  spec.mutable_tuning()->clear_base_ridge();
  spec.mutable_tuning()->set_base_relative_ridge(-0.5);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.base_relative_ridge"));
  spec = RowsSpec();
  spec.set_linear_base(true);
  spec.set_input_dim(300);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.linear_base: needs input_dim <= 256"));
  // Unset, the base is on only where the inputs allow it.
  spec.clear_linear_base();
  absl::StatusOr<v1::Model> wide = client_->CreateModel("wide", spec);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_FALSE(wide->spec().linear_base());
  ASSERT_TRUE(client_->DeleteModel("wide").ok());
  spec = RowsSpec();
  spec.add_k_grid(5);
  spec.add_k_grid(3);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.k_grid[1]"));
  spec = RowsSpec();
  spec.set_metric(static_cast<v1::Metric>(42));
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.metric: unknown value 42"));
  EXPECT_EQ(client_->GetModel("x").status().code(),
            absl::StatusCode::kNotFound);
  for (absl::Status status :
       {client_->GetModel("nope").status(), client_->DeleteModel("nope"),
        client_->GetMetric("nope").status(), client_->Refit("nope").status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  }

  // Predictions.
  ASSERT_TRUE(client_->CreateModel("empty", RowsSpec()).ok());
  EXPECT_EQ(client_->Predict("empty", rows.input(0), 3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client_->Predict("nope", rows.input(0), 3).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(client_->Predict("", rows.input(0), 3).status().message(),
              HasSubstr("model: empty"));
  v1::PredictRequest bad_query;
  bad_query.set_model("m");
  bad_query.add_queries()->add_x(1.0);
  grpc::ClientContext context;
  v1::PredictResponse response;
  const absl::Status status = FromGrpcStatus(
      client_->regression().Predict(&context, bad_query, &response));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("queries[0].x: has 1 values"));
}

// Every field whose size makes the server allocate is bounded, and the
// error names the field: counts per message (samples, queries, grids),
// dimensions, and the lengths of names.
// The trailer an overloaded server's refusal carries, or "" (the client
// context of a finished call).
std::string PushbackOf(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find("grpc-retry-pushback-ms");
  return found == trailers.end()
             ? ""
             : std::string(found->second.data(), found->second.size());
}

// A refusal for overload: RESOURCE_EXHAUSTED saying `text`, with the
// standard retry trailer.
void ExpectOverloaded(const absl::Status& refused,
                      const grpc::ClientContext& context,
                      absl::string_view text) {
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()), HasSubstr(std::string(text)));
  EXPECT_EQ(PushbackOf(context), "100");
}

// Writes `request` on a bidi stream that must end without answering it:
// the status it ends with.
template <class Response, class Stream, class Request>
absl::Status RefusedAtOnce(Stream& stream, const Request& request) {
  Response response;
  EXPECT_TRUE(stream.Write(request));
  EXPECT_FALSE(stream.Read(&response));
  return FromGrpcStatus(stream.Finish());
}

// Past the limits on queued samples and predictions in flight, each kind
// of call is refused at once with RESOURCE_EXHAUSTED naming the limit and
// the standard retry trailer, and changes nothing; what was admitted goes
// on and is learned.
TEST_F(ServiceTest, OverloadIsRefusedAtOnceWithTheLimitNamedAndARetryHint) {
  ServerOptions options;
  options.limits.max_queued_samples_per_model = 10;
  options.limits.max_queued_samples = 15;
  options.limits.max_predictions_in_flight_per_model = 1;
  options.limits.max_predictions_in_flight = 2;
  StartServer(options);
  const Rows rows(100, 5);
  for (const char* name : {"m", "n", "o"}) CreateAndIngest(name, rows, 20);
  std::shared_ptr<HostedModel> m = *server_->registry().Find("m");
  std::shared_ptr<HostedModel> n = *server_->registry().Find("n");

  // m's write queue is held: a batch of 8 is admitted and waits there.
  HeldWrites held(*m);
  std::thread admitted = AdmitHeldBatch(rows, *m);
  ASSERT_EQ(m->queued_samples().held(), 8u);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);

  {  // 8 more for m would pass its 10
    grpc::ClientContext context;
    const absl::Status refused = IngestIn(context, BatchOf(rows, "m", 28));
    ExpectOverloaded(
        refused, context,
        "message 0: overloaded: 8 samples queued for model 'm', 8 more "
        "would pass 10 (--max-queued-samples-per-model); retry in 100 "
        "ms");
  }
  {  // 8 for n pass n's limit, not the server's 15
    grpc::ClientContext context;
    const absl::Status refused = IngestIn(context, BatchOf(rows, "n", 20));
    ExpectOverloaded(refused, context,
                     "8 samples queued on the server, 8 more would pass "
                     "15 (--max-queued-samples)");
  }
  v1::LearnRequest learn;
  learn.set_model("m");
  *learn.mutable_sample() = BatchOf(rows, "m", 40).samples(0);
  {  // the server's limit refuses a Learn sample (n's share takes the rest)
    absl::StatusOr<AdmissionTicket> rest =
        server_->registry().AdmitSamples(*n, 7);
    ASSERT_TRUE(rest.ok());
    grpc::ClientContext context;
    auto stream = client_->regression().Learn(&context);
    const absl::Status refused =
        RefusedAtOnce<v1::LearnResponse>(*stream, learn);
    ExpectOverloaded(refused, context,
                     "message 0: overloaded: 15 samples queued on the server, "
                     "1 more would pass 15 (--max-queued-samples)");
  }
  {  // /metrics shows what the gates hold and what each refused
    const std::string metrics = server_->RenderMetrics();
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_queued_samples 8\n"));
    EXPECT_THAT(metrics,
                HasSubstr("\nstreamreg_model_queued_samples{model=\"m\"} 8\n"));
    EXPECT_THAT(metrics,
                HasSubstr("\nstreamreg_model_queued_samples{model=\"n\"} 0\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_overload_refusals_total{limit="
                                   "\"max_queued_samples\"} 2\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_model_overload_refusals_total{"
                                   "model=\"m\"} 1\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_model_overload_refusals_total{"
                                   "model=\"n\"} 0\n"));
  }
  // With m's own share full, a Learn sample on m is still admitted (a
  // stream holds one at a time), and is learned ahead of the batch queued
  // before it: sequence 21 (answered once durable, so the answer says).
  absl::StatusOr<AdmissionTicket> m_full =
      server_->registry().AdmitSamples(*m, 2);
  ASSERT_TRUE(m_full.ok());
  std::thread learner([&] {
    grpc::ClientContext context;
    auto stream = client_->regression().Learn(&context);
    v1::LearnResponse response;
    v1::LearnRequest cautious = learn;
    cautious.set_answer_when_durable(true);
    EXPECT_TRUE(stream->Write(cautious));
    EXPECT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.sequence(), 21u);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  });
  while (server_->registry().queued_samples().held() < 11 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(server_->registry().queued_samples().held(), 11u);
  m_full->Release();
  held.Release();
  admitted.join();
  learner.join();
  // The admitted batch and sample, nothing refused.
  EXPECT_EQ(NumSamples("m"), 29u);
  EXPECT_EQ(NumSamples("n"), 20u);
  EXPECT_EQ(m->queued_samples().held(), 0u);
  EXPECT_EQ(server_->registry().queued_samples().held(), 0u);

  // Predictions in flight, held as a Predict being answered holds them:
  // one on m, and m refuses the next; n answers (the server's 2 not
  // passed); with one on n as well, the server refuses one on o.
  auto predict = [this, &rows](const std::string& model,
                               grpc::ClientContext& context) {
    v1::PredictRequest request;
    request.set_model(model);
    request.add_queries()->mutable_x()->Assign(rows.input(0).begin(),
                                               rows.input(0).end());
    v1::PredictResponse response;
    return FromGrpcStatus(
        client_->regression().Predict(&context, request, &response));
  };
  absl::StatusOr<AdmissionTicket> on_m =
      server_->registry().AdmitPrediction(*m);
  ASSERT_TRUE(on_m.ok());
  {
    grpc::ClientContext context;
    const absl::Status refused = predict("m", context);
    ExpectOverloaded(
        refused, context,
        "overloaded: 1 reads in flight on model 'm', 1 more would "
        "pass 1 (--max-predictions-in-flight-per-model); retry in 100 "
        "ms");
  }
  auto get_model = [this](const std::string& model,
                          grpc::ClientContext& context) {
    v1::GetModelRequest request;
    request.set_name(model);
    v1::Model response;
    return FromGrpcStatus(
        client_->models().GetModel(&context, request, &response));
  };
  {  // a read of m's figures counts in m's share too
    grpc::ClientContext context;
    ExpectOverloaded(get_model("m", context), context,
                     "overloaded: 1 reads in flight on model 'm', 1 "
                     "more would pass 1 "
                     "(--max-predictions-in-flight-per-model)");
  }
  {
    grpc::ClientContext context;
    EXPECT_TRUE(predict("n", context).ok());
  }
  absl::StatusOr<AdmissionTicket> on_n =
      server_->registry().AdmitPrediction(*n);
  ASSERT_TRUE(on_n.ok());
  {
    grpc::ClientContext context;
    auto stream = client_->regression().PredictStream(&context);
    v1::PredictRequest request;
    request.set_model("o");
    request.add_queries()->mutable_x()->Assign(rows.input(0).begin(),
                                               rows.input(0).end());
    const absl::Status refused =
        RefusedAtOnce<v1::PredictResponse>(*stream, request);
    ExpectOverloaded(refused, context,
                     "message 0: overloaded: 2 reads in flight on the "
                     "server, 1 more would pass 2 "
                     "(--max-predictions-in-flight)");
  }
  {  // model reads that wait for learning count there too
    grpc::ClientContext context;
    ExpectOverloaded(get_model("o", context), context,
                     "overloaded: 2 reads in flight on the server, 1 more "
                     "would pass 2 (--max-predictions-in-flight)");
  }
  {
    const std::string metrics = server_->RenderMetrics();
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_reads_in_flight 2\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_model_predictions_in_flight{"
                                   "model=\"m\"} 1\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_overload_refusals_total{limit="
                                   "\"max_predictions_in_flight\"} 2\n"));
  }
  on_m->Release();
  on_n->Release();
  {
    grpc::ClientContext context;
    EXPECT_TRUE(predict("o", context).ok());
  }
  EXPECT_EQ(server_->registry().predictions_in_flight().held(), 0u);
}

TEST_F(ServiceTest, QueuedSamplesAreAlsoLimitedToWhatTheModelLearnsInADelay) {
  ServerOptions options;
  options.limits.max_queue_delay = absl::Nanoseconds(1);  // one sample's
  StartServer(options);
  const Rows rows(100, 5);
  CreateAndIngest("m", rows, 20);
  std::shared_ptr<HostedModel> m = *server_->registry().Find("m");
  m->CatchUp();  // learned, so its rate is known
  EXPECT_EQ(m->queued_samples().paced_limit(), 1u);

  // m's write queue is held: a batch of 8 is admitted alone and waits.
  HeldWrites held(*m);
  std::thread admitted = AdmitHeldBatch(rows, *m);
  ASSERT_EQ(m->queued_samples().held(), 8u);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  {  // far below the count limit (8,192), past what m learns in 1 ns
    grpc::ClientContext context;
    const absl::Status refused = IngestIn(context, BatchOf(rows, "m", 28));
    ExpectOverloaded(refused, context,
                     "message 0: overloaded: 8 samples queued for model 'm', "
                     "8 more would pass 1 (what it learns in 1ns, "
                     "--max-queue-delay); retry in 100 ms");
  }
  // The client library's Ingester, refused the same way, waits for the
  // server's retry hint (100 ms) and sends again: by then the queue is free.
  std::thread retried([&] {
    std::unique_ptr<Ingester> ingester = client_->StartIngest("m");
    for (std::size_t i = 28; i < 36; ++i) {
      ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
    }
    absl::StatusOr<IngestSummary> summary = ingester->Finish();
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->accepted, 8u);
    EXPECT_EQ(summary->retries, 1u);
  });
  while (m->queued_samples().refused() < 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(m->queued_samples().refused(), 2u);
  held.Release();
  admitted.join();
  retried.join();
  EXPECT_EQ(NumSamples("m"), 36u);
}

TEST_F(ServiceTest, EveryFieldThatAllocatesIsBoundedAndNamedWhenOver) {
  const Rows rows(100, 5);
  CreateAndIngest("m", rows, 50);
  auto message_of = [](const absl::Status& status) {
    return std::string(status.message());
  };
  v1::IngestRequest too_many;
  too_many.set_model("m");
  for (std::size_t i = 0; i <= kMaxSamplesPerMessage; ++i) {
    v1::Sample& sample = *too_many.add_samples();
    sample.mutable_x()->Assign(rows.input(i % 50).begin(),
                               rows.input(i % 50).end());
    sample.mutable_y()->Assign(rows.target(i % 50).begin(),
                               rows.target(i % 50).end());
  }
  v1::IngestResponse ingested;
  const absl::Status ingest = Ingest(too_many, &ingested);
  EXPECT_EQ(ingest.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(message_of(ingest),
            "message 0: samples: 65537 in one message; at most 65536");
  EXPECT_EQ(NumSamples("m"), 50u);

  v1::PredictRequest queries;
  queries.set_model("m");
  for (std::size_t q = 0; q <= kMaxQueriesPerRequest; ++q) {
    queries.add_queries()->mutable_x()->Assign(rows.input(q % 50).begin(),
                                               rows.input(q % 50).end());
  }
  grpc::ClientContext context;
  v1::PredictResponse predicted;
  const absl::Status predict = FromGrpcStatus(
      client_->regression().Predict(&context, queries, &predicted));
  EXPECT_EQ(predict.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(message_of(predict),
            "queries: 65537 in one message; at most 65536");

  const std::string long_name(129, 'a');
  v1::ModelSpec spec = RowsSpec();
  spec.set_target_names(1, long_name);
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.target_names[1]: 129 bytes; at most 128");
  spec = RowsSpec();
  for (const char* name : {"shoulder", "elbow", ""}) spec.add_input_names(name);
  spec.set_input_names(2, long_name);
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.input_names[2]: 129 bytes; at most 128");
  spec = RowsSpec();
  spec.set_input_dim(4097);
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.input_dim: must be in [1, 4096], got 4097");
  spec = RowsSpec();
  for (int t = 2; t <= 256; ++t) spec.add_target_names(absl::StrCat("t", t));
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.target_names: need 1 to 256 targets, got 257");
  spec = RowsSpec();
  for (int k = 1; k <= 65; ++k) spec.add_k_grid(static_cast<std::uint32_t>(k));
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.k_grid: 65 values; at most 64");
  EXPECT_EQ(message_of(client_->CreateModel(long_name, RowsSpec()).status()),
            "name: 129 characters (at most 128)");
  v1::ListModelsRequest list;
  list.set_page_token(long_name);
  grpc::ClientContext list_context;
  v1::ListModelsResponse listed;
  EXPECT_EQ(message_of(FromGrpcStatus(
                client_->models().ListModels(&list_context, list, &listed))),
            "page_token: 129 characters (at most 128)");
  // Nothing was created.
  absl::StatusOr<std::vector<v1::Model>> models = client_->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(models->size(), 1u);
}

TEST_F(ServiceTest, LimitsAreResourceExhausted) {
  ServerOptions options;
  options.limits.max_models = 2;
  options.limits.max_samples_per_model = 120;
  options.max_message_bytes = 64 << 10;
  StartServer(options);
  const Rows rows(5000, 6);
  CreateAndIngest("a", rows, 100);
  ASSERT_TRUE(client_->CreateModel("b", RowsSpec()).ok());
  EXPECT_EQ(client_->CreateModel("c", RowsSpec()).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(client_->DeleteModel("b").ok());
  v1::ModelSpec windowed = RowsSpec();
  windowed.mutable_capacity()->set_policy(v1::CAPACITY_POLICY_WINDOW);
  windowed.mutable_capacity()->set_limit(121);
  EXPECT_THAT(client_->CreateModel("w", windowed).status().message(),
              HasSubstr("spec.capacity.limit: 121"));

  std::unique_ptr<Ingester> ingester = client_->StartIngest("a");
  for (std::size_t i = 100; i < 130; ++i) {
    (void)ingester->Add(rows.input(i), rows.target(i));
  }
  absl::StatusOr<IngestSummary> over = ingester->Finish();
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("--max-samples-per-model"));
  EXPECT_EQ(NumSamples("a"), 100u);

  // A message over --max-message-bytes (5000 queries of 3 doubles).
  v1::PredictRequest big;
  big.set_model("a");
  for (std::size_t q = 0; q < rows.size(); ++q) {
    big.add_queries()->mutable_x()->Assign(rows.input(q).begin(),
                                           rows.input(q).end());
  }
  grpc::ClientContext context;
  v1::PredictResponse response;
  const grpc::Status status =
      client_->regression().Predict(&context, big, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
}

TEST_F(ServiceTest, AFullOrReadOnlyDiskIsReportedAndLosesNothing) {
  FaultInjectingFileSystem file_system;
  ServerOptions options;
  options.storage.file_system = &file_system;
  StartServer(options);
  const Rows rows(400, 6);
  CreateAndIngest("a", rows, 200);

  file_system.append_error = ENOSPC;
  v1::IngestRequest request;
  request.set_model("a");
  for (std::size_t i = 200; i < 250; ++i) {
    v1::Sample* sample = request.add_samples();
    sample->mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
    sample->mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    sample->set_sample_id(9000 + i);
  }
  v1::IngestResponse response;
  const absl::Status full = Ingest(request, &response);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("No space left on device"));
  EXPECT_EQ(NumSamples("a"), 200u);
  file_system.append_error = 0;
  ASSERT_TRUE(Ingest(request, &response).ok());
  EXPECT_EQ(NumSamples("a"), 250u);

  file_system.create_error = EROFS;
  const absl::Status read_only = client_->CreateModel("b", RowsSpec()).status();
  EXPECT_EQ(read_only.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read_only.message(), HasSubstr("Read-only file system"));
  file_system.create_error = 0;
  server_.reset();  // before the file system it uses
}

TEST_F(ServiceTest, ARestartedServerServesExactlyWhatItAcknowledged) {
  ServerOptions options;
  options.take_over = TakeOverRule::kFixedCount;  // as Reference
  const std::string data_dir = FreshDirectory();
  directories_.push_back(data_dir);
  const Rows rows(900, 6);
  // With a linear base: its state is in the snapshots too.
  v1::ModelSpec spec = RowsSpec(v1::METRIC_EGOP);
  spec.set_linear_base(true);
  spec.mutable_tuning()->set_base_forgetting(0.99);
  auto start = [&] {
    client_.reset();
    server_.reset();  // a clean shutdown: snapshots what changed
    ASSERT_NO_FATAL_FAILURE(StartTestServer(options, data_dir, &server_));
    ClientOptions client_options;
    client_options.address = server_->address();
    client_ = std::make_unique<Client>(client_options);
  };
  start();
  CreateAndIngest("m", rows, 600, spec);
  start();
  absl::StatusOr<v1::Model> restarted = client_->GetModel("m");
  ASSERT_TRUE(restarted.ok());
  EXPECT_TRUE(restarted->spec().linear_base());
  EXPECT_EQ(restarted->spec().tuning().base_forgetting(), 0.99);
  std::unique_ptr<Ingester> ingester = client_->StartIngest("m");
  for (std::size_t i = 600; i < 900; ++i) {
    ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
  }
  ASSERT_TRUE(ingester->Finish().ok());
  start();
  std::unique_ptr<Model> reference = Reference(spec, rows, 900);
  absl::StatusOr<std::vector<v1::Prediction>> got =
      client_->Predict("m", rows.inputs(0, 50), Rows::kDim);
  ASSERT_TRUE(got.ok()) << got.status();
  for (std::size_t q = 0; q < 50; ++q) {
    const Prediction expected = *reference->Predict(rows.input(q));
    for (std::size_t t = 0; t < expected.value.size(); ++t) {
      EXPECT_EQ((*got)[q].y(t), expected.value[t]) << "query " << q;
    }
  }
  EXPECT_EQ(NumSamples("m"), 900u);
}

TEST_F(ServiceTest, RefitStreamsProgressAndEndsWithTheNewStats) {
  const Rows rows(800, 7);
  CreateAndIngest("m", rows, rows.size());
  std::vector<std::uint64_t> done;
  absl::StatusOr<v1::ModelStats> stats =
      client_->Refit("m", [&](std::uint64_t d, std::uint64_t total) {
        EXPECT_EQ(total, rows.size());
        done.push_back(d);
      });
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_FALSE(done.empty());
  EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
  EXPECT_EQ(done.back(), rows.size());
  EXPECT_EQ(stats->num_samples(), rows.size());
  // The refitted metric is the engine's batch refit of the same samples.
  std::unique_ptr<Model> reference = Reference(RowsSpec(), rows, rows.size());
  ASSERT_TRUE(reference->Refit().ok());
  const v1::MetricReport report = *client_->GetMetric("m");
  for (std::size_t i = 0; i < Rows::kDim; ++i) {
    EXPECT_EQ(report.metrics(0).weights(i),
              reference->metric().metrics[0].weights[i]);
  }
}

// 8 streams at once on two models — 4 ingesting, 2 predicting, 2 learning —
// while the models pass the size where indexes are rebuilt in the
// background. Every call succeeds, every sample is learned once.
TEST_F(ServiceTest, ConcurrentStreamsDuringBackgroundRebuilds) {
  const Rows rows(12000, 8);
  // A tight drift tolerance: the metrics move little past 2,100 samples,
  // and the indexes must be rebuilt while the streams run.
  v1::ModelSpec spec = RowsSpec();
  spec.mutable_tuning()->set_drift_tolerance(0.002);
  CreateAndIngest("a", rows, 2100, spec);
  CreateAndIngest("b", rows, 2100, spec);
  const std::uint64_t rebuilds_before =
      client_->GetModel("a")->stats().index_rebuilds() +
      client_->GetModel("b")->stats().index_rebuilds();
  std::atomic<int> failures = 0;
  std::atomic<bool> writers_done = false;
  std::atomic<std::uint64_t> predictions = 0;
  std::atomic<std::uint64_t> duplicates_answered = 0;
  std::vector<std::thread> threads;
  for (int s = 0; s < 4; ++s) {  // 4 ingest streams, 2 per model
    threads.emplace_back([&, s] {
      Client client(client_->options());
      std::unique_ptr<Ingester> ingester =
          client.StartIngest(s % 2 == 0 ? "a" : "b");
      const std::size_t begin = 2100 + (s / 2) * 4000;
      for (std::size_t i = begin; i < begin + 4000; ++i) {
        if (!ingester->Add(rows.input(i), rows.target(i)).ok()) ++failures;
      }
      absl::StatusOr<IngestSummary> summary = ingester->Finish();
      if (!summary.ok()) {
        ++failures;
      } else {
        // A batch resent after a deadline or an overload refusal (a slow
        // build on a busy machine) is answered as duplicates.
        duplicates_answered += summary->duplicates;
      }
    });
  }
  for (int s = 0; s < 2; ++s) {  // 2 Learn streams
    threads.emplace_back([&, s] {
      Client client(client_->options());
      std::unique_ptr<LearnSession> session =
          client.StartLearn(s == 0 ? "a" : "b");
      for (std::size_t i = 10100; i < 10400; ++i) {
        if (!session->Learn(rows.input(i), rows.target(i)).ok()) ++failures;
      }
      if (!session->Close().ok()) ++failures;
    });
  }
  for (int s = 0; s < 2; ++s) {  // 2 PredictStreams, until the writers end
    threads.emplace_back([&, s] {
      Client client(client_->options());
      std::unique_ptr<PredictSession> session =
          client.StartPredict(s == 0 ? "a" : "b");
      for (std::size_t q = 0; !writers_done.load(); ++q) {
        absl::StatusOr<v1::Prediction> p =
            session->Predict(rows.input(q % rows.size()));
        if (!p.ok() || p->y_size() != 2 || !std::isfinite(p->y(0))) {
          ++failures;
        }
        ++predictions;
      }
      if (!session->Close().ok()) ++failures;
    });
  }
  for (std::size_t t = 0; t < 6; ++t) threads[t].join();
  writers_done = true;
  for (std::size_t t = 6; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(predictions.load(), 0u);
  const v1::ModelStats a = client_->GetModel("a")->stats();
  const v1::ModelStats b = client_->GetModel("b")->stats();
  EXPECT_EQ(a.num_samples(), 2100u + 8000u + 300u);
  EXPECT_EQ(b.num_samples(), 2100u + 8000u + 300u);
  // Learned once each: the only duplicates are the resent ones, each
  // answered as such.
  EXPECT_EQ(a.duplicate_samples() + b.duplicate_samples(),
            duplicates_answered.load());
  EXPECT_GT(a.index_rebuilds() + b.index_rebuilds(), rebuilds_before);
}

TEST_F(ServiceTest, DeadlinesAndCancellation) {
  const Rows rows(300, 9);
  CreateAndIngest("m", rows, 200);
  {  // An expired deadline.
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() -
                         std::chrono::seconds(1));
    v1::GetModelRequest request;
    request.set_name("m");
    v1::Model model;
    EXPECT_EQ(
        client_->models().GetModel(&context, request, &model).error_code(),
        grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  {  // An Ingest stream left open past its deadline: what was read before
     // is learned, the call ends with DEADLINE_EXCEEDED.
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(300));
    v1::IngestResponse response;
    auto writer = client_->regression().Ingest(&context, &response);
    v1::IngestRequest request;
    request.set_model("m");
    for (std::size_t i = 200; i < 210; ++i) {
      v1::Sample& sample = *request.add_samples();
      sample.mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
      sample.mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    }
    ASSERT_TRUE(writer->Write(request));
    absl::SleepFor(absl::Milliseconds(500));
    EXPECT_EQ(writer->Finish().error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_EQ(NumSamples("m"), 210u);
  }
  {  // A Learn stream cancelled by the client mid-way: what was answered
     // durable stays (answered first, a sample may be dropped instead: the
     // watermark had not covered it, and the client resends it).
    grpc::ClientContext context;
    auto stream = client_->regression().Learn(&context);
    v1::LearnRequest request;
    request.set_model("m");
    request.set_answer_when_durable(true);
    request.mutable_sample()->mutable_x()->Assign(rows.input(210).begin(),
                                                  rows.input(210).end());
    request.mutable_sample()->mutable_y()->Assign(rows.target(210).begin(),
                                                  rows.target(210).end());
    v1::LearnResponse response;
    ASSERT_TRUE(stream->Write(request));
    ASSERT_TRUE(stream->Read(&response));
    context.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server goes on serving.
  EXPECT_EQ(NumSamples("m"), 211u);
  EXPECT_TRUE(client_->Predict("m", rows.input(0), 3).ok());
}

TEST_F(ServiceTest, ShutdownDrainsAnOpenStreamAndReportsNotServing) {
  ServerOptions options;
  options.drain_delay = absl::Milliseconds(400);
  StartServer(options);
  const Rows rows(100, 10);
  CreateAndIngest("m", rows, 50);
  ASSERT_EQ(*client_->Health(), "SERVING");
  std::unique_ptr<LearnSession> session = client_->StartLearn("m");
  ASSERT_TRUE(session->Learn(rows.input(50), rows.target(50)).ok());

  std::thread shutdown([&] { server_->Shutdown(); });
  absl::SleepFor(absl::Milliseconds(150));
  // Draining: health says so, and the open stream is still served.
  EXPECT_EQ(*client_->Health(), "NOT_SERVING");
  EXPECT_TRUE(session->Learn(rows.input(51), rows.target(51)).ok());
  shutdown.join();  // the open stream is cancelled after drain_timeout
  std::shared_ptr<HostedModel> hosted = server_->registry().Find("m").value();
  hosted->CatchUp();
  EXPECT_EQ(hosted->model().samples_seen(), 52u);
  ClientOptions impatient = client_->options();
  impatient.retry.max_attempts = 1;
  impatient.timeout = absl::Seconds(1);
  Client after(impatient);
  EXPECT_FALSE(after.GetModel("m").ok());
}

// A read of figures waits for learning early enough in its call that the
// answer arrives before the deadline; with none, until learned.
TEST(FiguresAnswerByTest, AnswersBeforeTheDeadline) {
  const absl::Time now = absl::FromUnixSeconds(1'000'000);
  EXPECT_EQ(FiguresAnswerBy(absl::InfiniteFuture(), now),
            absl::InfiniteFuture());
  EXPECT_EQ(FiguresAnswerBy(now + absl::Minutes(1), now),
            now + absl::Seconds(48));
  EXPECT_EQ(FiguresAnswerBy(now + absl::Seconds(1), now),
            now + absl::Milliseconds(800));
  EXPECT_EQ(FiguresAnswerBy(now - absl::Seconds(1), now), now);
}

}  // namespace
}  // namespace streamreg
