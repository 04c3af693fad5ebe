#include "server/cluster/stream_cursor.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nats/nats.h"

namespace streamreg {
namespace {

constexpr char kMessageIdHeader[] = "Nats-Msg-Id";

struct MessageDeleter {
  void operator()(natsMsg* message) const { natsMsg_Destroy(message); }
};
using Message = std::unique_ptr<natsMsg, MessageDeleter>;

}  // namespace

absl::StatusOr<StreamCursor> StreamCursor::Open(const JetStreamClient& client,
                                                const std::string& stream,
                                                const std::string& subject,
                                                std::uint64_t from) {
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream.c_str();
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
      js_SubscribeSync(&subscription, client.jetstream(), subject.c_str(),
                       nullptr, &options, &code);
  if (status != NATS_OK) {
    natsSubscription_Destroy(subscription);
    return NatsError(status, code,
                     absl::StrCat("cluster: reading ", stream, " from ", from));
  }
  return StreamCursor(subscription, stream, client.options().request_timeout);
}

StreamCursor::~StreamCursor() {
  if (subscription_ == nullptr) return;
  auto* subscription = static_cast<natsSubscription*>(subscription_);
  natsSubscription_Unsubscribe(subscription);
  natsSubscription_Destroy(subscription);
}

StreamCursor::StreamCursor(StreamCursor&& other) noexcept
    : subscription_(std::exchange(other.subscription_, nullptr)),
      stream_(std::move(other.stream_)),
      request_timeout_(other.request_timeout_) {}

absl::StatusOr<StreamMessage> StreamCursor::NextStored() {
  absl::StatusOr<StreamMessage> next = Next(request_timeout_);
  if (absl::IsDeadlineExceeded(next.status())) {
    return absl::UnavailableError(next.status().message());
  }
  return next;
}

absl::StatusOr<StreamMessage> StreamCursor::Next(absl::Duration timeout) {
  natsMsg* next = nullptr;
  natsStatus status = natsSubscription_NextMsg(
      &next, static_cast<natsSubscription*>(subscription_),
      absl::ToInt64Milliseconds(timeout));
  Message message(next);
  if (status == NATS_TIMEOUT) {
    return absl::DeadlineExceededError(
        absl::StrCat("cluster: no new message of ", stream_));
  }
  if (status != NATS_OK) {
    return NatsError(status, 0, absl::StrCat("cluster: reading ", stream_));
  }
  jsMsgMetaData* meta = nullptr;
  status = natsMsg_GetMetaData(&meta, message.get());
  if (status != NATS_OK) {
    return NatsError(status, 0,
                     absl::StrCat("cluster: a message of ", stream_));
  }
  StreamMessage read;
  read.sequence = meta->Sequence.Stream;
  jsMsgMetaData_Destroy(meta);
  const char* id = nullptr;
  if (natsMsgHeader_Get(message.get(), kMessageIdHeader, &id) == NATS_OK) {
    read.message_id = id;
  }
  read.payload.assign(natsMsg_GetData(message.get()),
                      natsMsg_GetDataLength(message.get()));
  return read;
}

}  // namespace streamreg
