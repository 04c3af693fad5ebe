#ifndef STREAMREG_SERVER_CLUSTER_STREAM_CURSOR_H_
#define STREAMREG_SERVER_CLUSTER_STREAM_CURSOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/cluster/jetstream_client.h"

namespace streamreg {

// Reads the messages of one subject of a stream in order from a sequence
// on, as they arrive: an ephemeral consumer that the server pushes to with
// flow control (no request per message). A message lost, or the
// consumer's server gone (its heartbeats stopped), breaks the cursor: it
// answers UNAVAILABLE from then on, and its reader follows the stream
// afresh from where it is. What a model's follower reads its log with,
// the placements their proposals, and a server hosting a model its
// snapshot's chunks.
class StreamCursor {
 public:
  // The messages of `subject` in `stream` from sequence `from` on (from
  // the first one kept if it was purged). `client` must outlive it.
  static absl::StatusOr<StreamCursor> Open(const JetStreamClient& client,
                                           const std::string& stream,
                                           const std::string& subject,
                                           std::uint64_t from);
  ~StreamCursor();
  StreamCursor(StreamCursor&& other) noexcept;
  StreamCursor& operator=(StreamCursor&&) = delete;

  // The next message, waiting up to `timeout` for it: DEADLINE_EXCEEDED
  // when none came, UNAVAILABLE while the cluster cannot deliver or once
  // the cursor broke.
  absl::StatusOr<StreamMessage> Next(absl::Duration timeout);
  // The next message when it is known to be stored (a log's entry up to
  // its last sequence, a snapshot's chunk): not coming within the
  // client's request timeout is the cluster's unavailability (UNAVAILABLE).
  absl::StatusOr<StreamMessage> NextStored();

 private:
  StreamCursor(void* subscription, std::string stream,
               absl::Duration request_timeout)
      : subscription_(subscription),
        stream_(std::move(stream)),
        request_timeout_(request_timeout) {}

  // Marks the cursor broken for `why`: this and every later read answer
  // UNAVAILABLE.
  absl::Status Broken(absl::string_view why);

  void* subscription_;  // natsSubscription
  std::string stream_;
  absl::Duration request_timeout_;
  std::uint64_t delivered_ = 0;  // the consumer's last delivery number
  std::string broken_;           // why it broke; empty while it reads on
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_STREAM_CURSOR_H_
