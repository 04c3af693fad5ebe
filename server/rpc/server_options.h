#ifndef STREAMREG_SERVER_RPC_SERVER_OPTIONS_H_
#define STREAMREG_SERVER_RPC_SERVER_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "server/auth/access_tokens.h"
#include "server/cluster/cluster_node.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/model_storage.h"

namespace streamreg {

// TLS on the listening port, as PEM text. With a certificate chain and its
// key the port serves TLS only; with client_ca too, every client must
// present a certificate that CA signed (mutual TLS). All empty: plaintext.
struct ServerTls {
  std::string cert_chain_pem;
  std::string private_key_pem;
  std::string client_ca_pem;

  bool enabled() const { return !cert_chain_pem.empty(); }
};

// Everything a Server is started with (streamreg-server's flags).
struct ServerOptions {
  // host:port; port 0 picks a free one (Server::port() tells which); or
  // unix:PATH, a local socket.
  std::string listen = "127.0.0.1:50051";
  // A local socket served besides `listen` (a path; empty: none), for
  // clients on the same machine, such as a robot's controller: they dial
  // unix:PATH. A file at the path is replaced.
  std::string local_socket;
  std::string data_dir = "streamreg-data";
  RegistryLimits limits;
  // Durability: the sync policy, log segments, snapshots (and the file
  // system, which tests replace to inject failures).
  StorageOptions storage;
  // Largest request or response message, bytes (larger ones fail with
  // RESOURCE_EXHAUSTED).
  std::size_t max_message_bytes = 64 << 20;
  // Calls one client connection may have open at once (HTTP/2
  // SETTINGS_MAX_CONCURRENT_STREAMS).
  std::uint32_t max_concurrent_streams = 32;
  // A connection silent this long is pinged, and closed if the ping is not
  // answered within kKeepaliveTimeout (a client gone without closing: its
  // calls are cancelled, what they hold is freed). Clients may ping at
  // most every kMinClientPingInterval; gRPC closes a connection that pings
  // more often.
  absl::Duration keepalive_time = absl::Seconds(30);
  static constexpr absl::Duration kKeepaliveTimeout = absl::Seconds(10);
  static constexpr absl::Duration kMinClientPingInterval = absl::Seconds(10);
  // Threads acknowledging model writes (logging, answering), and as many
  // learning them; 0 = one per core each.
  std::size_t worker_threads = 0;
  // The SCHED_FIFO priority of the threads answering Learn streams
  // (gRPC's: docs/threading.md, "Real-time answers"), 1 to 99; 0: normal
  // scheduling. Server::Create fails if the system refuses it.
  int realtime_priority = 0;
  // On shutdown: health reports NOT_SERVING for drain_delay (for load
  // balancers to notice) before the listener closes; calls in flight then
  // have drain_timeout to finish before they are cancelled.
  absl::Duration drain_delay = absl::ZeroDuration();
  absl::Duration drain_timeout = absl::Seconds(10);
  ServerTls tls;
  // host:port of the Prometheus endpoint (GET /metrics); port 0: any free
  // port; empty: none. (streamreg-server's --metrics_listen defaults to
  // 127.0.0.1:9464.)
  std::string metrics_listen;
  // Whether that port also serves the status page at / (docs/api.md, "The
  // status page"); its exposure is the metrics port's.
  bool status_page = true;
  // Bearer tokens every call (but health and reflection) must present;
  // none: no access control.
  std::optional<AccessTokens> access_tokens;
  // When the background work of the models this server creates takes
  // over (core/model/take_over_key.h): kLogged, once done and recorded in
  // the model's log, so that learning never waits for it; kFixedCount, at
  // fixed sample counts, learning waiting for it there, so that a model's
  // results depend on its samples alone (those of a Model fed the same
  // samples). A model keeps the rule it was created with.
  TakeOverRule take_over = TakeOverRule::kLogged;
  // Cluster mode (docs/cluster.md): the models live in replicated logs on
  // NATS JetStream, and this server serves those placed on it (nothing is
  // kept in the data directory). An empty `advertise` is the listening
  // address. None: a single server, its models in the data directory.
  std::optional<ClusterOptions> cluster;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_SERVER_OPTIONS_H_
