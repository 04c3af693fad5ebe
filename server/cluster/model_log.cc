#include "server/cluster/model_log.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nats/nats.h"

namespace streamreg {
namespace {

constexpr char kMessageIdHeader[] = "Nats-Msg-Id";

// Owners of the C client's objects.
struct StreamInfoDeleter {
  void operator()(jsStreamInfo* info) const { jsStreamInfo_Destroy(info); }
};
struct MessageDeleter {
  void operator()(natsMsg* message) const { natsMsg_Destroy(message); }
};
using Message = std::unique_ptr<natsMsg, MessageDeleter>;

}  // namespace

std::string ModelLog::EscapedName(absl::string_view model) {
  return absl::StrReplaceAll(model, {{".", "~"}});
}

std::string ModelLog::StreamName(absl::string_view model) {
  return absl::StrCat("streamreg_", EscapedName(model));
}

std::string ModelLog::Subject(absl::string_view model) {
  return absl::StrCat("streamreg.log.", EscapedName(model));
}

absl::StatusOr<ModelLog> ModelLog::Open(JetStreamClient& client,
                                        absl::string_view model,
                                        Options options) {
  return OpenStream(client, StreamName(model), Subject(model), options);
}

absl::StatusOr<ModelLog> ModelLog::OpenStream(JetStreamClient& client,
                                              std::string stream,
                                              std::string subject,
                                              Options options) {
  ModelLog log(&client, std::move(stream), std::move(subject));
  if (absl::Status opened =
          client.EnsureStream({log.stream_,
                               {log.subject_},
                               options.replicas,
                               options.duplicate_window},
                              absl::StrCat("the log ", log.stream_));
      !opened.ok()) {
    return opened;
  }
  return log;
}

absl::StatusOr<ModelLog::Appended> ModelLog::Append(
    absl::string_view message_id, absl::string_view payload) {
  absl::StatusOr<JetStreamClient::Published> published =
      client_->Publish(stream_, subject_, std::string(message_id), payload);
  if (!published.ok()) return published.status();
  return Appended{published->sequence, published->duplicate};
}

absl::StatusOr<ModelLog::Bounds> ModelLog::StoredBounds() const {
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status = js_GetStreamInfo(&info, client_->jetstream(),
                                             stream_.c_str(), nullptr, &code);
  std::unique_ptr<jsStreamInfo, StreamInfoDeleter> owned(info);
  if (status != NATS_OK) {
    return NatsError(status, code,
                     absl::StrCat("cluster: the state of ", stream_));
  }
  // An empty stream's first sequence is one past its last.
  return Bounds{std::max<std::uint64_t>(info->State.FirstSeq, 1),
                info->State.LastSeq};
}

absl::StatusOr<std::uint64_t> ModelLog::LastSequence() const {
  absl::StatusOr<Bounds> bounds = StoredBounds();
  if (!bounds.ok()) return bounds.status();
  return bounds->last;
}

absl::StatusOr<std::uint64_t> ModelLog::FirstSequence() const {
  absl::StatusOr<Bounds> bounds = StoredBounds();
  if (!bounds.ok()) return bounds.status();
  return bounds->first;
}

absl::Status ModelLog::Compact(std::uint64_t through) {
  return client_->PurgeBefore(
      stream_, through + 1,  // the first entry kept
      absl::StrCat("cluster: compacting ", stream_, " through ", through));
}

ModelLog::Cursor::~Cursor() {
  if (subscription_ == nullptr) return;
  auto* subscription = static_cast<natsSubscription*>(subscription_);
  natsSubscription_Unsubscribe(subscription);
  natsSubscription_Destroy(subscription);
}

ModelLog::Cursor::Cursor(Cursor&& other) noexcept
    : subscription_(std::exchange(other.subscription_, nullptr)),
      stream_(std::move(other.stream_)) {}

absl::StatusOr<LogEntry> ModelLog::Cursor::Next(absl::Duration timeout) {
  natsMsg* next = nullptr;
  natsStatus status = natsSubscription_NextMsg(
      &next, static_cast<natsSubscription*>(subscription_),
      absl::ToInt64Milliseconds(timeout));
  Message message(next);
  if (status == NATS_TIMEOUT) {
    return absl::DeadlineExceededError(
        absl::StrCat("cluster: no new entry of ", stream_));
  }
  if (status != NATS_OK) {
    return NatsError(status, 0, absl::StrCat("cluster: reading ", stream_));
  }
  jsMsgMetaData* meta = nullptr;
  status = natsMsg_GetMetaData(&meta, message.get());
  if (status != NATS_OK) {
    return NatsError(status, 0, absl::StrCat("cluster: an entry of ", stream_));
  }
  LogEntry entry;
  entry.sequence = meta->Sequence.Stream;
  jsMsgMetaData_Destroy(meta);
  const char* id = nullptr;
  if (natsMsgHeader_Get(message.get(), kMessageIdHeader, &id) == NATS_OK) {
    entry.message_id = id;
  }
  entry.payload.assign(natsMsg_GetData(message.get()),
                       natsMsg_GetDataLength(message.get()));
  return entry;
}

absl::StatusOr<ModelLog::Cursor> ModelLog::Follow(std::uint64_t from) const {
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream_.c_str();
  options.Ordered = true;
  options.Config.DeliverPolicy = js_DeliverByStartSequence;
  options.Config.OptStartSeq = std::max<std::uint64_t>(from, 1);
  // The server's heartbeats let the client library notice within seconds
  // that the consumer's server went away, and re-create it (its default,
  // 5 s, left replicas behind for longer).
  options.Config.Heartbeat = absl::ToInt64Nanoseconds(absl::Seconds(1));
  natsSubscription* subscription = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_SubscribeSync(&subscription, client_->jetstream(), subject_.c_str(),
                       nullptr, &options, &code);
  if (status != NATS_OK) {
    natsSubscription_Destroy(subscription);
    return NatsError(
        status, code,
        absl::StrCat("cluster: reading ", stream_, " from ", from));
  }
  return Cursor(subscription, stream_);
}

absl::Status ModelLog::Read(std::uint64_t from, std::size_t max,
                            std::vector<LogEntry>* out) const {
  out->clear();
  absl::StatusOr<Bounds> bounds = StoredBounds();
  if (!bounds.ok()) return bounds.status();
  // Entries compacted away are not waited for.
  from = std::max(from, bounds->first);
  if (max == 0 || bounds->last < from) return absl::OkStatus();
  const std::uint64_t end =
      std::min<std::uint64_t>(bounds->last, from + max - 1);
  absl::StatusOr<Cursor> cursor = Follow(from);
  if (!cursor.ok()) return cursor.status();
  while (out->empty() || out->back().sequence < end) {
    absl::StatusOr<LogEntry> entry =
        cursor->Next(client_->options().request_timeout);
    if (!entry.ok()) {
      // Stored entries are there: not coming within the timeout is the
      // cluster's unavailability.
      return absl::IsDeadlineExceeded(entry.status())
                 ? absl::UnavailableError(entry.status().message())
                 : entry.status();
    }
    out->push_back(*std::move(entry));
  }
  return absl::OkStatus();
}

absl::Status ModelLog::Delete() { return client_->DeleteStream(stream_); }

absl::Status ModelLog::Remove(JetStreamClient& client,
                              absl::string_view model) {
  return client.DeleteStream(StreamName(model));
}

}  // namespace streamreg
