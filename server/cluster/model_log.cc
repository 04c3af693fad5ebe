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

std::string Escaped(absl::string_view model) {
  return absl::StrReplaceAll(model, {{".", "~"}});
}

// Owners of the C client's objects.
struct StreamInfoDeleter {
  void operator()(jsStreamInfo* info) const { jsStreamInfo_Destroy(info); }
};
struct MessageDeleter {
  void operator()(natsMsg* message) const { natsMsg_Destroy(message); }
};
using Message = std::unique_ptr<natsMsg, MessageDeleter>;

}  // namespace

std::string ModelLog::StreamName(absl::string_view model) {
  return absl::StrCat("streamreg_", Escaped(model));
}

std::string ModelLog::Subject(absl::string_view model) {
  return absl::StrCat("streamreg.log.", Escaped(model));
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
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = log.stream_.c_str();
  const char* subjects[] = {log.subject_.c_str()};
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Replicas = options.replicas;
  config.Duplicates = absl::ToInt64Nanoseconds(options.duplicate_window);
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status =
      js_AddStream(&info, client.jetstream(), &config, nullptr, &code);
  std::unique_ptr<jsStreamInfo, StreamInfoDeleter> owned(info);
  // Opening a log that exists (made by this server before, or another).
  if (status != NATS_OK && code == JSStreamNameExistErr) {
    status = js_GetStreamInfo(&info, client.jetstream(), log.stream_.c_str(),
                              nullptr, &code);
    owned.reset(info);
  }
  if (status != NATS_OK) {
    return NatsError(status, code,
                     absl::StrCat("cluster: opening the log ", log.stream_));
  }
  return log;
}

absl::StatusOr<ModelLog::Appended> ModelLog::Append(
    absl::string_view message_id, absl::string_view payload) {
  const std::string id(message_id);
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = id.c_str();
  options.ExpectStream = stream_.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_Publish(&ack, client_->jetstream(), subject_.c_str(), payload.data(),
                 static_cast<int>(payload.size()), &options, &code);
  if (status != NATS_OK) {
    return NatsError(status, code,
                     absl::StrCat("cluster: appending ", id, " to ", stream_));
  }
  const Appended appended{ack->Sequence, ack->Duplicate};
  jsPubAck_Destroy(ack);
  return appended;
}

absl::StatusOr<std::uint64_t> ModelLog::LastSequence() const {
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status = js_GetStreamInfo(&info, client_->jetstream(),
                                             stream_.c_str(), nullptr, &code);
  std::unique_ptr<jsStreamInfo, StreamInfoDeleter> owned(info);
  if (status != NATS_OK) {
    return NatsError(status, code,
                     absl::StrCat("cluster: the state of ", stream_));
  }
  return info->State.LastSeq;
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
  absl::StatusOr<std::uint64_t> last = LastSequence();
  if (!last.ok()) return last.status();
  from = std::max<std::uint64_t>(from, 1);
  if (max == 0 || *last < from) return absl::OkStatus();
  const std::uint64_t end = std::min<std::uint64_t>(*last, from + max - 1);
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

absl::Status ModelLog::Delete() { return DeleteStream(*client_, stream_); }

absl::Status ModelLog::Remove(JetStreamClient& client,
                              absl::string_view model) {
  const absl::Status deleted = DeleteStream(client, StreamName(model));
  return absl::IsNotFound(deleted) ? absl::OkStatus() : deleted;
}

absl::Status ModelLog::DeleteStream(JetStreamClient& client,
                                    const std::string& stream) {
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_DeleteStream(client.jetstream(), stream.c_str(), nullptr, &code);
  if (status != NATS_OK) {
    return NatsError(status, code, absl::StrCat("cluster: deleting ", stream));
  }
  return absl::OkStatus();
}

}  // namespace streamreg
