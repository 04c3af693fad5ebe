// streamreg-server's flags, and the Server's options they make.
#include "server/cmd/server_flags.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/file_contents.h"
#include "core/base/realtime_priority.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "host:port to serve gRPC on (port 0: any free port), or unix:PATH "
          "for a local socket");
ABSL_FLAG(std::string, local_socket, "",
          "also serve gRPC on a local socket at this path (clients on this "
          "machine dial unix:PATH; a file at the path is replaced)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "host:port to serve Prometheus metrics on, at /metrics (port 0: "
          "any free port; empty: no metrics endpoint)");
ABSL_FLAG(bool, status_page, true,
          "serve the live status page at / of --metrics_listen (models, "
          "learning curves, learned metrics; no other access control than "
          "the metrics port's)");
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
ABSL_FLAG(std::uint64_t, max_queued_samples, 1 << 15,
          "overload: samples received and not yet logged and answered, on "
          "the whole server, past which writes are refused at once with "
          "RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(std::uint64_t, max_queued_samples_per_model, 1 << 13,
          "overload: the same, per model (Ingest batches; a Learn stream's "
          "sample counts in the server's limit only)");
ABSL_FLAG(absl::Duration, max_queue_delay, absl::Seconds(1),
          "overload: a model's queued samples are also limited to what it "
          "learns in this long, at the rate it learns now, so what is "
          "admitted waits about this long at most (0: the counts only)");
ABSL_FLAG(std::uint64_t, max_predictions_in_flight, 8,
          "overload: Predict requests and PredictStream messages being "
          "answered on the whole server (and GetModel, ListModels, "
          "GetMetric), past which more are refused at once with "
          "RESOURCE_EXHAUSTED (0: no limit); as many threads answer them "
          "(a read waiting for its model to learn what it must see counts "
          "in its model's limit alone, holding no thread)");
ABSL_FLAG(std::uint64_t, max_predictions_in_flight_per_model, 8,
          "overload: Predict requests and PredictStream messages being "
          "answered, per model (and GetModel, GetMetric)");
ABSL_FLAG(std::uint32_t, max_concurrent_streams, 32,
          "calls one client connection may have open at once (HTTP/2 "
          "SETTINGS_MAX_CONCURRENT_STREAMS; further calls wait at the client)");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(30),
          "ping a client connection silent this long, and close it if the "
          "ping is not answered in 10 s (a client gone without closing); "
          "clients may ping at most every 10 s");
ABSL_FLAG(std::size_t, worker_threads, 0,
          "threads acknowledging model writes, and as many learning them "
          "(0: one per core each)");
ABSL_FLAG(int, realtime_priority, 0,
          "run the threads that answer Learn streams (gRPC's) at this "
          "SCHED_FIFO priority, 1 to 99, so that a control loop's answers do "
          "not wait behind learning or other processes on a busy machine; "
          "needs CAP_SYS_NICE or an RLIMIT_RTPRIO at least this high (0: "
          "normal scheduling)");
ABSL_FLAG(std::string, take_over, "logged",
          "when a new model's background work (metric refreshes, MLKR fits, "
          "index rebuilds) takes over: logged (once done, recorded in the "
          "model's log: learning never waits for it) or fixed_count (at fixed "
          "sample counts, learning waiting there: results depend on the "
          "samples alone); a model keeps the rule it was created with");
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
          "NATS node down; a model's log made while nodes are shut down has "
          "a majority of them until they are back)");
ABSL_FLAG(absl::Duration, cluster_server_ttl, absl::Seconds(5),
          "cluster mode: a server silent this long is taken for gone and its "
          "models placed elsewhere");
ABSL_FLAG(std::uint64_t, cluster_snapshot_increment_samples, 10'000,
          "cluster mode: between whole snapshots, put an increment (the "
          "model's state and the samples since the snapshot before) after "
          "this many new samples, so that a crash leaves about this many to "
          "replay; 0: whole snapshots only");
