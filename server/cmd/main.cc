// streamreg-server: hosts streamreg models over gRPC until SIGTERM/SIGINT,
// then drains and exits 0. SIGHUP rereads the --auth_tokens file.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "common/file_contents.h"
#include "server/cmd/allocator_tuning.h"
#include "server/rpc/server.h"
#include "server/telemetry/logging.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "host:port to serve gRPC on (port 0: any free port)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "host:port to serve Prometheus metrics on, at /metrics (port 0: "
          "any free port; empty: no metrics endpoint)");
ABSL_FLAG(std::string, data_dir, "streamreg-data",
          "data directory (created if missing; locked while running)");
ABSL_FLAG(std::size_t, max_models, 1000, "most models the server holds");
ABSL_FLAG(std::uint64_t, max_samples_per_model, 10'000'000,
          "most samples a model stores (0: no limit)");
ABSL_FLAG(std::size_t, max_message_bytes, 64 << 20,
          "largest request or response message, bytes");
ABSL_FLAG(std::size_t, dedup_window, 65536,
          "sample ids remembered per model, so retried batches are not "
          "learned twice");
ABSL_FLAG(std::size_t, worker_threads, 0,
          "threads acknowledging model writes, and as many learning them "
          "(0: one per core each)");
ABSL_FLAG(absl::Duration, drain_delay, absl::ZeroDuration(),
          "on SIGTERM, how long health reports NOT_SERVING before the "
          "listener closes");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "on SIGTERM, how long calls in flight may finish before they are "
          "cancelled");
ABSL_FLAG(std::string, sync, "always",
          "when the write-ahead log is fsynced: 'always' (before every "
          "acknowledgement: nothing acknowledged is ever lost) or "
          "'interval:MS' (all logs together every MS ms: a crash of the "
          "process loses nothing acknowledged, a power cut at most MS ms)");
ABSL_FLAG(std::uint64_t, snapshot_every_samples, 100'000,
          "snapshot a model after this many new samples (in cluster mode, "
          "into JetStream, compacting its log)");
ABSL_FLAG(absl::Duration, snapshot_interval, absl::Minutes(10),
          "snapshot a model with unsaved writes this long after the last");
ABSL_FLAG(std::uint64_t, wal_segment_bytes, 64 << 20,
          "start a new write-ahead log segment past this size");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off");
ABSL_FLAG(std::string, log_format, "text", "text (logfmt) or json");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain: serve TLS only (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, auth_tokens, "",
          "file of bearer tokens and their permissions (lines 'NAME TOKEN "
          "read,write,admin PREFIX...'; see deploy/README.md): every call "
          "but health and reflection must present one; reread on SIGHUP");
ABSL_FLAG(std::string, cluster, "",
          "cluster mode: nats://HOST:PORT,... of NATS JetStream nodes that "
          "hold the models' replicated logs and placements (docs/cluster.md); "
          "empty: a single server, its models in --data_dir");
ABSL_FLAG(std::string, advertise, "",
          "cluster mode: HOST:PORT clients reach this server at (empty: the "
          "--listen address with the port in use)");
ABSL_FLAG(int, cluster_replicas, 3, "cluster mode: servers serving each model");
ABSL_FLAG(int, cluster_log_replicas, 3,
          "cluster mode: copies NATS JetStream keeps of each model's log and "
          "of the placements (at most the NATS cluster's size; 3 ride out a "
          "NATS node down)");
ABSL_FLAG(absl::Duration, cluster_server_ttl, absl::Seconds(5),
          "cluster mode: a server silent this long is taken for gone and its "
          "models placed elsewhere");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: require client certificates they signed "
          "(mutual TLS; needs --tls_cert)");

namespace streamreg {
namespace {

int signal_pipe[2] = {-1, -1};

void OnSignal(int signal_number) {
  const int saved_errno = errno;
  [[maybe_unused]] const ssize_t written =
      write(signal_pipe[1], &signal_number, sizeof signal_number);
  errno = saved_errno;
}

absl::StatusOr<ServerTls> TlsFromFlags() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  const std::string client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  ServerTls tls;
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key: give both or neither");
  }
  if (!client_ca.empty() && cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca: needs --tls_cert and --tls_key");
  }
  if (absl::Status status =
          ReadFlagFiles({{cert, "--tls_cert", &tls.cert_chain_pem},
                         {key, "--tls_key", &tls.private_key_pem},
                         {client_ca, "--tls_client_ca", &tls.client_ca_pem}});
      !status.ok()) {
    return status;
  }
  return tls;
}

