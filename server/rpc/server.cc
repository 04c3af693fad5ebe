#include "server/rpc/server.h"

#include <limits>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/base/background_priority.h"
#include "core/base/realtime_priority.h"
#include "core/base/stoppable_sleep.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/listening_credentials.h"
#include "server/rpc/status_report.h"
#include "server/telemetry/embedded_file.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

// gRPC's own protection of the listener: streams per connection, and
// keepalive both ways (dead clients found, over-eager pingers refused).
void AddConnectionLimits(const ServerOptions& o, grpc::ServerBuilder& builder) {
  const auto milliseconds = [](absl::Duration d) {
    return static_cast<int>(absl::ToInt64Milliseconds(d));
  };
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(o.max_concurrent_streams));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             milliseconds(o.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             milliseconds(ServerOptions::kKeepaliveTimeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      milliseconds(ServerOptions::kMinClientPingInterval));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  // A port another process listens on is refused, not shared: gRPC sets
  // SO_REUSEPORT by default, and a second server started on the port of a
  // running one started too, the two each getting some of the connections
  // (tests/server/cmd/server_process_test.sh checks the refusal).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

// A thread for every prediction that may be in flight (one waiting for
// learning to catch up is parked meanwhile, holding none: PostRead), 2 per
// core without a limit, at most 64.
std::size_t PredictionThreads(const RegistryLimits& limits) {
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t wanted = limits.max_predictions_in_flight != 0
                                   ? limits.max_predictions_in_flight
                                   : 2 * cores;
  return static_cast<std::size_t>(std::min<std::uint64_t>(wanted, 64));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  std::unique_ptr<Server> server(new Server(std::move(options)));
  server->metrics_ = std::make_unique<ServerMetrics>();
  if (absl::Status status = server->Recover(); !status.ok()) return status;
  server->MakeServices();
  if (absl::Status status = server->Listen(); !status.ok()) return status;
  if (absl::Status status = server->JoinClusterIfAsked(); !status.ok()) {
    return status;
  }
  if (absl::Status status = server->ServeMetricsIfAsked(); !status.ok()) {
    return status;
  }
  server->health_->SetServing(true);
  if (!LoweredThreadsCanBeRaised()) {
    // Reads after what was acknowledged can then wait for an MLKR fit
    // lowered behind busy threads (deploy/README.md, "Priorities").
    spdlog::warn(
        "event=background_priority_fixed detail=\"an MLKR fit a read waits "
        "for stays lowered: grant CAP_SYS_NICE or RLIMIT_NICE 20\"");
  }
  server->LogListening();
  return server;
}

absl::Status Server::Recover() {
  const ServerOptions& o = options_;
  absl::StatusOr<std::unique_ptr<DataDirectory>> directory =
      DataDirectory::Open(o.data_dir);
  if (!directory.ok()) return directory.status();
  data_directory_ = *std::move(directory);
  const std::size_t threads =
      o.worker_threads != 0 ? o.worker_threads
                            : std::max(1u, std::thread::hardware_concurrency());
  pool_ = std::make_unique<WorkerPool>(threads, "requests");
  learning_pool_ = std::make_unique<WorkerPool>(threads, "learning");
  reads_pool_ =
      std::make_unique<WorkerPool>(PredictionThreads(o.limits), "reads");
  StorageOptions storage = o.storage;
  storage.fsync_latency = &metrics_->wal_fsync();
  storage_ = std::make_unique<ModelStorage>(o.data_dir, storage);
  // In cluster mode the models' logs are the cluster's, not the data
  // directory's, and until the server has joined (once it listens) it
  // knows of none.
  registry_ = std::make_unique<ModelRegistry>(
      o.limits, HostingPools{pool_.get(), learning_pool_.get()},
      o.cluster.has_value() ? nullptr : storage_.get());
  const absl::Time recovery_start = absl::Now();
  if (o.cluster.has_value()) {
    registry_->SetElsewhere([](absl::string_view) {
      return absl::UnavailableError("the server is joining its cluster; retry");
    });
  }
  if (absl::Status status = registry_->Recover(); !status.ok()) {
    return status;
  }
  spdlog::info("event=recovery_done models={} failed={} seconds={:.3f}",
               registry_->size(), registry_->failed().size(),
               absl::ToDoubleSeconds(absl::Now() - recovery_start));
  ModelRegistry* registry = registry_.get();
  storage_->Start([registry] {
    return registry->List("", std::numeric_limits<std::size_t>::max());
  });
  return absl::OkStatus();
}

void Server::MakeServices() {
  access_control_ = std::make_unique<AccessControl>(options_.access_tokens);
  model_service_ = std::make_unique<ModelService>(
      registry_.get(), access_control_.get(), reads_pool_.get(),
      options_.cluster.has_value(), options_.take_over);
  regression_service_ = std::make_unique<RegressionService>(
      registry_.get(), access_control_.get(), reads_pool_.get());
  health_ = std::make_unique<HealthService>();
}

absl::Status Server::Listen() {
  const ServerOptions& o = options_;
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, ListeningCredentials(o.tls), &port_);
  int local_socket_port = 0;  // gRPC gives 1 for a local socket it serves
  if (!o.local_socket.empty()) {
    builder.AddListeningPort(absl::StrCat("unix:", o.local_socket),
                             ListeningCredentials(o.tls), &local_socket_port);
  }
  builder.SetMaxReceiveMessageSize(static_cast<int>(o.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(o.max_message_bytes));
  AddConnectionLimits(o, builder);
  builder.RegisterService(model_service_->service());
  builder.RegisterService(regression_service_->service());
  builder.RegisterService(health_.get());
  queue_thread_ = std::make_unique<CompletionQueueThread>(builder);
  if (!o.metrics_listen.empty()) {  // no metrics: calls skip the counting
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(metrics_->rpc().InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  {
    // The threads gRPC starts now and the completion queue's, which
    // answer calls, inherit it.
    const ScopedRealtime realtime(o.realtime_priority);
    if (!realtime.status().ok()) {
      return Prefixed(realtime.status(), absl::StrCat("--realtime_priority ",
                                                      o.realtime_priority));
    }
    grpc_server_ = builder.BuildAndStart();
    if (grpc_server_ != nullptr) {
      model_service_->Listen(queue_thread_.get());
      regression_service_->Listen(queue_thread_.get());
      queue_thread_->Start();
    }
  }
  // A port gRPC could not bind is left 0 (a local socket's is 1 when
  // served); either stops the whole server.
  const bool socket_failed = !o.local_socket.empty() && local_socket_port == 0;
  if (socket_failed && port_ != 0) {
    return absl::UnavailableError(absl::StrCat(
        "--local_socket ", o.local_socket,
        ": cannot listen there (its folder must exist and be writable, and "
        "the path be at most 107 bytes)"));
  }
  if (grpc_server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "--listen ", o.listen, ": cannot listen there",
        o.tls.enabled() ? " (or the TLS certificate or key is not valid PEM)"
                        : "",
        socket_failed
            ? absl::StrCat(" (or --local_socket ", o.local_socket, ")")
            : ""));
  }
  return absl::OkStatus();
}

absl::Status Server::JoinClusterIfAsked() {
  if (!options_.cluster.has_value()) return absl::OkStatus();
  ClusterOptions cluster = *options_.cluster;
  if (cluster.advertise.empty()) cluster.advertise = address();
  absl::StatusOr<std::unique_ptr<ClusterNode>> node =
      ClusterNode::Start(std::move(cluster), registry_.get());
  if (!node.ok()) return node.status();
  cluster_ = *std::move(node);
  model_service_->JoinedCluster(cluster_.get());
  return absl::OkStatus();
}

absl::Status Server::ServeMetricsIfAsked() {
  if (options_.metrics_listen.empty()) return absl::OkStatus();
  std::optional<MetricsHttpServer::StatusPage> status_page;
  if (options_.status_page) {
    status_page = MetricsHttpServer::StatusPage{
        .files = StatusPageFiles(),
        .json =
            [this](const std::optional<std::string>& detail) {
              return RenderStatus(detail);
            },
        // As the page's script asks first: every model's details while
        // they are few, else none (it then asks for those in its address).
        .first_report =
            [this] {
              return RenderStatus(registry_->size() <=
                                          kStatusPageModelsDetailedUnasked
                                      ? std::nullopt
                                      : std::optional<std::string>(""));
            }};
  }
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> metrics_http =
      MetricsHttpServer::Start(
          options_.metrics_listen, [this] { return RenderMetrics(); },
          std::move(status_page));
  if (!metrics_http.ok()) return metrics_http.status();
  metrics_http_ = *std::move(metrics_http);
  return absl::OkStatus();
}

void Server::LogListening() const {
  const ServerOptions& o = options_;
  spdlog::info(
      "event=listening address={} local_socket={} metrics={} tls={} auth={} "
      "data_dir={} "
      "sync={} worker_threads={} realtime_priority={} max_models={} "
      "max_samples_per_model={} "
      "max_message_bytes={} max_queued_samples={}/{}_per_model "
      "max_queue_delay={} max_predictions_in_flight={}/{}_per_model",
      address(), o.local_socket.empty() ? "off" : local_socket_address(),
      metrics_http_ != nullptr ? metrics_address() : "off",
      !o.tls.enabled()              ? "off"
      : o.tls.client_ca_pem.empty() ? "on"
                                    : "mutual",
      o.access_tokens.has_value()
          ? absl::StrCat(o.access_tokens->size(), "_token_holders")
          : "off",
      o.data_dir, o.storage.sync.ToString(), pool_->num_threads(),
      o.realtime_priority, o.limits.max_models, o.limits.max_samples_per_model,
      o.max_message_bytes, o.limits.max_queued_samples,
      o.limits.max_queued_samples_per_model,
      absl::FormatDuration(o.limits.max_queue_delay),
      o.limits.max_predictions_in_flight,
      o.limits.max_predictions_in_flight_per_model);
}

std::shared_ptr<grpc::Channel> Server::InProcessChannel() const {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(
      static_cast<int>(options_.max_message_bytes));
  arguments.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  return grpc_server_->InProcessChannel(arguments);
}

std::string Server::address() const {
  // A local socket is reached at the address it was given (gRPC reports
  // port 1 for it).
  if (absl::StartsWith(options_.listen, "unix:") ||
      absl::StartsWith(options_.listen, "unix-abstract:")) {
    return options_.listen;
  }
  const std::size_t colon = options_.listen.rfind(':');
  return absl::StrCat(options_.listen.substr(0, colon), ":", port_);
}

std::string Server::local_socket_address() const {
  return options_.local_socket.empty()
             ? ""
             : absl::StrCat("unix:", options_.local_socket);
}

std::string Server::RenderStatus(
    const std::optional<std::string>& detail) const {
  std::optional<absl::flat_hash_set<std::string>> detailed;
  if (detail.has_value()) {
    detailed.emplace();
    for (absl::string_view name : absl::StrSplit(*detail, ',')) {
      if (!name.empty()) detailed->emplace(name);
    }
  }
  std::optional<ClusterNode::Report> cluster;
  if (cluster_ != nullptr) cluster = cluster_->report();
  return StatusReportJson(*registry_, metrics_->rpc(), detailed,
                          cluster.has_value() ? &*cluster : nullptr, started_,
                          absl::Now());
}

std::string Server::metrics_address() const {
  return metrics_http_ != nullptr ? metrics_http_->address() : "";
}

void Server::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  spdlog::info("event=draining delay_s={} timeout_s={}",
               absl::ToDoubleSeconds(options_.drain_delay),
               absl::ToDoubleSeconds(options_.drain_timeout));
  health_->SetServing(false);
  absl::SleepFor(options_.drain_delay);
  health_->Shutdown();  // its Watch calls end, and do not hold the drain
  const absl::Time drain_deadline = absl::Now() + options_.drain_timeout;
  // A cluster write still waiting for its replica's apply when the drain
  // times out (its client set no deadline, and the log cannot be read
  // now) is answered UNAVAILABLE then, so that the drain ends.
  std::jthread release_writes;
  if (cluster_ != nullptr) {
    release_writes = std::jthread([this, drain_deadline](std::stop_token stop) {
      if (SleepUntilUnlessStopped(stop, drain_deadline)) {
        cluster_->StopFollowing();
      }
    });
  }
  grpc_server_->Shutdown(absl::ToChronoTime(drain_deadline));
  grpc_server_->Wait();
  queue_thread_->Stop();  // every call's tags are in
  release_writes = {};    // the drain ended: stops it if still waiting
  // Every write has been acknowledged and learned: snapshot what changed
  // and sync the logs.
  reads_pool_->Drain();
  pool_->Drain();
  learning_pool_->Drain();
  cluster_.reset();  // stops following the logs
  storage_->Stop();
  spdlog::info("event=stopped models={}", registry_->size());
}

Server::~Server() {
  if (grpc_server_ != nullptr) Shutdown();
}

}  // namespace streamreg
