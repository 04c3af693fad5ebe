#include "server/cluster/jetstream_client.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nats/nats.h"
#include "server/cluster/subscription_alarms.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

constexpr int kMissedPings = 2;
constexpr char kMessageIdHeader[] = "Nats-Msg-Id";

// The library's error callback: trouble with a subscription raises its
// alarm, for the StreamCursor reading it (the rest the calls report).
void OnAsyncError(natsConnection* /*connection*/,
                  natsSubscription* subscription, natsStatus status,
                  void* /*closure*/) {
  if (subscription == nullptr) return;
  if (status == NATS_MISSED_HEARTBEAT || status == NATS_MISMATCH ||
      status == NATS_SLOW_CONSUMER) {
    SubscriptionAlarms::Get().Raise(subscription);
  }
}

// A StreamSpec as the C client's configuration, with `replicas` copies;
// `subjects` holds what the configuration points into.
jsStreamConfig StreamConfig(const JetStreamClient::StreamSpec& spec,
                            int replicas, std::vector<const char*>* subjects) {
  subjects->clear();
  for (const std::string& subject : spec.subjects) {
    subjects->push_back(subject.c_str());
  }
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = spec.name.c_str();
  config.Subjects = subjects->data();
  config.SubjectsLen = static_cast<int>(subjects->size());
  config.Storage = js_FileStorage;
  config.Replicas = replicas;
  config.Duplicates = absl::ToInt64Nanoseconds(spec.duplicate_window);
  return config;
}

// nats-server's answer when too few nodes are online for the copies asked.
bool TooFewNodes(jsErrCode code) {
  return code == JSClusterNoPeersErr || code == JSInsufficientResourcesErr;
}

}  // namespace

// JetStream request options that wait up to `wait` for the answer (0: the
// context's request timeout).
jsOptions WaitOptions(absl::Duration wait) {
  jsOptions options;
  jsOptions_Init(&options);
  if (wait > absl::ZeroDuration()) {
    options.Wait = std::max<int64_t>(1, absl::ToInt64Milliseconds(wait));
  }
  return options;
}

absl::Status NatsError(int nats_status, int jetstream_code,
                       absl::string_view what) {
  const natsStatus status = static_cast<natsStatus>(nats_status);
  std::string text = absl::StrCat(what, ": ", natsStatus_GetText(status));
  if (jetstream_code != 0) {
    absl::StrAppend(&text, " (JetStream error ", jetstream_code, ")");
  }
  switch (jetstream_code) {
    case JSStreamNotFoundErr:
    case JSNoMessageFoundErr:
      return absl::NotFoundError(text);
    case JSClusterNoPeersErr:
    case JSClusterNotAvailErr:
    case JSInsufficientResourcesErr:
    // A stream's new leader refusing a proposal made under the one before
    // (seen appending while a node was paused): we never set an expected
    // sequence, and appends are deduplicated by id, so it is retried.
    case JSStreamSequenceNotMatchErr:
      return absl::UnavailableError(text);
    default:
      break;
  }
  switch (status) {
    case NATS_TIMEOUT:
    case NATS_NO_SERVER:
    case NATS_NO_RESPONDERS:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_NOT_YET_CONNECTED:
    // A write to the socket of a node that just died (seen appending with
    // two of three nodes killed): the client reconnects to another.
    case NATS_IO_ERROR:
      return absl::UnavailableError(text);
    case NATS_NOT_FOUND:
      return absl::NotFoundError(text);
    default:
      return absl::InternalError(text);
  }
}

JetStreamClient::JetStreamClient(Options options, natsConnection* connection,
                                 jsCtx* jetstream)
    : options_(std::move(options)),
      connection_(connection),
      jetstream_(jetstream) {}

JetStreamClient::~JetStreamClient() {
  jsCtx_Destroy(jetstream_);
  natsConnection_Close(connection_);
  natsConnection_Destroy(connection_);
}

