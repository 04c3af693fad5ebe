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
#include "core/base/record_parts.h"
#include "nats/nats.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

constexpr char kProposalStream[] = "streamreg-placement";
constexpr char kProposalSubject[] = "streamreg.placement";
constexpr char kServersBucket[] = "streamreg_servers";
constexpr char kSnapshotStream[] = "streamreg-placement-snap";
constexpr char kSnapshotSubject[] = "streamreg.placement_snap";
// Proposals a store is behind by at most that it reads one by one from the
// stream's leader (a message get each) rather than through its consumer:
// a consumer is placed on any of the stream's nodes, a killed one included
// (nats-server 2.9 does not take it for offline), and each read there
// waits out the request timeout before the consumer is made afresh. The
// reads of a change or a placement are one or two proposals behind.
constexpr std::uint64_t kMostReadOneByOne = 64;

using Placement = PlacementStore::Placement;

// A placement's revision and servers, then its log's generation and
// whether it is created (the part added with generations, which a
// placement written before them lacks).
void WritePlacement(const Placement& placement, ByteWriter& out) {
  out.U64(placement.revision);
  out.U64(placement.servers.size());
  for (const std::string& server : placement.servers) out.String(server);
  out.U64(placement.log);
  out.U8(placement.created ? 1 : 0);
}

// `with_log`: the generation and created follow the servers.
bool ReadPlacement(ByteReader& in, bool with_log, Placement* out) {
  out->revision = in.U64();
  const std::uint64_t count = in.U64();
  if (!in.ok() || count > in.remaining()) return false;
  out->servers.resize(count);
  for (std::string& server : out->servers) server = in.String();
  out->log = 0;
  out->created = true;
  if (with_log) {
    out->log = in.U64();
    out->created = in.U8() != 0;
  }
  return in.ok();
}

// A proposal: set `model` to `next` if it is at next.revision.
std::string EncodeProposal(absl::string_view model, const Placement& next) {
  std::string bytes;
  ByteWriter out(&bytes);
  out.String(model);
  WritePlacement(next, out);
  return bytes;
}

struct Proposal {
  std::string model;
  Placement next;  // its revision: the one it replaces
};

absl::Status DecodeProposal(absl::string_view bytes, Proposal* out) {
  absl::Status status;
  // Written before generations: the servers end it.
  for (const bool with_log : {true, false}) {
    ByteReader in(bytes);
    RecordParts parts(in, "placement proposal");
    out->model = in.String();
    if (parts.Read("model", true) &&
        parts.Read(absl::StrCat("placement of '", out->model, "'"),
                   ReadPlacement(in, with_log, &out->next)) &&
        parts.End()) {
      return absl::OkStatus();
    }
    if (with_log) status = parts.status();
  }
  return status;
}

using Register = absl::flat_hash_map<std::string, Placement>;

// Opens a register written with generations (one written before them
// starts with its model count, which is never this).
constexpr std::uint64_t kRegisterWithLogs = ~std::uint64_t{0};

// The register, in name order: each model's name and placement.
std::string EncodeRegister(const Register& placements) {
  std::vector<const Register::value_type*> sorted;
  sorted.reserve(placements.size());
  for (const auto& entry : placements) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::string bytes;
  ByteWriter out(&bytes);
  out.U64(kRegisterWithLogs);
  out.U64(sorted.size());
  for (const auto* entry : sorted) {
    out.String(entry->first);
    WritePlacement(entry->second, out);
  }
  return bytes;
}

