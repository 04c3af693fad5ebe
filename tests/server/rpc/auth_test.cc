// Bearer-token access control end to end, in process: a server with a
// token table, clients presenting tokens (or none, or wrong ones), every
// RPC against the permission it needs, a replaced table (what SIGHUP does)
// taking effect on new calls and on streams already open.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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

// One call of a method, made by `client` about `model`, and the
// permission the method needs on the model (none: any known token).
struct MethodCall {
  using Call =
      std::function<grpc::Status(Client& client, const std::string& model)>;
  std::optional<Permission> needs;
  Call call;
};

// A stream that sends `request` (for `model`) and reads to its end.
template <typename Open, typename Request, typename Response>
grpc::Status StreamOnce(Open open, Request request, Response response,
                        const std::string& model) {
  grpc::ClientContext context;
  auto call = open(&context);
  request.set_model(model);
  call->Write(request);
  call->WritesDone();
  while (call->Read(&response)) {
  }
  return call->Finish();
}

// A call of a unary ModelService method whose request names the model.
template <typename Request, typename Response>
MethodCall::Call ByName(grpc::Status (v1::ModelService::Stub::*method)(
    grpc::ClientContext*, const Request&, Response*)) {
  return [method](Client& client, const std::string& model) {
    grpc::ClientContext context;
    Request request;
    request.set_name(model);
    Response response;
    return (client.models().*method)(&context, request, &response);
  };
}

// A call of every method of both services, by full name.
std::map<std::string, MethodCall> EveryMethod() {
  using ModelName = const std::string&;
  auto regression = [](Client & client) -> auto& {
    return client.regression();
  };
  return {
      {"streamreg.v1.RegressionService.Ingest",
       {Permission::kWrite,
        [=](Client& client, ModelName model) {
          grpc::ClientContext context;
          v1::IngestResponse response;
          auto call = regression(client).Ingest(&context, &response);
          v1::IngestRequest request;
          request.set_model(model);
          const Rows rows(1, 3);
          v1::Sample* sample = request.add_samples();
          sample->mutable_x()->Add(rows.input(0).begin(), rows.input(0).end());
          sample->mutable_y()->Add(rows.target(0).begin(),
                                   rows.target(0).end());
          call->Write(request);
          call->WritesDone();
          return call->Finish();
        }}},
      {"streamreg.v1.RegressionService.Learn",
       {Permission::kWrite,
        [=](Client& client, ModelName model) {
          return StreamOnce(
              [&](auto* c) { return regression(client).Learn(c); },
              v1::LearnRequest(), v1::LearnResponse(), model);
        }}},
      {"streamreg.v1.RegressionService.Predict",
       {Permission::kRead,
        [=](Client& client, ModelName model) {
          grpc::ClientContext context;
          v1::PredictRequest request;
          request.set_model(model);
          v1::PredictResponse response;
          return regression(client).Predict(&context, request, &response);
        }}},
      {"streamreg.v1.RegressionService.PredictStream",
       {Permission::kRead,
        [=](Client& client, ModelName model) {
          return StreamOnce(
              [&](auto* c) { return regression(client).PredictStream(c); },
              v1::PredictRequest(), v1::PredictResponse(), model);
        }}},
      {"streamreg.v1.RegressionService.Ping",
       {std::nullopt,
        [=](Client& client, ModelName) {
          grpc::ClientContext context;
          v1::PingResponse response;
          return regression(client).Ping(&context, v1::PingRequest(),
                                         &response);
        }}},
      {"streamreg.v1.RegressionService.PingStream",
       {std::nullopt,
        [=](Client& client, ModelName) {
          grpc::ClientContext context;
          auto call = regression(client).PingStream(&context);
          call->Write(v1::PingRequest());
          call->WritesDone();
          v1::PingResponse response;
          while (call->Read(&response)) {
          }
          return call->Finish();
        }}},
      {"streamreg.v1.ModelService.CreateModel",
       {Permission::kAdmin,
        [](Client& client, ModelName model) {
          grpc::ClientContext context;
          v1::CreateModelRequest request;
          request.set_name(model);
          *request.mutable_spec() = RowsSpec();
          v1::Model response;
          return client.models().CreateModel(&context, request, &response);
        }}},
      {"streamreg.v1.ModelService.GetModel",
       {Permission::kRead, ByName(&v1::ModelService::Stub::GetModel)}},
      {"streamreg.v1.ModelService.ListModels",
       {std::nullopt,
        [](Client& client, ModelName) {
          grpc::ClientContext context;
          v1::ListModelsResponse response;
          return client.models().ListModels(&context, v1::ListModelsRequest(),
                                            &response);
        }}},
      {"streamreg.v1.ModelService.DeleteModel",
       {Permission::kAdmin, ByName(&v1::ModelService::Stub::DeleteModel)}},
      {"streamreg.v1.ModelService.GetMetric",
       {Permission::kRead, ByName(&v1::ModelService::Stub::GetMetric)}},
      {"streamreg.v1.ModelService.Refit",
       {Permission::kAdmin,
        [](Client& client, ModelName model) {
          grpc::ClientContext context;
          v1::RefitRequest request;
          request.set_name(model);
          auto call = client.models().Refit(&context, request);
          v1::RefitProgress progress;
          while (call->Read(&progress)) {
          }
          return call->Finish();
        }}},
  };
}

