#include "server/cluster/placement_store.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/sha256.h"
#include "core/base/byte_coding.h"
#include "nats/nats.h"

namespace streamreg {
namespace {

constexpr char kProposalStream[] = "streamreg-placement";
constexpr char kProposalSubject[] = "streamreg.placement";
constexpr char kServersBucket[] = "streamreg_servers";

// A proposal: set `model` to `servers` if it is at `revision`.
std::string EncodeProposal(absl::string_view model,
                           const std::vector<std::string>& servers,
                           std::uint64_t revision) {
  std::string bytes;
  ByteWriter out(&bytes);
  out.String(model);
  out.U64(revision);
  out.U64(servers.size());
  for (const std::string& server : servers) out.String(server);
  return bytes;
}

struct Proposal {
  std::string model;
  std::uint64_t revision = 0;
  std::vector<std::string> servers;
};

bool DecodeProposal(absl::string_view bytes, Proposal* out) {
  ByteReader in(bytes);
  out->model = in.String();
  out->revision = in.U64();
  const std::uint64_t count = in.U64();
  if (!in.ok() || count > in.remaining()) return false;
  out->servers.resize(count);
  for (std::string& server : out->servers) server = in.String();
  return in.done();
}

// The servers bucket, made (file storage, one value per key, entries
// expiring after `ttl`) if it does not exist.
absl::StatusOr<kvStore*> OpenServersBucket(JetStreamClient& client,
                                           int replicas, absl::Duration ttl) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = kServersBucket;
  config.History = 1;
  config.Replicas = replicas;
  config.StorageType = js_FileStorage;
  config.TTL = absl::ToInt64Nanoseconds(ttl);
  kvStore* store = nullptr;
  natsStatus status = js_CreateKeyValue(&store, client.jetstream(), &config);
  if (status != NATS_OK) {
    // Made before, by this server or another.
    status = js_KeyValue(&store, client.jetstream(), kServersBucket);
  }
  if (status != NATS_OK) {
    return NatsError(status, 0,
                     absl::StrCat("cluster: bucket ", kServersBucket));
  }
  return store;
}

}  // namespace

std::string PlacementStore::ServerKey(absl::string_view server) {
  return absl::StrReplaceAll(server, {{":", "="}});
}

absl::StatusOr<std::unique_ptr<PlacementStore>> PlacementStore::Open(
    JetStreamClient& client, Options options) {
  ModelLog::Options log_options;
  log_options.replicas = options.replicas;
  absl::StatusOr<ModelLog> proposals = ModelLog::OpenStream(
      client, kProposalStream, kProposalSubject, log_options);
  if (!proposals.ok()) return proposals.status();
  absl::StatusOr<ModelLog::Cursor> cursor = proposals->Follow(1);
  if (!cursor.ok()) return cursor.status();
  absl::StatusOr<kvStore*> servers =
      OpenServersBucket(client, options.replicas, options.server_ttl);
  if (!servers.ok()) return servers.status();
  return std::unique_ptr<PlacementStore>(
      new PlacementStore(*std::move(proposals), *std::move(cursor), *servers));
}

PlacementStore::~PlacementStore() { kvStore_Destroy(servers_); }

void PlacementStore::Apply(const LogEntry& entry) {
  applied_ = entry.sequence;
  Proposal proposal;
  // Every store skips a malformed proposal alike.
  if (!DecodeProposal(entry.payload, &proposal)) return;
  Placement& placement = placements_[proposal.model];
  if (placement.revision != proposal.revision) return;  // lost
  placement.servers = std::move(proposal.servers);
  placement.revision = entry.sequence;
}

absl::Status PlacementStore::CatchUp(std::uint64_t target) {
  if (target == 0) {
    absl::StatusOr<std::uint64_t> last = proposals_.LastSequence();
    if (!last.ok()) return last.status();
    target = *last;
  }
  const absl::Duration timeout = proposals_.client().options().request_timeout;
  while (applied_ < target) {
    absl::StatusOr<LogEntry> entry = cursor_.Next(timeout);
    if (!entry.ok()) {
      // The entries up to `target` are stored: not coming is the cluster's
      // unavailability.
      return absl::UnavailableError(entry.status().message());
    }
    Apply(*entry);
  }
  return absl::OkStatus();
}

absl::StatusOr<PlacementStore::Placement> PlacementStore::Get(
    absl::string_view model) {
  MutexLock lock(&mutex_);
  if (absl::Status caught_up = CatchUp(0); !caught_up.ok()) return caught_up;
  const auto found = placements_.find(model);
  return found == placements_.end() ? Placement{} : found->second;
}

absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
PlacementStore::All() {
  MutexLock lock(&mutex_);
  if (absl::Status caught_up = CatchUp(0); !caught_up.ok()) return caught_up;
  return placements_;
}

absl::StatusOr<std::uint64_t> PlacementStore::CompareAndSet(
    absl::string_view model, const std::vector<std::string>& servers,
    std::uint64_t revision) {
  // The proposal's id is its content: a retry after UNAVAILABLE (which may
  // have been stored) is deduplicated within the window and finds its own
  // outcome, and the same proposal from two servers is one.
  const std::string proposal = EncodeProposal(model, servers, revision);
  absl::StatusOr<ModelLog::Appended> appended = proposals_.Append(
      absl::StrCat("placement/", Sha256Hex(proposal)), proposal);
  if (!appended.ok()) return appended.status();
  MutexLock lock(&mutex_);
  if (absl::Status caught_up = CatchUp(appended->sequence); !caught_up.ok()) {
    return caught_up;
  }
  const Placement& now = placements_[std::string(model)];
  if (now.revision == appended->sequence) return now.revision;
  return absl::AbortedError(absl::StrCat("cluster: the placement of ", model,
                                         " changed (revision ", now.revision,
                                         ", not ", revision, ")"));
}

absl::Status PlacementStore::Heartbeat(absl::string_view server) {
  const std::string key = ServerKey(server);
  const std::string value(server);
  const natsStatus status =
      kvStore_Put(nullptr, servers_, key.c_str(), value.data(),
                  static_cast<int>(value.size()));
  if (status != NATS_OK) {
    return NatsError(status, 0, absl::StrCat("cluster: announcing ", server));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> PlacementStore::LiveServers() const {
  kvKeysList keys;
  const natsStatus status = kvStore_Keys(&keys, servers_, nullptr);
  std::vector<std::string> servers;
  if (status == NATS_NOT_FOUND) return servers;  // none announced
  if (status != NATS_OK) {
    return NatsError(status, 0, "cluster: the live servers");
  }
  for (int k = 0; k < keys.Count; ++k) {
    servers.push_back(absl::StrReplaceAll(keys.Keys[k], {{"=", ":"}}));
  }
  kvKeysList_Destroy(&keys);
  std::sort(servers.begin(), servers.end());
  return servers;
}

}  // namespace streamreg