absl::StatusOr<std::unique_ptr<JetStreamClient>> JetStreamClient::Connect(
    Options options) {
  if (options.servers.empty()) {
    return absl::InvalidArgumentError("cluster: no NATS servers given");
  }
  std::vector<const char*> servers;
  for (const std::string& server : options.servers) {
    servers.push_back(server.c_str());
  }
  const std::int64_t timeout_ms =
      absl::ToInt64Milliseconds(options.request_timeout);
  natsOptions* nats_options = nullptr;
  natsStatus status = natsOptions_Create(&nats_options);
  if (status == NATS_OK) {
    status = natsOptions_SetServers(nats_options, servers.data(),
                                    static_cast<int>(servers.size()));
  }
  if (status == NATS_OK) {
    status = natsOptions_SetName(nats_options, options.name.c_str());
  }
  if (status == NATS_OK) {
    status = natsOptions_SetTimeout(nats_options, timeout_ms);
  }
  // Reconnect for as long as the client lives, quickly: a node restarting
  // is routine in a cluster.
  if (status == NATS_OK) {
    status = natsOptions_SetMaxReconnect(nats_options, -1);
  }
  if (status == NATS_OK) {
    status = natsOptions_SetReconnectWait(nats_options, 100);
  }
  // A node that stops answering without closing the connection (paused,
  // its link cut) is left for another after kMissedPings unanswered pings
  // (the library's default, pings every 2 minutes, stalled this server's
  // every call that long).
  if (status == NATS_OK) {
    status = natsOptions_SetPingInterval(
        nats_options, absl::ToInt64Milliseconds(options.ping_interval));
  }
  if (status == NATS_OK) {
    status = natsOptions_SetMaxPingsOut(nats_options, kMissedPings);
  }
  if (status == NATS_OK) {
    status = natsOptions_SetErrorHandler(nats_options, OnAsyncError, nullptr);
  }
  if (status == NATS_OK && options.only_listed_servers) {
    status = natsOptions_SetIgnoreDiscoveredServers(nats_options, true);
  }
  natsConnection* connection = nullptr;
  if (status == NATS_OK) {
    status = natsConnection_Connect(&connection, nats_options);
  }
  natsOptions_Destroy(nats_options);
  if (status != NATS_OK) {
    return NatsError(
        status, 0,
        absl::StrCat("cluster: connecting to NATS at ", options.servers.front(),
                     " and ", options.servers.size() - 1, " more"));
  }
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = timeout_ms;
  jsCtx* jetstream = nullptr;
  status = natsConnection_JetStream(&jetstream, connection, &js_options);
  if (status != NATS_OK) {
    natsConnection_Destroy(connection);
    return NatsError(status, 0, "cluster: JetStream context");
  }
  return std::unique_ptr<JetStreamClient>(
      new JetStreamClient(std::move(options), connection, jetstream));
}

absl::Status JetStreamClient::EnsureStream(const StreamSpec& spec,
                                           absl::string_view what,
                                           absl::Duration wait) {
  jsOptions options = WaitOptions(wait);
  const int fewest = spec.min_replicas > 0
                         ? std::min(spec.min_replicas, spec.replicas)
                         : spec.replicas;
  std::vector<const char*> subjects;
  natsStatus status = NATS_OK;
  jsErrCode code = static_cast<jsErrCode>(0);
  for (int replicas = spec.replicas; replicas >= fewest; --replicas) {
    jsStreamConfig config = StreamConfig(spec, replicas, &subjects);
    jsStreamInfo* info = nullptr;
    code = static_cast<jsErrCode>(0);
    status = js_AddStream(&info, jetstream_, &config, &options, &code);
    if (info != nullptr) jsStreamInfo_Destroy(info);
    if (status == NATS_OK && replicas < spec.replicas) {
      spdlog::warn(
          "event=cluster_stream_underreplicated stream={} replicas={} "
          "wanted={}",
          spec.name, replicas, spec.replicas);
    }
    if (status == NATS_OK || !TooFewNodes(code)) break;
  }
  if (status != NATS_OK &&
      (code == JSStreamNameExistErr || code == JSStreamNotFoundErr)) {
    // Created by another server a moment ago: until its assignment reaches
    // the node asked, that node answers "stream not found" (10059), to the
    // add itself or to the info asked after it (servers starting together
    // met both). Asked again for a few seconds.
    const absl::Time give_up = absl::Now() + absl::Seconds(5);
    do {
      jsStreamInfo* info = nullptr;
      code = static_cast<jsErrCode>(0);
      status = js_GetStreamInfo(&info, jetstream_, spec.name.c_str(), &options,
                                &code);
      if (info != nullptr) jsStreamInfo_Destroy(info);
      if (status == NATS_OK || code != JSStreamNotFoundErr) break;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < give_up);
  }
  if (status != NATS_OK) {
    return NatsError(status, code, absl::StrCat("cluster: opening ", what));
  }
  return absl::OkStatus();
}

absl::Status JetStreamClient::RestoreReplicas(const StreamSpec& spec,
                                              absl::string_view what) {
  absl::StatusOr<StreamState> state =
      State(spec.name, "", absl::StrCat("cluster: the state of ", what));
  if (!state.ok()) return state.status();
  if (state->replicas >= spec.replicas) return absl::OkStatus();
  std::vector<const char*> subjects;
  jsStreamConfig config = StreamConfig(spec, spec.replicas, &subjects);
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_UpdateStream(&info, jetstream_, &config, nullptr, &code);
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (status != NATS_OK) {
    // UNAVAILABLE (NatsError) while too few nodes are online.
    return NatsError(status, code,
                     absl::StrCat("cluster: restoring the copies of ", what));
  }
  spdlog::info("event=cluster_stream_replicas_restored stream={} replicas={}",
               spec.name, spec.replicas);
  return absl::OkStatus();
}

