#ifndef STREAMREG_SERVER_RPC_MODEL_SERVICE_H_
#define STREAMREG_SERVER_RPC_MODEL_SERVICE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/cluster/cluster_node.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/parked_read.h"
#include "server/hosting/read_after.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/access_control.h"
#include "server/rpc/async_unary_call.h"
#include "server/rpc/completion_queue_thread.h"
#include "server/rpc/refit_reactor.h"
#include "streamreg/v1/model_service.grpc.pb.h"

namespace streamreg {

// streamreg.v1.ModelService: translates requests into ModelRegistry and
// HostedModel calls and their results into responses, served through the
// server's completion queue (Listen), whose thread only checks and admits
// calls: the reads (GetModel, GetMetric, ListModels) are answered on the
// reads pool, parked while they wait for learning (PostRead); CreateModel
// and DeleteModel, which wait for the log, run there too; Refit runs on
// the model's write queue (RefitReactor). Every call is checked by the
// AccessControl: CreateModel, DeleteModel and Refit need admin permission on
// the model, GetModel and GetMetric read; ListModels lists the models the
// caller may read.
class ModelService final {
 public:
  // In cluster mode, models are created and deleted through the cluster
  // (JoinedCluster); until the server has joined, those calls are
  // UNAVAILABLE.
  // GetModel, ListModels and GetMetric wait until what was acknowledged
  // before them is learned: they run on `reads`, off gRPC's threads, each
  // admitted as one of the server's reads in flight
  // (ModelRegistry::AdmitRead).
  // Models it creates take over by `take_over` (ServerOptions).
  ModelService(ModelRegistry* registry, const AccessControl* access,
               WorkerPool* reads, bool cluster_mode, TakeOverRule take_over)
      : registry_(registry),
        access_(access),
        reads_(reads),
        cluster_mode_(cluster_mode),
        take_over_(take_over) {}
  void JoinedCluster(ClusterNode* cluster) {
    cluster_.store(cluster, std::memory_order_release);
  }

  // The service to register with the gRPC server's builder.
  grpc::Service* service() { return &async_; }
  // Listens for calls of every method on `thread`'s queue, once the server
  // is started.
  void Listen(CompletionQueueThread* thread);

 private:
  void CreateModel(grpc::ServerContext* context,
                   const v1::CreateModelRequest* request, v1::Model* response,
                   UnaryReactor* reactor);
  void GetModel(grpc::ServerContext* context,
                const v1::GetModelRequest* request, v1::Model* response,
                UnaryReactor* reactor);
  void ListModels(grpc::ServerContext* context,
                  const v1::ListModelsRequest* request,
                  v1::ListModelsResponse* response, UnaryReactor* reactor);
  void DeleteModel(grpc::ServerContext* context,
                   const v1::DeleteModelRequest* request,
                   v1::DeleteModelResponse* response, UnaryReactor* reactor);
  void GetMetric(grpc::ServerContext* context,
                 const v1::GetMetricRequest* request,
                 v1::MetricReport* response, UnaryReactor* reactor);
  RefitReactor* Refit(RefitReactor::Call* call,
                      const v1::RefitRequest* request);

  absl::Status Create(const v1::CreateModelRequest& request,
                      v1::Model* response);
  // A page of the models: those hosted here into *here, pinned at what
  // they acknowledged (their figures are written once learned: ListModels),
  // the next page's token (and in cluster mode the models elsewhere) into
  // *response.
  absl::Status List(const CallerRights& rights,
                    const v1::ListModelsRequest& request, absl::Time answer_by,
                    v1::ListModelsResponse* response,
                    std::vector<ModelRead>* here) const;
  // Cluster mode's: a page of the cluster's models (ClusterNode::
  // Placements), those hosted here into *here, the others as elsewhere.
  absl::Status ListCluster(const CallerRights& rights, const std::string& after,
                           std::size_t page_size, absl::Time answer_by,
                           v1::ListModelsResponse* response,
                           std::vector<ModelRead>* here) const;
  // The model a call names in its `name` field, if the call may do
  // `permission` with it.
  absl::StatusOr<std::shared_ptr<HostedModel>> FindAuthorized(
      const grpc::ServerContext& context, const std::string& name,
      Permission permission) const;

  // Cluster mode's create and delete.
  absl::Status CreateInCluster(const std::string& name, ModelConfig config,
                               std::vector<std::string> input_names,
                               v1::Model* response);
  absl::StatusOr<ClusterNode*> Cluster() const;

  // A read of one model's figures (GetModel, GetMetric): the model the
  // call names, found and authorized, its acknowledged samples pinned; the
  // read admitted and answered by `write` on reads_ (or refused at once).
  // It counts in its model's limit too, and is parked while it would wait
  // for learning (PostRead).
  void AnswerFigures(
      grpc::ServerContext* context, UnaryReactor* reactor,
      const std::string& name,
      std::function<void(const HostedModel&, const ReadAfter&)> write);

  ModelRegistry* registry_;
  const AccessControl* access_;
  WorkerPool* reads_;
  const bool cluster_mode_;
  const TakeOverRule take_over_;
  std::atomic<ClusterNode*> cluster_{nullptr};
  v1::ModelService::AsyncService async_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_MODEL_SERVICE_H_