absl::StatusOr<ServerOptions> OptionsFromFlags() {
  ServerOptions options;
  absl::StatusOr<SyncPolicy> sync =
      SyncPolicy::Parse(absl::GetFlag(FLAGS_sync));
  if (!sync.ok()) return sync.status();
  options.storage.sync = *sync;
  options.storage.snapshot_every_samples =
      absl::GetFlag(FLAGS_snapshot_every_samples);
  options.storage.snapshot_interval = absl::GetFlag(FLAGS_snapshot_interval);
  options.storage.segment_bytes = absl::GetFlag(FLAGS_wal_segment_bytes);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.limits.max_models = absl::GetFlag(FLAGS_max_models);
  options.limits.max_samples_per_model =
      absl::GetFlag(FLAGS_max_samples_per_model);
  options.limits.dedup_window = absl::GetFlag(FLAGS_dedup_window);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  options.drain_delay = absl::GetFlag(FLAGS_drain_delay);
  options.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  absl::StatusOr<ServerTls> tls = TlsFromFlags();
  if (!tls.ok()) return tls.status();
  options.tls = *std::move(tls);
  if (const std::string path = absl::GetFlag(FLAGS_auth_tokens);
      !path.empty()) {
    absl::StatusOr<AccessTokens> tokens = AccessTokens::Load(path);
    if (!tokens.ok()) return tokens.status();
    options.access_tokens = *std::move(tokens);
  }
  if (const std::string nats = absl::GetFlag(FLAGS_cluster); !nats.empty()) {
    ClusterOptions cluster;
    cluster.nats = absl::StrSplit(nats, ',', absl::SkipEmpty());
    cluster.advertise = absl::GetFlag(FLAGS_advertise);
    cluster.replicas = absl::GetFlag(FLAGS_cluster_replicas);
    cluster.log_replicas = absl::GetFlag(FLAGS_cluster_log_replicas);
    cluster.server_ttl = absl::GetFlag(FLAGS_cluster_server_ttl);
    cluster.snapshot_every_samples =
        absl::GetFlag(FLAGS_snapshot_every_samples);
    cluster.snapshot_interval = absl::GetFlag(FLAGS_snapshot_interval);
    if (cluster.replicas < 1) {
      return absl::InvalidArgumentError("--cluster_replicas: must be >= 1");
    }
    if (cluster.log_replicas < 1 || cluster.log_replicas > 5) {
      return absl::InvalidArgumentError(
          "--cluster_log_replicas: must be 1 to 5 (JetStream's limit)");
    }
    if (cluster.server_ttl < absl::Seconds(1)) {
      return absl::InvalidArgumentError(
          "--cluster_server_ttl: must be at least 1s");
    }
    cluster.reconcile_interval =
        std::min(absl::Milliseconds(250), cluster.server_ttl / 4);
    options.cluster = std::move(cluster);
  }
  return options;
}

// SIGHUP: the --auth_tokens file again. A file that does not parse leaves
// the tokens as they were (refusing everyone would stop the robots).
void ReloadAccessTokens(Server& server) {
  const std::string path = absl::GetFlag(FLAGS_auth_tokens);
  if (path.empty()) {
    spdlog::info("event=sighup_ignored reason=\"no --auth_tokens\"");
    return;
  }
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Load(path);
  if (!tokens.ok()) {
    spdlog::error("event=auth_tokens_reload_failed error=\"{}\"",
                  std::string(tokens.status().message()));
    return;
  }
  const std::size_t holders = tokens->size();
  server.ReplaceAccessTokens(*std::move(tokens));
  spdlog::info("event=auth_tokens_reloaded token_holders={}", holders);
}

int Main() {
  TuneAllocatorForServer();
  if (absl::Status status = SetUpLogging(absl::GetFlag(FLAGS_log_level),
                                         absl::GetFlag(FLAGS_log_format));
      !status.ok()) {
    std::fprintf(stderr, "streamreg-server: %s\n",
                 std::string(status.message()).c_str());
    return 2;
  }
  // SIGTERM/SIGINT/SIGHUP, whichever thread they arrive on, are written to
  // a pipe the main thread waits on (gRPC may have started threads already).
  if (pipe2(signal_pipe, O_CLOEXEC) != 0) {
    std::perror("streamreg-server: pipe");
    return 1;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);

  absl::StatusOr<ServerOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::fprintf(stderr, "streamreg-server: %s\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(*std::move(options));
  if (!server.ok()) {
    spdlog::error("event=start_failed error=\"{}\"",
                  std::string(server.status().message()));
    return 1;
  }
  // The lines scripts and tests wait for (the listening one last).
  if (const std::string metrics = (*server)->metrics_address();
      !metrics.empty()) {
    std::printf("streamreg-server metrics on http://%s/metrics\n",
                metrics.c_str());
  }
  std::printf("streamreg-server listening on %s\n",
              (*server)->address().c_str());
  std::fflush(stdout);
  for (;;) {
    int signal_number = 0;
    const ssize_t got =
        read(signal_pipe[0], &signal_number, sizeof signal_number);
    if (got < 0 && errno == EINTR) continue;
    if (got == sizeof signal_number && signal_number == SIGHUP) {
      ReloadAccessTokens(**server);
      continue;
    }
    spdlog::info("event=signal signal={}", strsignal(signal_number));
    break;
  }
  (*server)->Shutdown();
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = "streamreg-server",
      .synopsis =
          "[--listen HOST:PORT] [--data-dir DIR] [--config FILE] "
          "[flags]",
      .summary =
          "Hosts streamreg models over gRPC (streamreg.v1 ModelService and "
          "RegressionService, grpc.health.v1, reflection) until SIGTERM or "
          "SIGINT, then drains and exits 0. Every write is in the model's "
          "write-ahead log before it is acknowledged; models are recovered "
          "from the data directory at start. SIGHUP rereads --auth-tokens.",
      .flags = streamreg::FlagsDefinedIn({"server/cmd/main.cc"}),
      .examples = {"streamreg-server --listen 127.0.0.1:50051 --data-dir "
                   "streamreg-data",
                   "streamreg-server --listen 0.0.0.0:50051 --sync interval:5 "
                   "--tls-cert server.pem --tls-key server.key"},
      .config_file = true,
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  return streamreg::Main();
}
