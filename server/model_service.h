#ifndef STREAMREG_SERVER_MODEL_SERVICE_H_
#define STREAMREG_SERVER_MODEL_SERVICE_H_

#include "server/model_registry.h"
#include "streamreg/v1/model_service.grpc.pb.h"

namespace streamreg {

// streamreg.v1.ModelService: translates requests into ModelRegistry and
// HostedModel calls and their results into responses. Unary calls answer
// on gRPC's thread (they take microseconds); Refit runs on the model's
// write queue (RefitReactor).
class ModelService final : public v1::ModelService::CallbackService {
 public:
  explicit ModelService(ModelRegistry* registry) : registry_(registry) {}

  grpc::ServerUnaryReactor* CreateModel(grpc::CallbackServerContext* context,
                                        const v1::CreateModelRequest* request,
                                        v1::Model* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::Model* response) override;
  grpc::ServerUnaryReactor* ListModels(
      grpc::CallbackServerContext* context,
      const v1::ListModelsRequest* request,
      v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteModel(
      grpc::CallbackServerContext* context,
      const v1::DeleteModelRequest* request,
      v1::DeleteModelResponse* response) override;
  grpc::ServerUnaryReactor* GetMetric(grpc::CallbackServerContext* context,
                                      const v1::GetMetricRequest* request,
                                      v1::MetricReport* response) override;
  grpc::ServerWriteReactor<v1::RefitProgress>* Refit(
      grpc::CallbackServerContext* context,
      const v1::RefitRequest* request) override;

 private:
  absl::Status Create(const v1::CreateModelRequest& request,
                      v1::Model* response);
  absl::Status List(const v1::ListModelsRequest& request,
                    v1::ListModelsResponse* response) const;

  ModelRegistry* registry_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_MODEL_SERVICE_H_