ABSL_FLAG(absl::Duration, learn_linger, absl::Milliseconds(5),
          "under --sync=always, how long a Learn stream's sample may wait "
          "to be reported durable, so that the samples logged meanwhile "
          "share one fsync (0 to 100ms; 0: an fsync per group). The sample "
          "is logged and learned at once and its answer sent before; only "
          "the durability report (durable_messages) waits. (Cluster mode: "
          "--cluster_learn_linger.)");
ABSL_FLAG(absl::Duration, cluster_learn_linger, absl::Milliseconds(2),
          "cluster mode: how long a Learn stream's sample waits for others "
          "to join its append to the model's log (fewer, larger appends: "
          "each costs every NATS node and every replica CPU time); answers "
          "do not wait, durability reports and learning do; 0: none");
ABSL_FLAG(bool, cluster_snapshot_on_leave, true,
          "cluster mode: on stopping, snapshot each model this server "
          "snapshots and that learned samples since (whoever hosts it next "
          "replays none of them)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: require client certificates they signed "
          "(mutual TLS; needs --tls_cert)");

namespace streamreg {
namespace {

absl::StatusOr<ServerTls> TlsFromFlags() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  const std::string client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  ServerTls tls;
  if (cert.empty() != key.empty()) {
    return UsageError("--tls_cert and --tls_key: give both or neither");
  }
  if (!client_ca.empty() && cert.empty()) {
    return UsageError("--tls_client_ca: needs --tls_cert and --tls_key");
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

absl::StatusOr<ServerOptions> OptionsOfFlags() {
  ServerOptions options;
  absl::StatusOr<SyncPolicy> sync =
      SyncPolicy::Parse(absl::GetFlag(FLAGS_sync));
  if (!sync.ok()) return sync.status();
  options.storage.sync = *sync;
  options.storage.snapshot_every_samples =
      absl::GetFlag(FLAGS_snapshot_every_samples);
  options.storage.snapshot_interval = absl::GetFlag(FLAGS_snapshot_interval);
  options.storage.learn_linger = absl::GetFlag(FLAGS_learn_linger);
  options.storage.segment_bytes = absl::GetFlag(FLAGS_wal_segment_bytes);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.local_socket = absl::GetFlag(FLAGS_local_socket);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.status_page = absl::GetFlag(FLAGS_status_page);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.limits.max_models = absl::GetFlag(FLAGS_max_models);
  options.limits.max_samples_per_model =
      absl::GetFlag(FLAGS_max_samples_per_model);
  options.limits.dedup_window = absl::GetFlag(FLAGS_dedup_window);
  options.limits.max_queued_samples = absl::GetFlag(FLAGS_max_queued_samples);
  options.limits.max_queued_samples_per_model =
      absl::GetFlag(FLAGS_max_queued_samples_per_model);
  options.limits.max_queue_delay = absl::GetFlag(FLAGS_max_queue_delay);
  options.limits.max_predictions_in_flight =
      absl::GetFlag(FLAGS_max_predictions_in_flight);
  options.limits.max_predictions_in_flight_per_model =
      absl::GetFlag(FLAGS_max_predictions_in_flight_per_model);
  options.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  options.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  options.realtime_priority = absl::GetFlag(FLAGS_realtime_priority);
  absl::StatusOr<TakeOverRule> take_over =
      ParseTakeOverRule(absl::GetFlag(FLAGS_take_over), "--take_over");
  if (!take_over.ok()) return take_over.status();
  options.take_over = *take_over;
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
    cluster.snapshot_on_leave = absl::GetFlag(FLAGS_cluster_snapshot_on_leave);
    cluster.learn_linger = absl::GetFlag(FLAGS_cluster_learn_linger);
    cluster.snapshot_increment_samples =
        absl::GetFlag(FLAGS_cluster_snapshot_increment_samples);
    cluster.reconcile_interval =
        std::min(absl::Milliseconds(250), cluster.server_ttl / 4);
    options.cluster = std::move(cluster);
  }
  return options;
}

// OK if `value` is in [low, high], else INVALID_ARGUMENT naming `flag`.
template <typename T>
absl::Status CheckRange(absl::string_view flag, T value, T low, T high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return UsageError(absl::StrCat("--", flag, ": must be ", low, " to ", high,
                                 ", got ", value));
}

absl::Status CheckDuration(absl::string_view flag, absl::Duration value,
                           absl::Duration low, absl::Duration high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return UsageError(absl::StrCat(
      "--", flag, ": must be ", absl::FormatDuration(low), " to ",
      absl::FormatDuration(high), ", got ", absl::FormatDuration(value)));
}

}  // namespace

absl::Status CheckServerOptions(const ServerOptions& o) {
  const std::vector<absl::Status> checks = {
      CheckRange<std::uint64_t>("max_models", o.limits.max_models, 1,
                                1'000'000),
      CheckRange<std::uint64_t>("max_message_bytes", o.max_message_bytes, 1024,
                                std::numeric_limits<int>::max()),
      CheckRange<std::uint64_t>("dedup_window", o.limits.dedup_window, 0,
                                16 << 20),
      CheckRange<std::uint64_t>("max_queued_samples",
                                o.limits.max_queued_samples, 0,
                                std::uint64_t{1} << 40),
      CheckRange<std::uint64_t>("max_queued_samples_per_model",
                                o.limits.max_queued_samples_per_model, 0,
                                std::uint64_t{1} << 40),
      CheckDuration("max_queue_delay", o.limits.max_queue_delay,
                    absl::ZeroDuration(), absl::Minutes(10)),
      CheckDuration("learn_linger", o.storage.learn_linger,
                    absl::ZeroDuration(), absl::Milliseconds(100)),
      CheckRange<std::uint64_t>("max_predictions_in_flight",
                                o.limits.max_predictions_in_flight, 0,
                                1'000'000),
      CheckRange<std::uint64_t>("max_predictions_in_flight_per_model",
                                o.limits.max_predictions_in_flight_per_model, 0,
                                1'000'000),
      CheckRange<std::uint64_t>("max_concurrent_streams",
                                o.max_concurrent_streams, 1,
                                std::numeric_limits<int>::max()),
      CheckDuration("keepalive_time", o.keepalive_time, absl::Seconds(10),
                    absl::Hours(24)),
      CheckRange<std::uint64_t>("worker_threads", o.worker_threads, 0, 256),
      CheckRange<std::int64_t>("realtime_priority", o.realtime_priority, 0,
                               kHighestRealtimePriority),
      CheckDuration("drain_delay", o.drain_delay, absl::ZeroDuration(),
                    absl::Hours(1)),
      CheckDuration("drain_timeout", o.drain_timeout, absl::ZeroDuration(),
                    absl::Hours(1)),
      CheckRange<std::uint64_t>("snapshot_every_samples",
                                o.storage.snapshot_every_samples, 1,
                                std::numeric_limits<std::uint64_t>::max()),
      CheckDuration("snapshot_interval", o.storage.snapshot_interval,
                    absl::Seconds(1), absl::InfiniteDuration()),
      CheckRange<std::uint64_t>("wal_segment_bytes", o.storage.segment_bytes,
                                4096, std::uint64_t{1} << 40),
  };
  for (const absl::Status& status : checks) {
    if (!status.ok()) return status;
  }
  if (o.cluster.has_value()) {
    const ClusterOptions& cluster = *o.cluster;
    if (absl::Status status =
            CheckRange("cluster_replicas", cluster.replicas, 1, 100);
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            CheckRange("cluster_log_replicas", cluster.log_replicas, 1, 5);
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            CheckDuration("cluster_server_ttl", cluster.server_ttl,
                          absl::Seconds(1), absl::Hours(1));
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            CheckDuration("cluster_learn_linger", cluster.learn_linger,
                          absl::ZeroDuration(), absl::Milliseconds(100));
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerOptions> ServerOptionsFromFlags() {
  absl::StatusOr<ServerOptions> options = OptionsOfFlags();
  if (!options.ok()) return options.status();
  if (absl::Status status = CheckServerOptions(*options); !status.ok()) {
    return status;
  }
  return options;
}

}  // namespace streamreg
