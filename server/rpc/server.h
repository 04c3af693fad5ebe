#ifndef STREAMREG_SERVER_RPC_SERVER_H_
#define STREAMREG_SERVER_RPC_SERVER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/access_control.h"
#include "server/rpc/completion_queue_thread.h"
#include "server/rpc/health_service.h"
#include "server/rpc/model_service.h"
#include "server/rpc/regression_service.h"
#include "server/rpc/server_metrics.h"
#include "server/rpc/server_options.h"
#include "server/storage/data_directory.h"
#include "server/telemetry/metrics_http_server.h"

namespace streamreg {

// A running streamreg server: the model registry, its worker threads and
// the gRPC server with ModelService, RegressionService, grpc.health.v1 and
// reflection, and the Prometheus endpoint. Used by streamreg-server and, in
// process, by the tests.
class Server {
 public:
  // Locks the data directory and starts listening.
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options);
  // Shuts down (if not yet) and releases everything.
  ~Server();

  int port() const { return port_; }
  // "host:port" with the port in use, or the unix: address it was given.
  std::string address() const;
  // unix:PATH of ServerOptions.local_socket ("" without one).
  std::string local_socket_address() const;
  // The Prometheus endpoint's "host:port" (empty without one).
  std::string metrics_address() const;
  // A channel to this server inside the process, with no socket (the
  // fuzzer's way in).
  std::shared_ptr<grpc::Channel> InProcessChannel() const;
  // What a scrape of /metrics returns now.
  std::string RenderMetrics() const {
    return metrics_->Render(*registry_, cluster_.get());
  }
  // What the status page reads (GET /api/status?detail=a,b): the
  // StatusReportJson detailing the models named (comma-separated), or all.
  std::string RenderStatus(
      const std::optional<std::string>& detail = std::nullopt) const;
  ModelRegistry& registry() { return *registry_; }
  // Null unless in cluster mode.
  ClusterNode* cluster() { return cluster_.get(); }
  // Replaces the bearer tokens (a server started with some; see
  // AccessControl::Replace).
  void ReplaceAccessTokens(AccessTokens tokens) {
    access_control_->Replace(std::move(tokens));
  }

  // Graceful shutdown: health NOT_SERVING, drain_delay, stop accepting
  // calls, let calls in flight finish for up to drain_timeout, cancel the
  // rest and wait for them. Idempotent.
  void Shutdown();

 private:
  explicit Server(ServerOptions options) : options_(std::move(options)) {}

  // Start's steps, in order.
  // The data directory, the pools, storage and the registry, its models
  // recovered.
  absl::Status Recover();
  // The RPC services over the registry.
  void MakeServices();
  // gRPC's server built and listening (and the local socket, if asked),
  // its calls served by the completion queue's thread.
  absl::Status Listen();
  // In cluster mode: joined, under the address clients reach it at.
  absl::Status JoinClusterIfAsked();
  // /metrics and the status page, if asked.
  absl::Status ServeMetricsIfAsked();
  // The line that says it listens, with every setting that shapes it.
  void LogListening() const;

  const ServerOptions options_;
  const absl::Time started_ = absl::Now();
  // First: the journals and gRPC's interceptors count into it.
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<DataDirectory> data_directory_;
  // Writes are acknowledged on pool_ and learned on learning_pool_
  // (HostingPools).
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<WorkerPool> learning_pool_;
  // Reads that may wait for learning (predictions, GetModel, ListModels,
  // GetMetric) are answered here, off gRPC's threads.
  std::unique_ptr<WorkerPool> reads_pool_;
  std::unique_ptr<ModelRegistry> registry_;
  // After the registry: destroyed first, its threads (which list the
  // registry's models) stop before the registry goes.
  std::unique_ptr<ModelStorage> storage_;
  // Cluster mode: after the registry (its models leave the registry when
  // it goes), before the services that use it.
  std::unique_ptr<ClusterNode> cluster_;
  std::unique_ptr<AccessControl> access_control_;
  std::unique_ptr<ModelService> model_service_;
  std::unique_ptr<RegressionService> regression_service_;
  std::unique_ptr<HealthService> health_;
  // Serves the two services' calls; stopped after the gRPC server's
  // shutdown, destroyed after it.
  std::unique_ptr<CompletionQueueThread> queue_thread_;
  std::unique_ptr<grpc::Server> grpc_server_;
  // Last: stops (its scrapes read the registry) before anything goes.
  std::unique_ptr<MetricsHttpServer> metrics_http_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_SERVER_H_
