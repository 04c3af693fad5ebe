#include "server/cluster/snapshot_store.h"

#include <algorithm>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "core/base/byte_coding.h"
#include "nats/nats.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/retried_until.h"
#include "server/cluster/stream_cursor.h"

namespace streamreg {
namespace {

struct MessageDeleter {
  void operator()(natsMsg* message) const { natsMsg_Destroy(message); }
};
using Message = std::unique_ptr<natsMsg, MessageDeleter>;

absl::string_view DataOf(const Message& message) {
  return absl::string_view(natsMsg_GetData(message.get()),
                           natsMsg_GetDataLength(message.get()));
}

// A chunk's payload: its put's token and its index, then its bytes.
constexpr std::size_t kChunkPrefix = sizeof(std::uint64_t) + sizeof(uint32_t);

}  // namespace

// What a head message says of its snapshot.
struct SnapshotStore::Head {
  std::uint64_t token = 0;  // the put's, in each of its chunks
  std::uint64_t log_sequence = 0;
  std::uint64_t size = 0;
  std::string sha256;
  std::vector<std::uint64_t> chunks;  // their stream sequences, in order
  std::uint64_t previous = 0;         // the head before (stream sequence)
  // An increment's: the head it builds on, and the first chunk and the log
  // sequence of its chain's whole snapshot (0 for a whole one, whose head
  // ends after `previous` as heads did before increments existed).
  std::uint64_t base = 0;
  std::uint64_t chain_from = 0;
  std::uint64_t chain_log_sequence = 0;
  std::uint64_t stream_sequence = 0;  // of the head itself (not encoded)

