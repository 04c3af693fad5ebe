#ifndef STREAMREG_SERVER_CLUSTER_SNAPSHOT_STORE_H_
#define STREAMREG_SERVER_CLUSTER_SNAPSHOT_STORE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/sha256.h"
#include "server/cluster/jetstream_client.h"

namespace streamreg {

// One model's snapshots in cluster mode (docs/cluster.md): a JetStream
// stream of their own, `streamreg-snap_<model>`, file storage, `replicas`
// copies, where a server puts the model's whole state as of a log sequence
// and any server that takes the model over reads the newest back (streamed
// to it from its first chunk on, with no request per chunk), then replays
// only the log after it.
//
// A snapshot is a run of chunk messages (each at most chunk_bytes of it,
// under the subject `<prefix>.chunk`) followed by a head message (under
// `<prefix>.head`) that names its log sequence, its chunks' stream
// sequences, its size and SHA-256, and the head before it. A put that dies
// before its head leaves chunks that no head names; they go with the next
// purge. After each whole put the stream keeps the new snapshot and the
// one before it and purges the rest, so a newest snapshot whose chunks
// were purged by a concurrent put (two servers snapshotting at once while
// a model moves) or are damaged still leaves its predecessor: Newest()
// falls back to it. Only what the older kept snapshot covers may leave the
// model's log (Put says which sequence that is).
//
// An increment (PutIncrement: a model's state and the samples since the
// snapshot before, Model::CaptureSnapshotSince) builds on the last
// snapshot this store put, whole or an increment itself: its head also
// names that head and the first chunk and log sequence of the whole
// snapshot its chain starts from. Newest() reads a chain whole: the whole
// snapshot and its increments in order, up to the newest readable one (a chain
// cut at any increment is the model as of that increment). An increment purges
// nothing; the next whole put keeps the chain before it as it would keep a
// snapshot, and frees the log only up to that chain's whole snapshot (a
// chain cut at a damaged increment replays from there).
//
// A whole put may be made a slice at a time (BeginPut, PutChunks,
// FinishPut): its head comes last, so until then the chain before it is
// still the newest, and increments go on building on it between the
// slices. A put of hundreds of MB then leaves no seconds without a
// snapshot. Once its head is stored, Newest() still reads the chain
// before it where that chain covers more of the log.
//
// Thread-compatible.
class SnapshotStore {
 public:
  struct Options {
    int replicas = 3;
    // The fewest copies its stream is made with while NATS nodes are
    // offline (0: `replicas`); RestoreReplicas adds the rest.
    int min_replicas = 0;
    // A chunk's size: below NATS's largest message (1 MiB by default).
    std::size_t chunk_bytes = 512 << 10;
  };
  struct Snapshot {
    std::uint64_t log_sequence = 0;  // the last log entry `bytes` include
    std::string bytes;               // a whole snapshot
    // The increments built on it, oldest first.
    struct Increment {
      std::uint64_t log_sequence = 0;
      std::string bytes;
    };
    std::vector<Increment> increments;
    // The last log entry the snapshot with its increments includes.
    std::uint64_t newest_log_sequence() const {
      return increments.empty() ? log_sequence : increments.back().log_sequence;
    }
    // Where its newest part stands in the stream (for BuildOn): that
    // part's head, and the first chunk and log sequence of the chain's
    // whole snapshot.
    std::uint64_t head = 0;
    std::uint64_t chain_from = 0;
    std::uint64_t chain_log_sequence = 0;
  };

  // A snapshot being put (BeginPut for a whole one): its chunks published
  // so far.
  class PendingPut {
   public:
    std::uint64_t log_sequence() const { return log_sequence_; }
    // Whether every chunk is stored (FinishPut then stores the head).
    bool chunks_stored() const {
      return offset_ >= bytes_.size() && index_ > 0;
    }

   private:
    friend class SnapshotStore;
    PendingPut(std::uint64_t log_sequence, absl::string_view bytes);
    std::uint64_t log_sequence_;
    absl::string_view bytes_;
    std::uint64_t token_;
    std::size_t offset_ = 0;             // of the next chunk's bytes
    std::uint32_t index_ = 0;            // of the next chunk
    std::vector<std::uint64_t> chunks_;  // their stream sequences
    Sha256Hasher hasher_;                // of the bytes published so far
  };

  // The snapshots of `model` (a valid model name) for its log of
  // `generation` (LogStream::StreamName). Opening asks the cluster
  // nothing: the stream is made (with `options`) by the first Put, so a
  // model is created, and hosted, without waiting for a second stream's
  // leader election (seconds while a NATS node is down); until then
  // Newest() finds nothing. `client` must outlive it.
  static SnapshotStore Open(JetStreamClient& client, absl::string_view model,
                            Options options, std::uint64_t generation = 0);
  // The same for the snapshots of another replicated state (the
  // placements'), by its stream and subject prefix, which no model's may
  // be.
  static SnapshotStore OpenStream(JetStreamClient& client, std::string stream,
                                  absl::string_view subject, Options options);

