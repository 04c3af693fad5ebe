#include "server/cluster/stream_cursor.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nats/nats.h"
#include "server/cluster/subscription_alarms.h"
#include "server/cluster/subscription_reaper.h"

namespace streamreg {
namespace {

struct MessageDeleter {
  void operator()(natsMsg* message) const { natsMsg_Destroy(message); }
};
using Message = std::unique_ptr<natsMsg, MessageDeleter>;

}  // namespace

absl::StatusOr<StreamCursor> StreamCursor::Open(const JetStreamClient& client,
                                                const std::string& stream,
                                                const std::string& subject,
                                                std::uint64_t from) {
  // An ordered consumer's settings, without the library's re-creation of
  // it (which races with closing the subscription in libnats 3.4: a
  // subscription freed while the connection still maps its new id crashed
  // the reader thread): this cursor reports a gap, a mismatch or missed
  // heartbeats as UNAVAILABLE, and its reader follows afresh.
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream.c_str();
  options.Config.DeliverPolicy = js_DeliverByStartSequence;
  options.Config.OptStartSeq = std::max<std::uint64_t>(from, 1);
  options.Config.AckPolicy = js_AckNone;
  options.Config.MaxDeliver = 1;
  options.Config.FlowControl = true;
  options.Config.MemoryStorage = true;
  options.Config.Replicas = 1;
  // The server's heartbeats let the client library notice within seconds
  // that the consumer's server went away (SubscriptionAlarms).
  options.Config.Heartbeat = absl::ToInt64Nanoseconds(absl::Seconds(1));
  // Gone from the server once no one reads it, should its reader not
  // delete it (a process killed).
  options.Config.InactiveThreshold = absl::ToInt64Nanoseconds(absl::Seconds(5));
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
  SubscriptionAlarms::Get().Forget(subscription);
  return StreamCursor(subscription, stream, client.options().request_timeout);
}

StreamCursor::~StreamCursor() {
  if (subscription_ == nullptr) return;
  SubscriptionAlarms::Get().Forget(subscription_);
  // Not destroyed here: the connection's reader thread may be delivering
  // it a message this moment (SubscriptionReaper says why that crashes).
  SubscriptionReaper::Get().Retire(subscription_);
}

StreamCursor::StreamCursor(StreamCursor&& other) noexcept
    : subscription_(std::exchange(other.subscription_, nullptr)),
      stream_(std::move(other.stream_)),
      request_timeout_(other.request_timeout_),
      delivered_(other.delivered_),
      broken_(std::move(other.broken_)) {}

absl::StatusOr<StreamMessage> StreamCursor::NextStored() {
  absl::StatusOr<StreamMessage> next = Next(request_timeout_);
  if (absl::IsDeadlineExceeded(next.status())) {
    return absl::UnavailableError(next.status().message());
  }
  return next;
}

absl::StatusOr<StreamMessage> StreamCursor::Next(absl::Duration timeout) {
  if (!broken_.empty()) return absl::UnavailableError(broken_);
  natsMsg* next = nullptr;
  natsStatus status = natsSubscription_NextMsg(
      &next, static_cast<natsSubscription*>(subscription_),
      absl::ToInt64Milliseconds(timeout));
  Message message(next);
  if (status == NATS_TIMEOUT) {
    if (SubscriptionAlarms::Get().Take(subscription_)) {
      return Broken("its server's heartbeats stopped");
    }
    return absl::DeadlineExceededError(
        absl::StrCat("cluster: no new message of ", stream_));
  }
  if (status == NATS_MISMATCH || status == NATS_SLOW_CONSUMER) {
    return Broken(natsStatus_GetText(status));
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
  const std::uint64_t sequence = meta->Sequence.Stream;
  const std::uint64_t delivery = meta->Sequence.Consumer;
  jsMsgMetaData_Destroy(meta);
  // The consumer numbers its deliveries 1, 2, ...: one missing (dropped
  // on a reconnection) breaks the order this cursor promises.
  if (delivery != delivered_ + 1) {
    return Broken(absl::StrCat("delivery ", delivered_ + 1,
                               " was lost (then came ", delivery, ")"));
  }
  delivered_ = delivery;
  return ToStreamMessage(message.get(), sequence);
}

absl::Status StreamCursor::Broken(absl::string_view why) {
  broken_ = absl::StrCat("cluster: reading ", stream_, ": ", why,
                         "; follow it afresh");
  return absl::UnavailableError(broken_);
}

}  // namespace streamreg