absl::Status JetStreamClient::DeleteStream(const std::string& stream,
                                           absl::Duration wait) {
  jsOptions options = WaitOptions(wait);
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_DeleteStream(jetstream_, stream.c_str(), &options, &code);
  if (status == NATS_OK) return absl::OkStatus();
  const absl::Status error =
      NatsError(status, code, absl::StrCat("cluster: deleting ", stream));
  return absl::IsNotFound(error) ? absl::OkStatus() : error;
}

absl::StatusOr<std::vector<std::string>> JetStreamClient::StreamNames(
    absl::string_view what) const {
  jsStreamNamesList* got = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status = js_StreamNames(&got, jetstream_, nullptr, &code);
  const std::unique_ptr<jsStreamNamesList, void (*)(jsStreamNamesList*)> list(
      got, [](jsStreamNamesList* owned) { jsStreamNamesList_Destroy(owned); });
  // The C client answers NOT_FOUND for a cluster without streams.
  if (status == NATS_NOT_FOUND) return std::vector<std::string>{};
  if (status != NATS_OK) return NatsError(status, code, what);
  std::vector<std::string> names;
  for (int i = 0; i < list->Count; ++i) names.emplace_back(list->List[i]);
  return names;
}

absl::Status JetStreamClient::PurgeBefore(const std::string& stream,
                                          std::uint64_t keep_from,
                                          absl::string_view what) {
  if (keep_from <= 1) return absl::OkStatus();
  jsOptions purge;
  jsOptions_Init(&purge);
  purge.Stream.Purge.Sequence = keep_from;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_PurgeStream(jetstream_, stream.c_str(), &purge, &code);
  if (status != NATS_OK) return NatsError(status, code, what);
  return absl::OkStatus();
}

absl::StatusOr<JetStreamClient::StreamState> JetStreamClient::State(
    const std::string& stream, const std::string& subjects,
    absl::string_view what) const {
  jsOptions options;
  jsOptions_Init(&options);
  if (!subjects.empty()) options.Stream.Info.SubjectsFilter = subjects.c_str();
  jsStreamInfo* got = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_GetStreamInfo(&got, jetstream_, stream.c_str(), &options, &code);
  const std::unique_ptr<jsStreamInfo, void (*)(jsStreamInfo*)> info(
      got, [](jsStreamInfo* owned) { jsStreamInfo_Destroy(owned); });
  if (status != NATS_OK) return NatsError(status, code, what);
  StreamState state;
  state.first = info->State.FirstSeq;
  state.last = info->State.LastSeq;
  state.replicas = info->Config != nullptr ? info->Config->Replicas : 0;
  if (const jsStreamStateSubjects* listed = info->State.Subjects;
      listed != nullptr) {
    for (int i = 0; i < listed->Count; ++i) {
      state.subjects.emplace_back(listed->List[i].Subject,
                                  listed->List[i].Msgs);
    }
  }
  return state;
}

absl::StatusOr<StreamMessage> JetStreamClient::Get(
    const std::string& stream, std::uint64_t sequence,
    absl::string_view what) const {
  natsMsg* got = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_GetMsg(&got, jetstream_, stream.c_str(), sequence, nullptr, &code);
  const std::unique_ptr<natsMsg, void (*)(natsMsg*)> message(
      got, [](natsMsg* owned) { natsMsg_Destroy(owned); });
  if (status != NATS_OK) return NatsError(status, code, what);
  return ToStreamMessage(message.get(), natsMsg_GetSequence(message.get()));
}

StreamMessage ToStreamMessage(natsMsg* message, std::uint64_t sequence) {
  StreamMessage read;
  read.sequence = sequence;
  read.subject = natsMsg_GetSubject(message);
  const char* id = nullptr;
  if (natsMsgHeader_Get(message, kMessageIdHeader, &id) == NATS_OK) {
    read.message_id = id;
  }
  read.payload.assign(natsMsg_GetData(message), natsMsg_GetDataLength(message));
  return read;
}

absl::StatusOr<JetStreamClient::Published> JetStreamClient::Publish(
    const std::string& stream, const std::string& subject,
    const std::string& message_id, absl::string_view payload) {
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = message_id.c_str();
  options.ExpectStream = stream.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_Publish(&ack, jetstream_, subject.c_str(), payload.data(),
                 static_cast<int>(payload.size()), &options, &code);
  if (status != NATS_OK) {
    return NatsError(
        status, code,
        absl::StrCat("cluster: appending ", message_id, " to ", stream));
  }
  const Published published{ack->Sequence, ack->Duplicate};
  jsPubAck_Destroy(ack);
  return published;
}

}  // namespace streamreg