  std::string Encode() const {
    std::string out;
    ByteWriter writer(&out);
    writer.U64(token);
    writer.U64(log_sequence);
    writer.U64(size);
    writer.String(sha256);
    writer.U64(chunks.size());
    for (std::uint64_t chunk : chunks) writer.U64(chunk);
    writer.U64(previous);
    if (base != 0) {  // a whole head reads as before increments existed
      writer.U64(base);
      writer.U64(chain_from);
      writer.U64(chain_log_sequence);
    }
    return out;
  }
  bool Decode(absl::string_view payload) {
    ByteReader reader(payload);
    token = reader.U64();
    log_sequence = reader.U64();
    size = reader.U64();
    sha256 = reader.String();
    const std::uint64_t count = reader.U64();
    if (!reader.ok() || count > reader.remaining() / sizeof(std::uint64_t)) {
      return false;
    }
    chunks.resize(count);
    for (std::uint64_t& chunk : chunks) chunk = reader.U64();
    previous = reader.U64();
    if (reader.ok() && !reader.done()) {
      base = reader.U64();
      chain_from = reader.U64();
      chain_log_sequence = reader.U64();
    }
    return reader.done();
  }
};

std::string SnapshotStore::StreamName(absl::string_view model,
                                      std::uint64_t generation) {
  // "streamreg-snap": never a model log's name.
  return absl::StrCat("streamreg-snap", LogStream::GenerationTag(generation),
                      "_", LogStream::EscapedName(model));
}

SnapshotStore::SnapshotStore(JetStreamClient* client, std::string stream,
                             absl::string_view subject, Options options)
    : client_(client),
      stream_(std::move(stream)),
      every_subject_(absl::StrCat(subject, ".*")),
      chunk_subject_(absl::StrCat(subject, ".chunk")),
      head_subject_(absl::StrCat(subject, ".head")),
      options_(options) {}

SnapshotStore SnapshotStore::Open(JetStreamClient& client,
                                  absl::string_view model, Options options,
                                  std::uint64_t generation) {
  return OpenStream(
      client, StreamName(model, generation),
      absl::StrCat("streamreg.snap", LogStream::GenerationTag(generation), ".",
                   LogStream::EscapedName(model)),
      options);
}

SnapshotStore SnapshotStore::OpenStream(JetStreamClient& client,
                                        std::string stream,
                                        absl::string_view subject,
                                        Options options) {
  return SnapshotStore(&client, std::move(stream), subject, options);
}

absl::Status SnapshotStore::EnsureStream() {
  if (stream_ensured_) return absl::OkStatus();
  absl::Status ensured =
      client_->EnsureStream(Spec(), absl::StrCat("the snapshots ", stream_));
  stream_ensured_ = ensured.ok();
  return ensured;
}

JetStreamClient::StreamSpec SnapshotStore::Spec() const {
  return {.name = stream_,
          .subjects = {chunk_subject_, head_subject_},
          .replicas = options_.replicas,
          .min_replicas = options_.min_replicas};
}

absl::Status SnapshotStore::RestoreReplicas() {
  const absl::Status restored =
      client_->RestoreReplicas(Spec(), absl::StrCat("the snapshots ", stream_));
  return absl::IsNotFound(restored) ? absl::OkStatus() : restored;
}

// How long one chunk's or head's publish is retried.
constexpr absl::Duration kPublishRetryWindow = absl::Seconds(10);

absl::StatusOr<std::uint64_t> SnapshotStore::Publish(
    const std::string& subject, const std::string& message_id,
    absl::string_view payload) {
  // Retried while UNAVAILABLE (a request timed out under load, a leader
  // being elected): the message id makes a repeat land once, and a
  // whole snapshot's put (hundreds of chunks) is not lost to one timeout.
  absl::StatusOr<JetStreamClient::Published> published = RetriedUntil(
      absl::Now() + kPublishRetryWindow,
      [&] { return client_->Publish(stream_, subject, message_id, payload); });
  if (!published.ok()) return published.status();
  return published->sequence;
}

SnapshotStore::PendingPut::PendingPut(std::uint64_t log_sequence,
                                      absl::string_view bytes)
    : log_sequence_(log_sequence),
      bytes_(bytes),
      token_(std::random_device{}() |
             (static_cast<std::uint64_t>(std::random_device{}()) << 32)) {}

absl::Status SnapshotStore::PutChunks(PendingPut& put, absl::Duration slice) {
  const absl::Time until = absl::Now() + slice;
  const std::string put_id = absl::StrCat(put.token_, "/", put.log_sequence_);
  const std::size_t chunk_bytes =
      std::max<std::size_t>(options_.chunk_bytes, 1);
  std::string chunk;
  // Empty bytes are one empty chunk.
  while (!put.chunks_stored()) {
    const absl::string_view part = put.bytes_.substr(
        std::min(put.offset_, put.bytes_.size()), chunk_bytes);
    chunk.clear();
    ByteWriter writer(&chunk);
    writer.U64(put.token_);
    writer.U32(put.index_);
    chunk.append(part.data(), part.size());
    absl::StatusOr<std::uint64_t> stored =
        Publish(chunk_subject_, absl::StrCat(put_id, "/", put.index_), chunk);
    if (!stored.ok()) return stored.status();
    put.chunks_.push_back(*stored);
    put.hasher_.Update(part);
    put.offset_ += chunk_bytes;
    ++put.index_;
    if (absl::Now() >= until) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::uint64_t> SnapshotStore::PublishHead(PendingPut& put,
                                                         Head& head) {
  head.token = put.token_;
  head.log_sequence = put.log_sequence_;
  head.size = put.bytes_.size();
  head.sha256 = put.hasher_.FinishHex();
  head.chunks = put.chunks_;
  absl::StatusOr<std::uint64_t> stored = Publish(
      head_subject_, absl::StrCat(put.token_, "/", put.log_sequence_, "/head"),
      head.Encode());
  if (stored.ok()) head.stream_sequence = *stored;
  return stored;
}

absl::StatusOr<std::uint64_t> SnapshotStore::Put(std::uint64_t log_sequence,
                                                 absl::string_view bytes) {
  absl::StatusOr<PendingPut> put = BeginPut(log_sequence, bytes);
  if (!put.ok()) return put.status();
  if (absl::Status stored = PutChunks(*put, absl::InfiniteDuration());
      !stored.ok()) {
    return stored;
  }
  return FinishPut(*put);
}

absl::StatusOr<SnapshotStore::PendingPut> SnapshotStore::BeginPut(
    std::uint64_t log_sequence, absl::string_view bytes) {
  if (absl::Status ensured = EnsureStream(); !ensured.ok()) return ensured;
  return PendingPut(log_sequence, bytes);
}

absl::StatusOr<std::uint64_t> SnapshotStore::FinishPut(PendingPut& put) {
  if (!put.chunks_stored()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cluster: the snapshot of log sequence ", put.log_sequence_, " in ",
        stream_, " has chunks still to publish"));
  }
  // The newest head now (increments may have come since the put began). A
  // malformed one is no snapshot: this put's purge removes it.
  absl::StatusOr<Head> previous = LastHead();
  if (!previous.ok() && !absl::IsNotFound(previous.status()) &&
      !absl::IsDataLoss(previous.status())) {
    return previous.status();
  }
  Head head;
  std::uint64_t compactable = 0;
  if (previous.ok()) {
    head.previous = previous->stream_sequence;
    // A put older than the last one (two servers snapshotting while the
    // model moves) leaves the log after it in place; so does a chain
    // before it after its whole snapshot (read back cut at a damaged
    // increment, it replays from there).
    compactable = std::min(previous->base != 0 ? previous->chain_log_sequence
                                               : previous->log_sequence,
                           put.log_sequence_);
  }
  absl::StatusOr<std::uint64_t> stored = PublishHead(put, head);
  if (!stored.ok()) return stored.status();
  last_put_head_ = *stored;
  last_put_chain_from_ = head.chunks.front();
  last_put_chain_log_sequence_ = put.log_sequence_;
  // Everything before the previous snapshot (its chain's whole one, if it
  // is an increment): older snapshots and the leftovers of puts that died.
  std::uint64_t keep_from = head.chunks.front();
  if (previous.ok()) {
    keep_from = std::min(keep_from, previous->chunks.empty()
                                        ? previous->stream_sequence
                                        : previous->chunks.front());
    if (previous->base != 0 && previous->chain_from != 0) {
      keep_from = std::min(keep_from, previous->chain_from);
    }
  }
  if (absl::Status purged = client_->PurgeBefore(
          stream_, keep_from,
          absl::StrCat("cluster: purging old snapshots of ", stream_));
      !purged.ok()) {
    return purged;
  }
  return compactable;
}

absl::Status SnapshotStore::PutIncrement(std::uint64_t log_sequence,
                                         absl::string_view bytes) {
  if (last_put_head_ == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cluster: no snapshot of this server's in ", stream_,
                     " to build an increment on"));
  }
  absl::StatusOr<Head> last = LastHead();
  if (!last.ok() && !absl::IsNotFound(last.status()) &&
      !absl::IsDataLoss(last.status())) {
    return last.status();
  }
  if (!last.ok() || last->stream_sequence != last_put_head_) {
    last_put_head_ = 0;
    return absl::FailedPreconditionError(
        absl::StrCat("cluster: the newest snapshot in ", stream_,
                     " is not this server's last; a whole one is due"));
  }
  PendingPut put(log_sequence, bytes);
  if (absl::Status stored = PutChunks(put, absl::InfiniteDuration());
      !stored.ok()) {
    return stored;
  }
  Head head;
  head.previous = last_put_head_;
  head.base = last_put_head_;
  head.chain_from = last_put_chain_from_;
  head.chain_log_sequence = last_put_chain_log_sequence_;
  absl::StatusOr<std::uint64_t> stored = PublishHead(put, head);
  if (!stored.ok()) return stored.status();
  last_put_head_ = *stored;
  return absl::OkStatus();
}

