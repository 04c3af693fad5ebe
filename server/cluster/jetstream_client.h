#ifndef STREAMREG_SERVER_CLUSTER_JETSTREAM_CLIENT_H_
#define STREAMREG_SERVER_CLUSTER_JETSTREAM_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

// The NATS C client's types, kept out of the includers' way.
typedef struct __natsConnection natsConnection;
typedef struct __jsCtx jsCtx;
typedef struct __natsMsg natsMsg;

namespace streamreg {

// One message of a JetStream stream as a reader gets it: its stream
// sequence, the id it was published under, its bytes. (A model log's
// entries are such messages.)
struct StreamMessage {
  std::uint64_t sequence = 0;
  std::string subject;
  std::string message_id;
  std::string payload;
};
// `message`'s subject, id (its Nats-Msg-Id header, if any) and bytes, at
// `sequence`.
StreamMessage ToStreamMessage(natsMsg* message, std::uint64_t sequence);

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
    // How often the connection pings its node: one that misses two pings
    // in a row (paused, behind a cut link) is taken for gone and another
    // node connected to.
    absl::Duration ping_interval = absl::Seconds(1);
    // The connection's name, as the servers' monitoring shows it.
    std::string name = "streamreg";
    // Reconnects only to `servers`, not to the other nodes the cluster
    // announces (for servers reached through addresses of their own, such
    // as a proxy's; tests use it to cut a client off with its node).
    bool only_listed_servers = false;
  };

  // Connects to one of `options.servers`; UNAVAILABLE if none answers
  // within the request timeout, INVALID_ARGUMENT for no servers.
  static absl::StatusOr<std::unique_ptr<JetStreamClient>> Connect(
      Options options);
  ~JetStreamClient();
  JetStreamClient(const JetStreamClient&) = delete;
  JetStreamClient& operator=(const JetStreamClient&) = delete;

  // A stream as cluster mode makes them: file storage, `replicas` copies.
  struct StreamSpec {
    std::string name;
    std::vector<std::string> subjects;
    int replicas = 3;
    // While fewer NATS nodes are online than `replicas` (one stopped for
    // maintenance: nats-server then places no stream on it), the stream is
    // made with as many copies as there are nodes, down to this many (0:
    // `replicas`), and RestoreReplicas gives it the rest later.
    int min_replicas = 0;
    // How long message ids are remembered for deduplication (0: the
    // server's default, 2 min).
    absl::Duration duplicate_window = absl::ZeroDuration();
  };
  // Creates the stream, or opens it if it exists (made before, by this
  // server or another). `what` names it in errors. A stream's creation is
  // answered once its first leader is elected; `wait` (0: the request
  // timeout) bounds how long that is waited for.
  absl::Status EnsureStream(const StreamSpec& spec, absl::string_view what,
                            absl::Duration wait = absl::ZeroDuration());
  // Gives a stream made with fewer copies than spec.replicas (see
  // min_replicas) the rest, which NATS then fills in the background. OK
  // when it has them all; UNAVAILABLE while the cluster still cannot place
  // them.
  absl::Status RestoreReplicas(const StreamSpec& spec, absl::string_view what);
  // Deletes a stream and everything in it (OK if there is none), waiting
  // up to `wait` (0: the request timeout) for the answer. A stream that
  // never elected a leader is deleted but never answered for: the request
  // times out, and asking again finds it gone.
  absl::Status DeleteStream(const std::string& stream,
                            absl::Duration wait = absl::ZeroDuration());
  // The names of every stream of the NATS cluster (asked of its metadata
  // leader). `what` names the listing in errors.
  absl::StatusOr<std::vector<std::string>> StreamNames(
      absl::string_view what) const;
  // Removes the messages of `stream` before sequence `keep_from`; nothing
  // when keep_from <= 1 (nats-server reads a purge up to sequence 1 as a
  // purge of everything).
  absl::Status PurgeBefore(const std::string& stream, std::uint64_t keep_from,
                           absl::string_view what);
  // What a stream holds now: its first and last sequence, and, with a
  // `subjects` filter, each matching subject that holds messages and how
  // many. Answered by the stream's leader (no consumer is made). `what`
  // names it in errors.
  struct StreamState {
    std::uint64_t first = 0;  // LastSequence + 1 for an empty stream
    std::uint64_t last = 0;
    int replicas = 0;  // the copies it is configured with
    std::vector<std::pair<std::string, std::uint64_t>> subjects;
  };
  absl::StatusOr<StreamState> State(const std::string& stream,
                                    const std::string& subjects,
                                    absl::string_view what) const;
  // The message at `sequence` of `stream`, answered by the stream's leader
  // (no consumer is made, so the cluster's metadata leader is not asked):
  // NOT_FOUND if there is none (not stored yet, or purged). `what` names
  // it in errors.
  absl::StatusOr<StreamMessage> Get(const std::string& stream,
                                    std::uint64_t sequence,
                                    absl::string_view what) const;
  // Publishes `payload` to `subject` under `message_id`, expecting it to
  // land in `stream`, and waits for the publish ack: its stream sequence,
  // or that of the message first stored under that id (duplicate).
  struct Published {
    std::uint64_t sequence = 0;
    bool duplicate = false;
  };
  absl::StatusOr<Published> Publish(const std::string& stream,
                                    const std::string& subject,
                                    const std::string& message_id,
                                    absl::string_view payload);

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
// absl::Status naming what was being done: timeouts, lost connections and
// network errors are UNAVAILABLE (retry), a missing stream or message
// NOT_FOUND, the rest INTERNAL.
absl::Status NatsError(int nats_status, int jetstream_code,
                       absl::string_view what);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_JETSTREAM_CLIENT_H_
