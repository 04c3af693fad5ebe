#ifndef STREAMREG_SERVER_CLUSTER_JETSTREAM_CLIENT_H_
#define STREAMREG_SERVER_CLUSTER_JETSTREAM_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

// The NATS C client's types, kept out of the includers' way.
typedef struct __natsConnection natsConnection;
typedef struct __jsCtx jsCtx;

namespace streamreg {

// A connection to a NATS cluster and its JetStream context: what cluster
// mode's replicated logs are written and read through (docs/cluster.md).
// It reconnects on its own, to any of the servers it was given or learned
// of, for as long as it lives; a request made while it is reconnecting
// waits up to the request timeout and then fails UNAVAILABLE, so callers
// retry (appends are deduplicated by message id).
class JetStreamClient {
 public:
  struct Options {
    // nats://host:port of one or more servers of the cluster.
    std::vector<std::string> servers;
    // How long a request (an append's publish ack, a stream operation)
    // waits for its answer.
    absl::Duration request_timeout = absl::Seconds(5);
    // The connection's name, as the servers' monitoring shows it.
    std::string name = "streamreg";
  };

  // Connects to one of `options.servers`; UNAVAILABLE if none answers
  // within the request timeout, INVALID_ARGUMENT for no servers.
  static absl::StatusOr<std::unique_ptr<JetStreamClient>> Connect(
      Options options);
  ~JetStreamClient();
  JetStreamClient(const JetStreamClient&) = delete;
  JetStreamClient& operator=(const JetStreamClient&) = delete;

  const Options& options() const { return options_; }
  // Thread-safe: the C client serializes what needs it.
  natsConnection* connection() const { return connection_; }
  jsCtx* jetstream() const { return jetstream_; }

 private:
  JetStreamClient(Options options, natsConnection* connection,
                  jsCtx* jetstream);

  const Options options_;
  natsConnection* const connection_;
  jsCtx* const jetstream_;
};

// A NATS client status (and, for JetStream calls, its API error code) as an
// absl::Status naming what was being done: timeouts and lost connections
// are UNAVAILABLE (retry), a missing stream or message NOT_FOUND, the rest
// INTERNAL.
absl::Status NatsError(int nats_status, int jetstream_code,
                       absl::string_view what);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_JETSTREAM_CLIENT_H_
