#include "server/cluster/placement_store.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/sha256.h"
#include "core/base/byte_coding.h"
#include "nats/nats.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

constexpr char kProposalStream[] = "streamreg-placement";
constexpr char kProposalSubject[] = "streamreg.placement";
constexpr char kServersBucket[] = "streamreg_servers";
constexpr char kSnapshotStream[] = "streamreg-placement-snap";
constexpr char kSnapshotSubject[] = "streamreg.placement_snap";

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

using Register = absl::flat_hash_map<std::string, PlacementStore::Placement>;

// The register, in name order: each model's name, revision and servers.
std::string EncodeRegister(const Register& placements) {
  std::vector<const Register::value_type*> sorted;
  sorted.reserve(placements.size());
  for (const auto& entry : placements) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::string bytes;
  ByteWriter out(&bytes);
  out.U64(sorted.size());
  for (const auto* entry : sorted) {
    out.String(entry->first);
    out.U64(entry->second.revision);
    out.U64(entry->second.servers.size());
    for (const std::string& server : entry->second.servers) out.String(server);
  }
  return bytes;
}

bool DecodeRegister(absl::string_view bytes, Register* out) {
  out->clear();
  ByteReader in(bytes);
  const std::uint64_t models = in.U64();
  if (!in.ok() || models > in.remaining()) return false;
  for (std::uint64_t m = 0; m < models && in.ok(); ++m) {
    std::string name = in.String();
    PlacementStore::Placement placement;
    placement.revision = in.U64();
    const std::uint64_t count = in.U64();
    if (!in.ok() || count > in.remaining()) return false;
    placement.servers.resize(count);
    for (std::string& server : placement.servers) server = in.String();
    (*out)[std::move(name)] = std::move(placement);
  }
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
  SnapshotStore::Options snapshot_options;
  snapshot_options.replicas = options.replicas;
  SnapshotStore snapshots = SnapshotStore::OpenStream(
      client, kSnapshotStream, kSnapshotSubject, snapshot_options);
  absl::StatusOr<kvStore*> servers =
      OpenServersBucket(client, options.replicas, options.server_ttl);
  if (!servers.ok()) return servers.status();
  std::unique_ptr<PlacementStore> store(
      new PlacementStore(*std::move(proposals), std::move(snapshots), *servers,
                         std::max<std::uint64_t>(options.compact_every, 1)));
  MutexLock lock(&store->mutex_);
  if (absl::Status loaded = store->LoadSnapshot(); !loaded.ok()) {
    return loaded;
  }
  return store;
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

absl::Status PlacementStore::LoadSnapshot() {
  cursor_.reset();
  applied_ = 0;
  placements_.clear();
  absl::StatusOr<SnapshotStore::Snapshot> snapshot = snapshots_.Newest();
  if (snapshot.ok()) {
    if (!DecodeRegister(snapshot->bytes, &placements_)) {
      placements_.clear();
      return absl::DataLossError(
          absl::StrCat("cluster: the placements' snapshot through proposal ",
                       snapshot->log_sequence, " is malformed"));
    }
    applied_ = snapshot->log_sequence;
  } else if (!absl::IsNotFound(snapshot.status())) {
    return snapshot.status();
  }
  snapshot_through_ = applied_;
  absl::StatusOr<ModelLog::Cursor> cursor = proposals_.Follow(applied_ + 1);
  if (!cursor.ok()) return cursor.status();
  cursor_.emplace(*std::move(cursor));
  return absl::OkStatus();
}

absl::Status PlacementStore::CatchUp(std::uint64_t target) {
  if (target == 0) {
    absl::StatusOr<std::uint64_t> last = proposals_.LastSequence();
    if (!last.ok()) return last.status();
    target = *last;
  }
  while (applied_ < target) {
    if (!cursor_.has_value()) {
      absl::StatusOr<ModelLog::Cursor> cursor = proposals_.Follow(applied_ + 1);
      if (!cursor.ok()) return cursor.status();
      cursor_.emplace(*std::move(cursor));
    }
    absl::StatusOr<LogEntry> entry = cursor_->NextStored();
    if (!entry.ok()) {
      // The next read follows the log afresh from here (its consumer may
      // be gone with a node).
      cursor_.reset();
      return absl::UnavailableError(entry.status().message());
    }
    if (entry->sequence <= applied_) continue;  // in the register already
    if (entry->sequence > applied_ + 1) {
      // The proposals after applied_ were compacted away: a newer snapshot
      // holds them.
      const std::uint64_t missing = applied_ + 1;
      if (absl::Status loaded = LoadSnapshot(); !loaded.ok()) return loaded;
      spdlog::info(
          "event=cluster_placements_reloaded missing={} snapshot_through={}",
          missing, applied_);
      if (applied_ < missing) {
        return absl::DataLossError(absl::StrCat(
            "cluster: proposal ", missing,
            " left the placement log and no snapshot holds it (the newest "
            "is through ",
            applied_, ")"));
      }
      continue;
    }
    Apply(*entry);
  }
  return absl::OkStatus();
}

absl::Status PlacementStore::CompactIfDue() {
  MutexLock compacting(&compact_mutex_);
  std::uint64_t through = 0;
  std::string bytes;
  {
    MutexLock lock(&mutex_);
    if (absl::Status caught_up = CatchUp(0); !caught_up.ok()) return caught_up;
    // (A reload while this store's last put was under way may have left
    // snapshot_through_ ahead of applied_.)
    if (applied_ < snapshot_through_ + compact_every_) return absl::OkStatus();
    through = applied_;
    bytes = EncodeRegister(placements_);
  }
  // Stored without the lock: reads and proposals go on meanwhile.
  absl::StatusOr<std::uint64_t> compactable = snapshots_.Put(through, bytes);
  if (!compactable.ok()) return compactable.status();
  {
    MutexLock lock(&mutex_);
    snapshot_through_ = std::max(snapshot_through_, through);
  }
  // The proposals the older kept snapshot includes leave the log.
  return *compactable == 0 ? absl::OkStatus()
                           : proposals_.Compact(*compactable);
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
  // The subjects of the bucket's stream that hold a message: one per
  // server whose announcement has not expired. Asked of the stream's
  // leader (its info), not read through a consumer (the C client's key
  // listing), whose making on every call waited on the cluster's metadata
  // leader: gone for seconds while a node is paused or elected anew.
  const std::string prefix = absl::StrCat("$KV.", kServersBucket, ".");
  absl::StatusOr<JetStreamClient::StreamState> state =
      proposals_.client().State(absl::StrCat("KV_", kServersBucket),
                                absl::StrCat(prefix, ">"),
                                "cluster: the live servers");
  if (!state.ok()) return state.status();
  std::vector<std::string> servers;
  for (const auto& [subject, messages] : state->subjects) {
    absl::string_view key = subject;
    if (messages == 0 || !absl::ConsumePrefix(&key, prefix)) continue;
    servers.push_back(absl::StrReplaceAll(key, {{"=", ":"}}));
  }
  std::sort(servers.begin(), servers.end());
  return servers;
}

}  // namespace streamreg
