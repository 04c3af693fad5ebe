#include "server/rpc/health_service.h"

#include <chrono>
#include <optional>

namespace streamreg {
namespace {

using grpc::health::v1::HealthCheckResponse;

// How often a Watch call waiting for a change looks whether its client is
// gone (a cancelled call signals nothing a synchronous handler can wait
// on).
constexpr std::chrono::milliseconds kCancellationCheck(200);

}  // namespace

void HealthService::SetServing(bool serving) {
  MutexLock lock(&mutex_);
  if (shut_down_ || serving_ == serving) return;
  serving_ = serving;
  changed_.SignalAll();
}

void HealthService::Shutdown() {
  MutexLock lock(&mutex_);
  serving_ = false;
  shut_down_ = true;
  changed_.SignalAll();
}

grpc::Status HealthService::Check(
    grpc::ServerContext* /*context*/,
    const grpc::health::v1::HealthCheckRequest* request,
    HealthCheckResponse* response) {
  if (!request->service().empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "service: unknown service (this server reports its "
                        "overall status, service \"\")");
  }
  MutexLock lock(&mutex_);
  response->set_status(serving_ ? HealthCheckResponse::SERVING
                                : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(
    grpc::ServerContext* context,
    const grpc::health::v1::HealthCheckRequest* request,
    grpc::ServerWriter<HealthCheckResponse>* writer) {
  const bool known = request->service().empty();
  std::optional<bool> sent_serving;  // none sent yet
  while (true) {
    HealthCheckResponse response;
    {
      MutexLock lock(&mutex_);
      while (!shut_down_ && sent_serving.has_value() &&
             (!known || serving_ == *sent_serving)) {
        if (context->IsCancelled()) {
          return grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
        }
        changed_.WaitUntil(
            &mutex_, std::chrono::steady_clock::now() + kCancellationCheck);
      }
      if (shut_down_) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "server shutting down");
      }
      sent_serving = serving_;
      response.set_status(!known     ? HealthCheckResponse::SERVICE_UNKNOWN
                          : serving_ ? HealthCheckResponse::SERVING
                                     : HealthCheckResponse::NOT_SERVING);
    }
    if (!writer->Write(response)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
    }
  }
}

}  // namespace streamreg
