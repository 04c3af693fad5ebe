#ifndef STREAMREG_SERVER_RPC_REGRESSION_SERVICE_H_
#define STREAMREG_SERVER_RPC_REGRESSION_SERVICE_H_

#include "server/hosting/model_registry.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/access_control.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {

// streamreg.v1.RegressionService: one reactor per streaming call
// (IngestReactor, LearnReactor, PredictStreamReactor,
// PingStreamReactor). Every call is checked by the AccessControl: Ingest
// and Learn need write permission on their models, Predict and
// PredictStream read, Ping and PingStream a known token. gRPC's few
// callback threads only admit (or refuse at once) and hand work on, so
// they stay free for health checks and refusals under any load: writes
// run on each model's write queue, predictions on `predictions` (a
// prediction may wait for learning to catch up, and never does so on a
// gRPC thread).
class RegressionService final : public v1::RegressionService::CallbackService {
 public:
  RegressionService(const ModelRegistry* registry, const AccessControl* access,
                    WorkerPool* predictions)
      : registry_(registry), access_(access), predictions_(predictions) {}

  grpc::ServerReadReactor<v1::IngestRequest>* Ingest(
      grpc::CallbackServerContext* context,
      v1::IngestResponse* response) override;
  grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>* Learn(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
  grpc::ServerBidiReactor<v1::PredictRequest, v1::PredictResponse>*
  PredictStream(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context,
                                 const v1::PingRequest* request,
                                 v1::PingResponse* response) override;
  grpc::ServerBidiReactor<v1::PingRequest, v1::PingResponse>* PingStream(
      grpc::CallbackServerContext* context) override;

 private:
  const ModelRegistry* registry_;
  const AccessControl* access_;
  WorkerPool* predictions_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_REGRESSION_SERVICE_H_
