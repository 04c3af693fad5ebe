#ifndef STREAMREG_SERVER_CLUSTER_LOG_STREAM_H_
#define STREAMREG_SERVER_CLUSTER_LOG_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/stream_cursor.h"

namespace streamreg {

// One entry of a model's replicated log: its position (JetStream's stream
// sequence, consecutive from 1), the id it was appended under, its bytes.
using LogEntry = StreamMessage;

// One model's replicated log in cluster mode (docs/cluster.md): a JetStream
// stream of its own, file storage, `replicas` copies, one subject. An
// append is acknowledged only once JetStream has stored it on a quorum of
// the replicas (its publish ack), and entries are appended under a message
// id (model and sample id), so a client's retry within the duplicate window
// is recognised and not stored twice. Every server that serves the model
// reads the same entries in the same order, which makes its replicas of
// the model identical.
//
// Thread-compatible: one writer at a time; Read may run beside it.
class LogStream {
 public:
  struct Options {
    int replicas = 3;
    // The fewest copies it is made with while NATS nodes are offline (0:
    // `replicas`); RestoreReplicas adds the rest.
    int min_replicas = 0;
    // How long JetStream remembers message ids for deduplication.
    absl::Duration duplicate_window = absl::Minutes(2);
  };
  struct Appended {
    std::uint64_t sequence = 0;  // of the entry, or of its first copy
    bool duplicate = false;      // the id was appended before
  };

  // The log of `model` (a valid model name) of `generation` (see
  // StreamName), its stream created with `options` if it does not exist
  // yet, waiting up to `wait` (0: the client's request timeout) for a new
  // stream's first leader. `client` must outlive it.
  static absl::StatusOr<LogStream> Open(
      JetStreamClient& client, absl::string_view model, Options options,
      std::uint64_t generation = 0, absl::Duration wait = absl::ZeroDuration());
  // The same for a log of another purpose (the placements'), by its
  // stream and subject, which no model's may be.
  static absl::StatusOr<LogStream> OpenStream(JetStreamClient& client,
                                              std::string stream,
                                              std::string subject,
                                              Options options);
  // The log of `model` without making its stream (nor asking the cluster
  // anything yet): what a server hosting a model that another one created
  // reads. Its reads answer NOT_FOUND while the stream does not exist.
  static LogStream Attach(JetStreamClient& client, absl::string_view model,
                          Options options, std::uint64_t generation = 0);

  // Makes the log's stream with its options, or finds it made, waiting up
  // to `wait` (0: the client's request timeout) for a new stream's first
  // leader (what Open does after Attach).
  absl::Status Ensure(absl::Duration wait);

  // Appends `payload` under `message_id` and waits for the publish ack.
  // UNAVAILABLE when no quorum answered within the client's request timeout:
  // the entry may or may not be stored, and appending it again under the
  // same id is safe.
  absl::StatusOr<Appended> Append(absl::string_view message_id,
                                  absl::string_view payload);

  // Reads the log in order from a sequence on, as entries arrive.
  using Cursor = StreamCursor;
  absl::StatusOr<Cursor> Follow(std::uint64_t from) const;

  // The entries from sequence `from` on, in order, at most `max`, of those
  // stored when it is called (from the first entry kept, if `from` was
  // compacted away).
  absl::Status Read(std::uint64_t from, std::size_t max,
                    std::vector<LogEntry>* out) const;
  // The entry at `sequence` alone, from the stream's leader without a
  // consumer (whose creation needs the cluster's metadata leader and a
  // peer of its own); NOT_FOUND if it is not stored (not appended yet, or
  // compacted away).
  absl::StatusOr<LogEntry> Entry(std::uint64_t sequence) const;
  // The sequence of the last entry (0 for an empty log).
  absl::StatusOr<std::uint64_t> LastSequence() const;
  // Removes the entries up to `through` (inclusive), which a snapshot
  // includes; later entries keep their sequences. A reader from an earlier
  // sequence then starts at the first entry kept.
  absl::Status Compact(std::uint64_t through);
  // The sequence of the first entry kept (LastSequence() + 1 when none is).
  absl::StatusOr<std::uint64_t> FirstSequence() const;
  // Both at once.
  struct Bounds {
    std::uint64_t first = 1;  // first entry kept
    std::uint64_t last = 0;   // last entry appended (0: none)
  };
  absl::StatusOr<Bounds> StoredBounds() const;
  // Gives a log made with fewer copies than its options ask for (a NATS
  // node was offline) the rest; OK once it has them, UNAVAILABLE while the
  // cluster cannot place them yet.
  absl::Status RestoreReplicas();
  // Deletes the stream and everything in it.
  absl::Status Delete();
  // Deletes the log of `model` of `generation` if there is one (without
  // making it first, as Open would), waiting up to `wait` for the answer
  // (JetStreamClient::DeleteStream).
  static absl::Status Remove(JetStreamClient& client, absl::string_view model,
                             std::uint64_t generation = 0,
                             absl::Duration wait = absl::ZeroDuration());

  JetStreamClient& client() const { return *client_; }
  const std::string& stream() const { return stream_; }
  const std::string& subject() const { return subject_; }

  // The stream and subject of a model name's log of `generation`: '.' (a
  // subject separator, and not allowed in stream names) becomes '~', which
  // names never contain. A model's placement names the generation of its
  // log (PlacementStore::Placement::log): each create of a name starts a
  // new one, and a create whose log elects no leader in time starts
  // another (ClusterNode::Create). Generation 0 is the one name every
  // model had before generations: "streamreg_<model>", subject
  // "streamreg.log.<model>"; generation g > 0 is "streamreg-log<g>_<model>"
  // and "streamreg.log<g>.<model>" ("streamreg-": never generation 0's).
  static std::string StreamName(absl::string_view model,
                                std::uint64_t generation = 0);
  static std::string Subject(absl::string_view model,
                             std::uint64_t generation = 0);
  // The escape alone, and a generation's part of a name ("" for 0): what
  // a model's other streams (its snapshots') are named after.
  static std::string EscapedName(absl::string_view model);
  // The model name EscapedName gave `escaped` for.
  static std::string UnescapedName(absl::string_view escaped);
  static std::string GenerationTag(std::uint64_t generation);

 private:
  LogStream(JetStreamClient* client, std::string stream, std::string subject,
            Options options)
      : client_(client),
        stream_(std::move(stream)),
        subject_(std::move(subject)),
        options_(options) {}
  JetStreamClient::StreamSpec Spec() const;

  JetStreamClient* client_;
  std::string stream_;
  std::string subject_;
  Options options_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_LOG_STREAM_H_
