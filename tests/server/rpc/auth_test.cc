// Bearer-token access control end to end, in process: a server with a
// token table, clients presenting tokens (or none, or wrong ones), every
// RPC against the permission it needs, a replaced table (what SIGHUP does)
// taking effect on new calls and on streams already open.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "server/rpc/server.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

constexpr char kOps[] = "ops-token-0123456789";
constexpr char kRobot[] = "robot-token-0123456789";
constexpr char kViewer[] = "viewer-token-0123456789";
constexpr char kCreator[] = "creator-token-0123456789";

constexpr char kTable[] =
    "ops      ops-token-0123456789      read,write,admin  *\n"
    "robot    robot-token-0123456789    read,write        arm1.\n"
    "viewer   viewer-token-0123456789   read              arm1.\n"
    "creator  creator-token-0123456789  admin             arm1.\n";

AccessTokens Tokens(const std::string& text) {
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Parse(text, "test");
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  return *std::move(tokens);
}

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = FreshDirectory();
    ServerOptions options;
    options.drain_timeout = absl::Seconds(1);
    options.access_tokens = Tokens(kTable);
    ASSERT_NO_FATAL_FAILURE(
        StartTestServer(std::move(options), scratch_ + "/data", &server_));
    ASSERT_TRUE(As(kOps)->CreateModel("arm1.torque", RowsSpec()).ok());
    ASSERT_TRUE(As(kOps)->CreateModel("arm2.torque", RowsSpec()).ok());
    ASSERT_TRUE(Ingest(kOps, "arm1.torque", 50).ok());
    ASSERT_TRUE(Ingest(kOps, "arm2.torque", 50).ok());
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(scratch_);
  }

  // A client presenting `token` (empty: none).
  std::unique_ptr<Client> As(const std::string& token) {
    ClientOptions options = TestClientOptions(*server_);
    options.bearer_token = token;
    return std::make_unique<Client>(options);
  }

  absl::Status Ingest(const std::string& token, const std::string& model,
                      std::size_t n) {
    std::unique_ptr<Client> client = As(token);
    std::unique_ptr<Ingester> ingester = client->StartIngest(model);
    const Rows rows(n, 11);
    for (std::size_t i = 0; i < n; ++i) {
      if (absl::Status status = ingester->Add(rows.input(i), rows.target(i));
          !status.ok()) {
        return status;
      }
    }
    return ingester->Finish().status();
  }

  absl::StatusCode PredictCode(const std::string& token,
                               const std::string& model) {
    const Rows rows(2, 5);
    return As(token)
        ->Predict(model, rows.inputs(0, 2), Rows::kDim)
        .status()
        .code();
  }

  std::uint64_t NumSamples(const std::string& model) {
    absl::StatusOr<v1::Model> found = As(kOps)->GetModel(model);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? found->stats().num_samples() : 0;
  }

  std::string scratch_;
  std::unique_ptr<Server> server_;
};