void SnapshotStore::BuildOn(const Snapshot& read) {
  if (read.head == 0 || read.chain_from == 0) return;
  last_put_head_ = read.head;
  last_put_chain_from_ = read.chain_from;
  last_put_chain_log_sequence_ = read.chain_log_sequence;
}

absl::StatusOr<SnapshotStore::Head> SnapshotStore::LastHead() const {
  natsMsg* last = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_GetLastMsg(&last, client_->jetstream(), stream_.c_str(),
                    head_subject_.c_str(), nullptr, &code);
  Message message(last);
  if (status != NATS_OK) {
    return NatsError(status, code,
                     absl::StrCat("cluster: the newest snapshot in ", stream_));
  }
  Head head;
  if (!head.Decode(DataOf(message))) {
    return absl::DataLossError(
        absl::StrCat("cluster: a malformed snapshot head in ", stream_));
  }
  head.stream_sequence = natsMsg_GetSequence(message.get());
  return head;
}

absl::StatusOr<SnapshotStore::Head> SnapshotStore::HeadAt(
    std::uint64_t stream_sequence) const {
  absl::StatusOr<StreamMessage> message =
      client_->Get(stream_, stream_sequence,
                   absl::StrCat("cluster: the snapshot head at ",
                                stream_sequence, " of ", stream_));
  if (!message.ok()) return message.status();
  Head head;
  if (message->subject != head_subject_ || !head.Decode(message->payload)) {
    return absl::DataLossError(absl::StrCat("cluster: message ",
                                            stream_sequence, " of ", stream_,
                                            " is not a snapshot head"));
  }
  head.stream_sequence = stream_sequence;
  return head;
}

absl::StatusOr<SnapshotStore::Snapshot> SnapshotStore::Read(
    const Head& head) const {
  const auto lost = [&](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat("cluster: the snapshot of log sequence ",
                     head.log_sequence, " in ", stream_, ": ", what));
  };
  Snapshot snapshot;
  snapshot.log_sequence = head.log_sequence;
  snapshot.bytes.reserve(head.size);
  if (head.chunks.empty()) return lost("it names no chunk");
  // The chunks are streamed to this server in stream order (one request
  // per chunk took 8 ms a chunk), with the heads between and after them:
  // those of other puts are passed over, and a message past a chunk due
  // (its own head, at the latest) says the chunk is gone.
  absl::StatusOr<StreamCursor> cursor = StreamCursor::Open(
      *client_, stream_, every_subject_, head.chunks.front());
  if (!cursor.ok()) return cursor.status();
  for (std::size_t index = 0; index < head.chunks.size();) {
    absl::StatusOr<StreamMessage> chunk = cursor->NextStored();
    if (!chunk.ok()) return chunk.status();
    if (chunk->sequence < head.chunks[index]) continue;  // another put's
    if (chunk->sequence > head.chunks[index]) {
      // Purged by a newer put: this snapshot is gone, not the cluster.
      return lost(absl::StrCat("chunk ", index, " (message ",
                               head.chunks[index], ") is gone"));
    }
    const absl::string_view data = chunk->payload;
    ByteReader prefix(data);
    if (prefix.U64() != head.token || prefix.U32() != index || !prefix.ok()) {
      return lost(absl::StrCat("message ", head.chunks[index],
                               " is not its chunk ", index));
    }
    const absl::string_view part = data.substr(kChunkPrefix);
    snapshot.bytes.append(part.data(), part.size());
    ++index;
  }
  if (snapshot.bytes.size() != head.size ||
      Sha256Hex(snapshot.bytes) != head.sha256) {
    return lost("its bytes do not match its checksum");
  }
  return snapshot;
}

