#ifndef STREAMREG_SERVER_RPC_HEALTH_SERVICE_H_
#define STREAMREG_SERVER_RPC_HEALTH_SERVICE_H_

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

// grpc.health.v1.Health for the server's overall status (the service
// named ""): NOT_SERVING until the server is ready, SERVING, NOT_SERVING
// again while it drains. Check answers it; Watch streams it and then each
// change, until the call ends or the server shuts down. Any other service
// name is unknown: NOT_FOUND from Check, SERVICE_UNKNOWN from Watch (as
// gRPC's built-in service answers). Served on gRPC's synchronous threads
// rather than by gRPC's built-in service, a callback service: any callback
// service makes gRPC start threads that poll every connection, which
// costs every Learn message context switches (docs/threading.md).
class HealthService final : public grpc::health::v1::Health::Service {
 public:
  void SetServing(bool serving) ABSL_LOCKS_EXCLUDED(mutex_);
  // NOT_SERVING for good, and every Watch call ends (UNAVAILABLE), so that
  // none holds up the server's drain. Called before the gRPC server's own
  // Shutdown.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mutex_);

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>*
                         writer) override;

 private:
  Mutex mutex_;
  // Signalled at each change of the status and at Shutdown.
  CondVar changed_;
  bool serving_ ABSL_GUARDED_BY(mutex_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_HEALTH_SERVICE_H_