TEST_F(AuthTest, NoTokenOrAnUnknownOneIsUnauthenticatedButHealthIsOpen) {
  for (const std::string& token :
       {std::string(), std::string("guess-0123456789abcdef"),
        std::string(kOps) + "x"}) {
    std::unique_ptr<Client> client = As(token);
    EXPECT_EQ(client->ListModels().status().code(),
              absl::StatusCode::kUnauthenticated)
        << token;
    EXPECT_EQ(client->GetModel("arm1.torque").status().code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(PredictCode(token, "arm1.torque"),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(Ingest(token, "arm1.torque", 5).code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(client->DeleteModel("arm1.torque").code(),
              absl::StatusCode::kUnauthenticated);
    grpc::ClientContext ping_context;
    v1::PingResponse pong;
    EXPECT_EQ(client->regression()
                  .Ping(&ping_context, v1::PingRequest(), &pong)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    absl::StatusOr<std::string> health = client->Health();
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, "SERVING");
  }
  EXPECT_EQ(NumSamples("arm1.torque"), 50u);
  EXPECT_EQ(As(kOps)->ListModels()->size(), 2u);
}

// Each method of both services, found through their descriptors, refuses
// a call without a token: an RPC added later fails here until its call is
// in this table (and so shown to check the token).
TEST_F(AuthTest, NoMethodOfEitherServiceAnswersWithoutAToken) {
  std::unique_ptr<Client> client = As("");
  v1::RegressionService::Stub& regression = client->regression();
  v1::ModelService::Stub& models = client->models();
  auto unary = [](auto call) {
    grpc::ClientContext context;
    return call(&context);
  };
  // A stream that sends one request (for `model`) and reads to its end.
  auto stream = [](auto open, auto request, auto response) {
    grpc::ClientContext context;
    auto call = open(&context);
    request.set_model("arm1.torque");
    call->Write(request);
    call->WritesDone();
    while (call->Read(&response)) {
    }
    return call->Finish();
  };
  const std::map<std::string, std::function<grpc::Status()>> calls = {
      {"streamreg.v1.RegressionService.Ingest",
       [&] {
         grpc::ClientContext context;
         v1::IngestResponse response;
         auto call = regression.Ingest(&context, &response);
         v1::IngestRequest request;
         request.set_model("arm1.torque");
         call->Write(request);
         call->WritesDone();
         return call->Finish();
       }},
      {"streamreg.v1.RegressionService.Learn",
       [&] {
         return stream([&](auto* c) { return regression.Learn(c); },
                       v1::LearnRequest(), v1::LearnResponse());
       }},
      {"streamreg.v1.RegressionService.Predict",
       [&] {
         return unary([&](auto* c) {
           v1::PredictRequest request;
           request.set_model("arm1.torque");
           v1::PredictResponse response;
           return regression.Predict(c, request, &response);
         });
       }},
      {"streamreg.v1.RegressionService.PredictStream",
       [&] {
         return stream([&](auto* c) { return regression.PredictStream(c); },
                       v1::PredictRequest(), v1::PredictResponse());
       }},
      {"streamreg.v1.RegressionService.Ping",
       [&] {
         return unary([&](auto* c) {
           v1::PingResponse response;
           return regression.Ping(c, v1::PingRequest(), &response);
         });
       }},
      {"streamreg.v1.RegressionService.PingStream",
       [&] {
         grpc::ClientContext context;
         auto call = regression.PingStream(&context);
         call->Write(v1::PingRequest());
         call->WritesDone();
         v1::PingResponse response;
         while (call->Read(&response)) {
         }
         return call->Finish();
       }},
      {"streamreg.v1.ModelService.CreateModel",
       [&] {
         return unary([&](auto* c) {
           v1::CreateModelRequest request;
           request.set_name("arm1.new");
           *request.mutable_spec() = RowsSpec();
           v1::Model response;
           return models.CreateModel(c, request, &response);
         });
       }},
      {"streamreg.v1.ModelService.GetModel",
       [&] {
         return unary([&](auto* c) {
           v1::GetModelRequest request;
           request.set_name("arm1.torque");
           v1::Model response;
           return models.GetModel(c, request, &response);
         });
       }},
      {"streamreg.v1.ModelService.ListModels",
       [&] {
         return unary([&](auto* c) {
           v1::ListModelsResponse response;
           return models.ListModels(c, v1::ListModelsRequest(), &response);
         });
       }},
      {"streamreg.v1.ModelService.DeleteModel",
       [&] {
         return unary([&](auto* c) {
           v1::DeleteModelRequest request;
           request.set_name("arm1.torque");
           v1::DeleteModelResponse response;
           return models.DeleteModel(c, request, &response);
         });
       }},
      {"streamreg.v1.ModelService.GetMetric",
       [&] {
         return unary([&](auto* c) {
           v1::GetMetricRequest request;
           request.set_name("arm1.torque");
           v1::MetricReport response;
           return models.GetMetric(c, request, &response);
         });
       }},
      {"streamreg.v1.ModelService.Refit",
       [&] {
         grpc::ClientContext context;
         v1::RefitRequest request;
         request.set_name("arm1.torque");
         auto call = models.Refit(&context, request);
         v1::RefitProgress progress;
         while (call->Read(&progress)) {
         }
         return call->Finish();
       }},
  };
  std::set<std::string> methods;
  for (const char* name : {v1::RegressionService::service_full_name(),
                           v1::ModelService::service_full_name()}) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            name);
    ASSERT_NE(service, nullptr) << name;
    for (int m = 0; m < service->method_count(); ++m) {
      methods.insert(service->method(m)->full_name());
    }
  }
  for (const std::string& method : methods) {
    const auto call = calls.find(method);
    if (call == calls.end()) {
      ADD_FAILURE() << method << ": not in this test's table";
      continue;
    }
    EXPECT_EQ(call->second().error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << method;
  }
  EXPECT_EQ(calls.size(), methods.size());
  // Nothing changed: the model is there with its samples, none created.
  EXPECT_EQ(NumSamples("arm1.torque"), 50u);
  EXPECT_EQ(As(kOps)->ListModels()->size(), 2u);
}

TEST_F(AuthTest, AMalformedAuthorizationIsUnauthenticated) {
  for (const char* value : {"Basic b3BzOnRva2Vu", "Bearer ", kOps}) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", value);
    v1::GetModelRequest request;
    request.set_name("arm1.torque");
    v1::Model model;
    const grpc::Status status =
        As("")->models().GetModel(&context, request, &model);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << value;
    EXPECT_NE(status.error_message().find("Bearer"), std::string::npos);
  }
}

TEST_F(AuthTest, EachCallNeedsItsPermissionOnTheModel) {
  // read: predict and get, not ingest, learn, create, delete or refit.
  EXPECT_EQ(PredictCode(kViewer, "arm1.torque"), absl::StatusCode::kOk);
  EXPECT_TRUE(As(kViewer)->GetModel("arm1.torque").ok());
  EXPECT_TRUE(As(kViewer)->GetMetric("arm1.torque").ok());
  EXPECT_EQ(Ingest(kViewer, "arm1.torque", 5).code(),
            absl::StatusCode::kPermissionDenied);
  std::unique_ptr<Client> viewer = As(kViewer);
  std::unique_ptr<LearnSession> learn = viewer->StartLearn("arm1.torque");
  const Rows rows(1, 3);
  EXPECT_EQ(learn->Learn(rows.input(0), rows.target(0)).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(viewer->CreateModel("arm1.new", RowsSpec()).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(viewer->DeleteModel("arm1.torque").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(viewer->Refit("arm1.torque").status().code(),
            absl::StatusCode::kPermissionDenied);
  // write (+read): ingest, learn and predict, not create or delete.
  EXPECT_TRUE(Ingest(kRobot, "arm1.torque", 10).ok());
  std::unique_ptr<Client> robot = As(kRobot);
  std::unique_ptr<LearnSession> robot_learn = robot->StartLearn("arm1.torque");
  absl::StatusOr<v1::LearnResponse> learned =
      robot_learn->Learn(rows.input(0), rows.target(0));
  ASSERT_TRUE(learned.ok()) << learned.status();
  EXPECT_TRUE(robot_learn->Close().ok());
  EXPECT_EQ(robot->CreateModel("arm1.new", RowsSpec()).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(robot->DeleteModel("arm1.torque").code(),
            absl::StatusCode::kPermissionDenied);
  // admin alone: create, refit and delete, but not read or write.
  std::unique_ptr<Client> creator = As(kCreator);
  ASSERT_TRUE(creator->CreateModel("arm1.new", RowsSpec()).ok());
  EXPECT_TRUE(creator->Refit("arm1.torque").ok());
  EXPECT_EQ(creator->GetModel("arm1.new").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Ingest(kCreator, "arm1.new", 5).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(creator->DeleteModel("arm1.new").ok());
  // Denied calls changed nothing: 50 + 10 + 1 samples.
  EXPECT_EQ(NumSamples("arm1.torque"), 61u);
}

TEST_F(AuthTest, AModelOutsideTheTokensPrefixesIsDeniedWhetherOrNotItExists) {
  absl::StatusOr<v1::Model> other = As(kRobot)->GetModel("arm2.torque");
  ASSERT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(other.status().message(),
            "token of 'robot' may not read model 'arm2.torque' (its "
            "permissions there: none)");
  EXPECT_EQ(As(kRobot)->GetModel("arm2.missing").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(PredictCode(kRobot, "arm2.torque"),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Ingest(kRobot, "arm2.torque", 5).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(NumSamples("arm2.torque"), 50u);
  // Invalid names are still INVALID_ARGUMENT for anyone authenticated.
  EXPECT_EQ(As(kRobot)->GetModel("arm1/x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(AuthTest, AStreamIsCheckedForEachModelItAddresses) {
  // One Ingest stream: a batch for arm1 is learned, the next names arm2
  // and ends the stream with PERMISSION_DENIED naming the message.
  grpc::ClientContext context;
  context.AddMetadata("authorization", std::string("Bearer ") + kRobot);
  v1::IngestResponse response;
  std::unique_ptr<Client> client = As("");
  auto writer = client->regression().Ingest(&context, &response);
  const Rows rows(2, 4);
  for (const char* model : {"arm1.torque", "arm2.torque"}) {
    v1::IngestRequest request;
    request.set_model(model);
    v1::Sample* sample = request.add_samples();
    sample->mutable_x()->Add(rows.input(0).begin(), rows.input(0).end());
    sample->mutable_y()->Add(rows.target(0).begin(), rows.target(0).end());
    writer->Write(request);
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(status.error_message().find("message 1: token of 'robot' may not "
                                        "write model 'arm2.torque'"),
            std::string::npos)
      << status.error_message();
  EXPECT_EQ(NumSamples("arm1.torque"), 51u);
  EXPECT_EQ(NumSamples("arm2.torque"), 50u);
}

TEST_F(AuthTest, ListModelsShowsOnlyTheModelsTheTokenMayRead) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        As(kOps)->CreateModel(absl::StrCat("arm0.m", i), RowsSpec()).ok());
  }
  absl::StatusOr<std::vector<v1::Model>> listed = As(kViewer)->ListModels();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name(), "arm1.torque");
  EXPECT_EQ(As(kOps)->ListModels()->size(), 7u);
  // Pages of one: the readable models are found past unreadable ones.
  v1::ListModelsRequest request;
  request.set_page_size(1);
  grpc::ClientContext context;
  context.AddMetadata("authorization", std::string("Bearer ") + kViewer);
  v1::ListModelsResponse page;
  ASSERT_TRUE(As("")->models().ListModels(&context, request, &page).ok());
  ASSERT_EQ(page.models_size(), 1);
  EXPECT_EQ(page.models(0).name(), "arm1.torque");
  EXPECT_EQ(page.next_page_token(), "");
}

TEST_F(AuthTest, AReplacedTableRevokesOldTokensAtOnceEvenOnOpenStreams) {
  std::unique_ptr<Client> robot = As(kRobot);
  std::unique_ptr<LearnSession> open_stream = robot->StartLearn("arm1.torque");
  std::unique_ptr<PredictSession> open_predictions =
      robot->StartPredict("arm1.torque");
  const Rows rows(3, 8);
  ASSERT_TRUE(open_stream->Learn(rows.input(0), rows.target(0)).ok());
  ASSERT_TRUE(open_predictions->Predict(rows.input(0)).ok());

  // The robot's token is replaced by a new one; the viewer loses arm1.
  server_->ReplaceAccessTokens(
      Tokens("ops    ops-token-0123456789      read,write,admin  *\n"
             "robot  robot-token-NEW-0123456   read,write        arm1.\n"
             "viewer viewer-token-0123456789   read              arm2.\n"));
  EXPECT_EQ(open_stream->Learn(rows.input(1), rows.target(1)).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(open_predictions->Predict(rows.input(1)).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(PredictCode(kRobot, "arm1.torque"),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(PredictCode(kCreator, "arm1.torque"),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(PredictCode(kViewer, "arm1.torque"),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(PredictCode(kViewer, "arm2.torque"), absl::StatusCode::kOk);
  EXPECT_TRUE(Ingest("robot-token-NEW-0123456", "arm1.torque", 4).ok());
  EXPECT_EQ(NumSamples("arm1.torque"), 55u);
}

}  // namespace
}  // namespace streamreg
