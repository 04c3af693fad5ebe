// grpc.health.v1.Health as the server serves it (HealthService), over a
// real gRPC server in process: Check and Watch for the overall status, an
// unknown service, and the end of Watch calls at shutdown.
#include "server/rpc/health_service.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthServiceTest : public testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = Health::NewStub(server_->InProcessChannel({}));
  }
  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown();
  }

  // Check's answer for `service` (or the call's error).
  grpc::Status Check(const std::string& service,
                     HealthCheckResponse::ServingStatus* status) {
    grpc::ClientContext context;
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status answered = stub_->Check(&context, request, &response);
    *status = response.status();
    return answered;
  }

  // A Watch of `service` and the status it sent first.
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> Watch(
      const std::string& service, grpc::ClientContext* context,
      HealthCheckResponse::ServingStatus* first) {
    HealthCheckRequest request;
    request.set_service(service);
    auto reader = stub_->Watch(context, request);
    HealthCheckResponse response;
    EXPECT_TRUE(reader->Read(&response));
    *first = response.status();
    return reader;
  }

  HealthService health_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthServiceTest, CheckFollowsTheOverallStatusFromNotServing) {
  HealthCheckResponse::ServingStatus status;
  ASSERT_TRUE(Check("", &status).ok());
  EXPECT_EQ(status, HealthCheckResponse::NOT_SERVING);  // until ready
  health_.SetServing(true);
  ASSERT_TRUE(Check("", &status).ok());
  EXPECT_EQ(status, HealthCheckResponse::SERVING);
  health_.SetServing(false);
  ASSERT_TRUE(Check("", &status).ok());
  EXPECT_EQ(status, HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServiceTest, CheckOfAnUnknownServiceIsNotFound) {
  health_.SetServing(true);
  HealthCheckResponse::ServingStatus status;
  const grpc::Status answered =
      Check("streamreg.v1.RegressionService", &status);
  EXPECT_EQ(answered.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(answered.error_message(), testing::HasSubstr("service"));
}

TEST_F(HealthServiceTest, WatchSendsTheStatusThenEachChange) {
  grpc::ClientContext context;
  HealthCheckResponse::ServingStatus first;
  auto reader = Watch("", &context, &first);
  EXPECT_EQ(first, HealthCheckResponse::NOT_SERVING);
  HealthCheckResponse response;
  health_.SetServing(true);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  health_.SetServing(true);  // no change: nothing sent
  health_.SetServing(false);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  context.TryCancel();
  while (reader->Read(&response)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(HealthServiceTest, WatchOfAnUnknownServiceSaysSoOnce) {
  grpc::ClientContext context;
  HealthCheckResponse::ServingStatus first;
  auto reader = Watch("no.such.Service", &context, &first);
  EXPECT_EQ(first, HealthCheckResponse::SERVICE_UNKNOWN);
  HealthCheckResponse response;
  health_.SetServing(true);  // not this service's: nothing sent
  health_.Shutdown();
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(HealthServiceTest, ShutdownEndsWatchCallsAndHoldsNotServing) {
  health_.SetServing(true);
  grpc::ClientContext context;
  HealthCheckResponse::ServingStatus first;
  auto reader = Watch("", &context, &first);
  EXPECT_EQ(first, HealthCheckResponse::SERVING);
  HealthCheckResponse response;
  health_.Shutdown();
  EXPECT_FALSE(reader->Read(&response));
  const grpc::Status ended = reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(ended.error_message(), testing::HasSubstr("shutting down"));
  health_.SetServing(true);  // too late: stays NOT_SERVING
  HealthCheckResponse::ServingStatus status;
  ASSERT_TRUE(Check("", &status).ok());
  EXPECT_EQ(status, HealthCheckResponse::NOT_SERVING);
}

}  // namespace
}  // namespace streamreg