// The full names of every method of both services, from their descriptors.
std::set<std::string> ServiceMethods() {
  std::set<std::string> methods;
  for (const char* name : {v1::RegressionService::service_full_name(),
                           v1::ModelService::service_full_name()}) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            name);
    EXPECT_NE(service, nullptr) << name;
    if (service == nullptr) continue;
    for (int m = 0; m < service->method_count(); ++m) {
      methods.insert(service->method(m)->full_name());
    }
  }
  return methods;
}

TEST(AuthMethodTableTest, HoldsEveryMethodOfBothServices) {
  const std::map<std::string, MethodCall> calls = EveryMethod();
  const std::set<std::string> methods = ServiceMethods();
  for (const std::string& method : methods) {
    EXPECT_TRUE(calls.contains(method)) << method << ": not in EveryMethod()";
  }
  EXPECT_EQ(calls.size(), methods.size());
}

// Each method of both services refuses a call without a token.
TEST_F(AuthTest, NoMethodOfEitherServiceAnswersWithoutAToken) {
  for (const auto& [method, call] : EveryMethod()) {
    EXPECT_EQ(call.call(*As(""), "arm1.torque").error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
        << method;
  }
  // Nothing changed: the model is there with its samples, none created.
  EXPECT_EQ(NumSamples("arm1.torque"), 50u);
  EXPECT_EQ(As(kOps)->ListModels()->size(), 2u);
}

// Each method that addresses a model is refused (PERMISSION_DENIED) to
// every token without its permission there, and to every token on a model
// outside the token's prefixes; each token with the permission gets past
// access control (whatever the call's answer then is).
TEST_F(AuthTest, EveryMethodIsRefusedWithoutItsPermissionOnTheModel) {
  struct Holder {
    const char* token;
    std::set<Permission> on_arm1;  // none on arm2
  };
  const std::vector<Holder> holders = {
      {kViewer, {Permission::kRead}},
      {kRobot, {Permission::kRead, Permission::kWrite}},
      {kCreator, {Permission::kAdmin}},
  };
  for (const auto& [method, call] : EveryMethod()) {
    if (!call.needs.has_value()) {
      for (const Holder& holder : holders) {
        EXPECT_TRUE(call.call(*As(holder.token), "arm1.torque").ok())
            << method << " as " << holder.token;
      }
      continue;
    }
    for (const Holder& holder : holders) {
      const bool allowed = holder.on_arm1.contains(*call.needs);
      const grpc::StatusCode on_arm1 =
          call.call(*As(holder.token), allowed ? "arm1.absent" : "arm1.torque")
              .error_code();
      if (allowed) {
        EXPECT_NE(on_arm1, grpc::StatusCode::PERMISSION_DENIED)
            << method << " as " << holder.token;
        EXPECT_NE(on_arm1, grpc::StatusCode::UNAUTHENTICATED)
            << method << " as " << holder.token;
      } else {
        EXPECT_EQ(on_arm1, grpc::StatusCode::PERMISSION_DENIED)
            << method << " as " << holder.token;
      }
      EXPECT_EQ(call.call(*As(holder.token), "arm2.torque").error_code(),
                grpc::StatusCode::PERMISSION_DENIED)
          << method << " as " << holder.token << " on arm2";
    }
  }
  // The refused calls changed nothing (the allowed ones addressed
  // arm1.absent).
  EXPECT_EQ(NumSamples("arm1.torque"), 50u);
  EXPECT_EQ(NumSamples("arm2.torque"), 50u);
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