absl::Status DecodeRegister(absl::string_view bytes, Register* out) {
  out->clear();
  ByteReader in(bytes);
  RecordParts parts(in, "placements");
  std::uint64_t models = in.U64();
  const bool with_log = models == kRegisterWithLogs;
  if (with_log) models = in.U64();
  if (!parts.Read("model count", models <= in.remaining())) {
    return parts.status();
  }
  for (std::uint64_t m = 0; m < models; ++m) {
    std::string name = in.String();
    Placement placement;
    if (!parts.Read(absl::StrCat("model ", m, "'s name"), true) ||
        !parts.Read(absl::StrCat("placement of '", name, "'"),
                    ReadPlacement(in, with_log, &placement))) {
      return parts.status();
    }
    (*out)[std::move(name)] = std::move(placement);
  }
  parts.End();
  return parts.status();
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
  LogStream::Options log_options;
  log_options.replicas = options.replicas;
  absl::StatusOr<LogStream> proposals = LogStream::OpenStream(
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
  if (absl::Status status = DecodeProposal(entry.payload, &proposal);
      !status.ok()) {
    spdlog::warn("event=cluster_proposal_skipped sequence={} error=\"{}\"",
                 entry.sequence, std::string(status.message()));
    return;
  }
  Placement& placement = placements_[proposal.model];
  if (placement.revision != proposal.next.revision) return;  // lost
  placement = std::move(proposal.next);
  placement.revision = entry.sequence;
}

absl::Status PlacementStore::LoadSnapshot() {
  cursor_.reset();
  applied_ = 0;
  placements_.clear();
  absl::StatusOr<SnapshotStore::Snapshot> snapshot = snapshots_.Newest();
  if (snapshot.ok()) {
    if (absl::Status status = DecodeRegister(snapshot->bytes, &placements_);
        !status.ok()) {
      placements_.clear();
      return absl::DataLossError(absl::StrCat(
          "cluster: the placements' snapshot through proposal ",
          snapshot->log_sequence, " is malformed: ", status.message()));
    }
    applied_ = snapshot->log_sequence;
  } else if (!absl::IsNotFound(snapshot.status())) {
    return snapshot.status();
  }
  snapshot_through_ = applied_;
  // The proposals after it: read by the next CatchUp.
  return absl::OkStatus();
}

absl::Status PlacementStore::CompactedPast(std::uint64_t missing) const {
  absl::StatusOr<std::uint64_t> first = proposals_.FirstSequence();
  if (!first.ok()) return first.status();
  if (*first > missing) return absl::OkStatus();
  // Not compacted: a leader behind the log answered (one paused a while,
  // not yet told it was replaced), which holds only a prefix of it. Read
  // again later; the register never goes back to a snapshot for it.
  return absl::UnavailableError(absl::StrCat(
      "cluster: proposal ", missing,
      " not found by the placements' stream leader, which keeps the log "
      "from ",
      *first));
}

absl::Status PlacementStore::ReloadSnapshot(std::uint64_t missing) {
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
  return absl::OkStatus();
}

absl::Status PlacementStore::CatchUp(std::uint64_t target) {
  if (target == 0) {
    absl::StatusOr<std::uint64_t> last = proposals_.LastSequence();
    if (!last.ok()) return last.status();
    target = *last;
  }
  while (applied_ < target) {
    if (target - applied_ <= kMostReadOneByOne) {
      // The cursor, if any, is left behind: the next long read follows the
      // log afresh.
      cursor_.reset();
      absl::StatusOr<LogEntry> entry = proposals_.Entry(applied_ + 1);
      if (entry.ok()) {
        Apply(*entry);
        continue;
      }
      if (!absl::IsNotFound(entry.status())) return entry.status();
      if (absl::Status compacted = CompactedPast(applied_ + 1);
          !compacted.ok()) {
        return compacted;
      }
      // Compacted away: a newer snapshot holds it.
      if (absl::Status reloaded = ReloadSnapshot(applied_ + 1);
          !reloaded.ok()) {
        return reloaded;
      }
      continue;
    }
    if (!cursor_.has_value()) {
      absl::StatusOr<LogStream::Cursor> cursor =
          proposals_.Follow(applied_ + 1);
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
      if (absl::Status reloaded = ReloadSnapshot(applied_ + 1);
          !reloaded.ok()) {
        return reloaded;
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
    absl::string_view model, const Placement& next) {
  // The proposal's id is its content: a retry after UNAVAILABLE (which may
  // have been stored) is deduplicated within the window and finds its own
  // outcome, and the same proposal from two servers is one.
  const std::string proposal = EncodeProposal(model, next);
  absl::StatusOr<LogStream::Appended> appended = proposals_.Append(
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
                                         ", not ", next.revision, ")"));
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
