#ifndef STREAMREG_SERVER_RPC_REGRESSION_SERVICE_H_
#define STREAMREG_SERVER_RPC_REGRESSION_SERVICE_H_

#include "grpcpp/grpcpp.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/access_control.h"
#include "server/rpc/async_unary_call.h"
#include "server/rpc/completion_queue_thread.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {

// streamreg.v1.RegressionService, served through the server's completion
// queue (Listen): one reactor per streaming call (IngestReactor,
// LearnReactor, PredictStreamReactor, PingStreamReactor). Every call is
// checked by the AccessControl: Ingest and Learn need write permission on
// their models, Predict and PredictStream read, Ping and PingStream a
// known token. The queue's one thread only admits (or refuses at once),
// answers what takes microseconds (a Learn message's prediction, a
// prediction of one query that need not wait) and hands the rest on, so it
// stays free under any load: writes run on each model's write queue,
// predictions on `predictions` (a prediction may wait for learning to
// catch up, and never does so on the queue's thread).
class RegressionService final {
 public:
  RegressionService(const ModelRegistry* registry, const AccessControl* access,
                    WorkerPool* predictions)
      : registry_(registry), access_(access), predictions_(predictions) {}

  // The service to register with the gRPC server's builder.
  grpc::Service* service() { return &async_; }
  // Listens for calls of every method on `thread`'s queue, once the server
  // is started.
  void Listen(CompletionQueueThread* thread);

 private:
  void Predict(grpc::ServerContext* context, const v1::PredictRequest* request,
               v1::PredictResponse* response, UnaryReactor* reactor);
  void Ping(grpc::ServerContext* context, UnaryReactor* reactor);

  const ModelRegistry* registry_;
  const AccessControl* access_;
  WorkerPool* predictions_;
  v1::RegressionService::AsyncService async_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_REGRESSION_SERVICE_H_