  // Stores `bytes` as the snapshot that includes the model's log up to
  // `log_sequence` (making the stream first if this store has not made or
  // found it yet), then purges all but it and the snapshot before it.
  // Returns the log sequence that the older kept snapshot includes (0 if
  // there is none): the model's log entries up to it are needed by nobody.
  // UNAVAILABLE when the cluster did not answer in time (nothing half
  // stored is ever read: a snapshot exists once its head does).
  absl::StatusOr<std::uint64_t> Put(std::uint64_t log_sequence,
                                    absl::string_view bytes);
  // Put in three steps: BeginPut makes the stream if need be, PutChunks
  // publishes chunks for about `slice` each time (with an infinite one,
  // all), and FinishPut, once they are all stored, stores the head, naming
  // the newest head then as the one before it, and purges as Put does.
  // `bytes` must outlive the put. A put given up before its head leaves
  // chunks that the next put's purge removes.
  absl::StatusOr<PendingPut> BeginPut(std::uint64_t log_sequence,
                                      absl::string_view bytes);
  absl::Status PutChunks(PendingPut& put, absl::Duration slice);
  absl::StatusOr<std::uint64_t> FinishPut(PendingPut& put);
  // Stores `bytes` as an increment built on the last snapshot this store
  // put (whole or an increment) or took to build on (BuildOn), including the
  // model's log up to `log_sequence`. FAILED_PRECONDITION when this store has
  // put none, or another put came after its last (a whole one is then due);
  // UNAVAILABLE as Put.
  absl::Status PutIncrement(std::uint64_t log_sequence,
                            absl::string_view bytes);
  // Takes `read` (a Newest() answer, which the caller restored a model
  // from) as the snapshot the next increment builds on, as if this store
  // had put it: PutIncrement builds on it while it is still the newest.
  void BuildOn(const Snapshot& read);
  // The newest snapshot whose chunks are all there and match its checksum,
  // with its increments up to the newest readable one, else the one before
  // it likewise; NOT_FOUND when there is none, DATA_LOSS when neither can
  // be read whole. Where the head before a newest whole snapshot covers
  // more of the log (increments put while that whole one was, or a put of
  // an older state), that head's chain is read first.
  absl::StatusOr<Snapshot> Newest() const;

  // Gives a stream made with fewer copies than the options ask for the
  // rest; OK once it has them or while there is no stream yet.
  absl::Status RestoreReplicas();

  // Deletes the snapshots of `model` of `generation`, if there are any
  // (waiting as LogStream::Remove does).
  static absl::Status Remove(JetStreamClient& client, absl::string_view model,
                             std::uint64_t generation = 0,
                             absl::Duration wait = absl::ZeroDuration());
  // "streamreg-snap<generation>_<model>" ("streamreg-snap_<model>" for 0).
  static std::string StreamName(absl::string_view model,
                                std::uint64_t generation = 0);

 private:
  struct Head;
  SnapshotStore(JetStreamClient* client, std::string stream,
                absl::string_view subject, Options options);
  // The last head stored, if any (NOT_FOUND if none).
  absl::StatusOr<Head> LastHead() const;
  absl::StatusOr<Head> HeadAt(std::uint64_t stream_sequence) const;
  // The snapshot `head` names, read whole and checked (its bytes alone).
  absl::StatusOr<Snapshot> Read(const Head& head) const;
  // The snapshot `newest` names with the chain it ends, if it is an
  // increment: the chain's whole snapshot and its increments up to the
  // newest readable one. DATA_LOSS when the whole one cannot be read.
  // `*whole` is set to the chain's whole head once found.
  absl::StatusOr<Snapshot> ReadChain(const Head& newest, Head* whole) const;
  // Publishes `put`'s head (`head` filled but for the token, size,
  // checksum and chunks, which `put` gives); the head's stream sequence.
  absl::StatusOr<std::uint64_t> PublishHead(PendingPut& put, Head& head);
  absl::StatusOr<std::uint64_t> Publish(const std::string& subject,
                                        const std::string& message_id,
                                        absl::string_view payload);
  // Makes the stream, or finds it made, once per store.
  absl::Status EnsureStream();
  JetStreamClient::StreamSpec Spec() const;

  JetStreamClient* client_;
  std::string stream_;
  std::string every_subject_;  // the chunks' and the heads'
  std::string chunk_subject_;
  std::string head_subject_;
  Options options_;
  bool stream_ensured_ = false;
  // The last head this store put, and the first chunk and log sequence of
  // its chain's whole snapshot (what an increment builds on).
  std::uint64_t last_put_head_ = 0;
  std::uint64_t last_put_chain_from_ = 0;
  std::uint64_t last_put_chain_log_sequence_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_SNAPSHOT_STORE_H_