absl::StatusOr<SnapshotStore::Snapshot> SnapshotStore::ReadChain(
    const Head& newest, Head* whole) const {
  // The chain back to its whole snapshot (each head builds on an earlier
  // one).
  std::vector<Head> chain = {newest};
  while (chain.back().base != 0) {
    if (chain.back().base >= chain.back().stream_sequence) {
      return absl::DataLossError(
          absl::StrCat("cluster: snapshot head ", chain.back().stream_sequence,
                       " of ", stream_, " builds on a later one"));
    }
    absl::StatusOr<Head> before = HeadAt(chain.back().base);
    if (!before.ok()) {
      if (!absl::IsNotFound(before.status())) return before.status();
      return absl::DataLossError(absl::StrCat(
          "cluster: the snapshot increment at ", chain.back().stream_sequence,
          " of ", stream_, " builds on one that is gone"));
    }
    chain.push_back(*std::move(before));
  }
  *whole = chain.back();
  absl::StatusOr<Snapshot> snapshot = Read(chain.back());
  if (!snapshot.ok()) return snapshot;
  snapshot->head = whole->stream_sequence;
  if (!whole->chunks.empty()) snapshot->chain_from = whole->chunks.front();
  snapshot->chain_log_sequence = whole->log_sequence;
  // Its increments in order, up to the newest readable one.
  for (auto head = chain.rbegin() + 1; head != chain.rend(); ++head) {
    absl::StatusOr<Snapshot> increment = Read(*head);
    if (!increment.ok()) {
      if (absl::IsDataLoss(increment.status())) break;
      return increment.status();
    }
    snapshot->increments.push_back(
        {increment->log_sequence, std::move(increment->bytes)});
    snapshot->head = head->stream_sequence;
  }
  return snapshot;
}

absl::StatusOr<SnapshotStore::Snapshot> SnapshotStore::Newest() const {
  absl::StatusOr<Head> newest = LastHead();
  if (!newest.ok()) return newest.status();
  // A whole head behind the one before it (increments put while it was,
  // or an older state put late): that one's chain first, where it is read
  // far enough.
  std::uint64_t tried = 0;
  if (newest->base == 0 && newest->previous != 0) {
    absl::StatusOr<Head> before = HeadAt(newest->previous);
    if (!before.ok() && !absl::IsNotFound(before.status()) &&
        !absl::IsDataLoss(before.status())) {
      return before.status();
    }
    if (before.ok() && before->log_sequence > newest->log_sequence) {
      Head ignored;
      absl::StatusOr<Snapshot> ahead = ReadChain(*before, &ignored);
      if (!ahead.ok() && !absl::IsDataLoss(ahead.status())) return ahead;
      if (ahead.ok() && ahead->newest_log_sequence() > newest->log_sequence) {
        return ahead;
      }
      tried = before->stream_sequence;
    }
  }
  Head whole = *newest;
  absl::StatusOr<Snapshot> snapshot = ReadChain(*newest, &whole);
  if (snapshot.ok() || !absl::IsDataLoss(snapshot.status()) ||
      whole.previous == 0 || whole.previous == tried) {
    return snapshot;
  }
  // The snapshot before the chain's whole one (with its own chain).
  absl::StatusOr<Head> previous = HeadAt(whole.previous);
  if (!previous.ok()) {
    return absl::IsNotFound(previous.status()) ? snapshot.status()
                                               : previous.status();
  }
  absl::StatusOr<Snapshot> older = ReadChain(*previous, &whole);
  return older.ok() || !absl::IsDataLoss(older.status()) ? older
                                                         : snapshot.status();
}

absl::Status SnapshotStore::Remove(JetStreamClient& client,
                                   absl::string_view model,
                                   std::uint64_t generation,
                                   absl::Duration wait) {
  return client.DeleteStream(StreamName(model, generation), wait);
}

}  // namespace streamreg
