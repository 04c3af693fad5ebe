#include "server/cluster/cluster_node.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/exponential_backoff.h"
#include "common/served_by.h"
#include "core/base/background_thread.h"
#include "core/base/stoppable_sleep.h"
#include "server/cluster/hosted_replica.h"
#include "server/cluster/log_follower.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/membership.h"
#include "server/cluster/rebalancer.h"
#include "server/cluster/replica_applier.h"
#include "server/cluster/replica_model.h"
#include "server/cluster/retried_until.h"
#include "server/cluster/stream_janitor.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

// Runs `step` every `interval` until `stop`.
template <class Step>
void Every(absl::Duration interval, std::stop_token stop, const Step& step) {
  do {
    step();
  } while (SleepForUnlessStopped(stop, interval));
}

// The longest pause between two tries to host a model (from
// reconcile_interval, doubling with each failure in a row): a stream's
// leader election or a NATS node's restart is waited out with a try every
// few seconds rather than four a second, and a model is hosted at most
// this long after the cluster can serve it again.
constexpr absl::Duration kLongestHostingPause = absl::Seconds(4);
// Models hosted at once (HostEach). Each may hold a snapshot being
// restored (hundreds of MB for 10^6 samples), and two cores restore two
// at a time at best; more than that only wait on the cluster together.
constexpr std::size_t kConcurrentHostings = 4;

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Start(
    ClusterOptions options, ModelRegistry* registry) {
  if (options.advertise.empty()) {
    return absl::InvalidArgumentError(
        "--advertise: empty (the address clients reach this server at)");
  }
  std::unique_ptr<ClusterNode> node(
      new ClusterNode(std::move(options), registry));
  const ClusterOptions& o = node->options_;
  JetStreamClient::Options client_options;
  client_options.servers = o.nats;
  client_options.request_timeout = o.request_timeout;
  client_options.name = absl::StrCat("streamreg-server ", o.advertise);
  absl::StatusOr<std::unique_ptr<JetStreamClient>> client =
      JetStreamClient::Connect(client_options);
  if (!client.ok()) return client.status();
  node->client_ = *std::move(client);
  const absl::Time deadline = absl::Now() + o.write_timeout;
  absl::StatusOr<std::unique_ptr<PlacementStore>> placements =
      RetriedUntil(deadline, [&] {
        return PlacementStore::Open(
            *node->client_,
            {.replicas = o.log_replicas, .server_ttl = o.server_ttl});
      });
  if (!placements.ok()) return placements.status();
  node->placements_ = *std::move(placements);
  absl::StatusOr<std::unique_ptr<FitExchange>> fits =
      FitExchange::Start(*node->client_);
  if (!fits.ok()) return fits.status();
  node->fits_ = *std::move(fits);
  node->membership_ = std::make_unique<Membership>(*node->placements_,
                                                   o.advertise, o.server_ttl);
  node->rebalancer_ = std::make_unique<Rebalancer>(
      *node->placements_, static_cast<std::size_t>(o.replicas));
  node->janitor_ = std::make_unique<StreamJanitor>(
      *node->client_, *node->placements_, o.orphan_sweep_interval);
  node->creation_ = std::make_unique<ModelCreation>(
      *node->client_, *node->placements_, *node->membership_, *node->janitor_,
      ModelCreation::Options{.replicas = o.replicas,
                             .log = node->LogOptions(),
                             .write_timeout = o.write_timeout});
  if (absl::Status announced = RetriedUntil(
          deadline, [&] { return node->placements_->Heartbeat(o.advertise); });
      !announced.ok()) {
    return announced;
  }
  ClusterNode* raw = node.get();
  registry->SetElsewhere(
      [raw](absl::string_view name) { return raw->Elsewhere(name); });
  // Heartbeats go on while the first reconcile hosts this server's models
  // (restoring a large one from its snapshot takes seconds): a server
  // restarted in place keeps its models rather than seeming gone.
  node->announcer_ =
      std::jthread([raw](std::stop_token stop) { raw->Announce(stop); });
  if (absl::Status reconciled = node->Reconcile(); !reconciled.ok()) {
    node->ReconcileFailed(reconciled);
  }
  node->snapshot_thread_ = std::jthread([raw](std::stop_token stop) {
    BeginBackgroundThread("log-snapshots");
    Every(raw->options_.reconcile_interval, stop, [raw, stop] {
      raw->snapshotter_.SnapshotDue(raw->replicas_.SnapshottedHere(), stop);
      raw->janitor_->RemoveAbandoned();
      raw->janitor_->SweepOrphansIfDue(raw->first_live_.load());
    });
  });
  node->thread_ = std::jthread([raw](std::stop_token stop) { raw->Run(stop); });
  spdlog::info(
      "event=cluster_joined address={} nats={} replicas={} log_replicas={}",
      o.advertise, absl::StrJoin(o.nats, ","), o.replicas, o.log_replicas);
  return node;
}

ClusterNode::~ClusterNode() {
  thread_.request_stop();
  snapshot_thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  // Still announced meanwhile: no model moves while it is snapshotted.
  if (options_.snapshot_on_leave) {
    snapshotter_.SnapshotBeforeLeaving(replicas_.SnapshottedHere());
  }
  announcer_.request_stop();
  if (announcer_.joinable()) announcer_.join();
  registry_->SetElsewhere([](absl::string_view) {
    return absl::UnavailableError("the server is leaving its cluster");
  });
  MutexLock lock(&reconcile_mutex_);
  for (const auto& [name, replica] : replicas_.All()) {
    Release(name, /*deleted=*/false);
  }
}

void ClusterNode::Run(std::stop_token stop) {
  BeginBackgroundThread("reconciler");
  Every(options_.reconcile_interval, stop, [this] {
    if (absl::Status status = Reconcile(); !status.ok()) {
      ReconcileFailed(status);
    }
  });
}

void ClusterNode::ReconcileFailed(const absl::Status& status) {
  counters_.reconcile_failures.fetch_add(1);
  spdlog::warn("event=cluster_reconcile_failed error=\"{}\"",
               std::string(status.message()));
}

void ClusterNode::Announce(std::stop_token stop) {
  BeginBackgroundThread("announcer");
  Every(options_.reconcile_interval, stop,
        [this] { membership_->Heartbeat().IgnoreError(); });  // counted
}

absl::Status ClusterNode::Reconcile() {
  absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
      placements = placements_->All();
  if (!placements.ok()) return placements.status();
  {
    MutexLock lock(&reconcile_mutex_);
    // Placed here and created, with the generation of their logs.
    std::map<std::string, std::uint64_t> mine;
    std::set<std::string> deleted;
    for (const auto& [name, placement] : *placements) {
      if (placement.servers.empty()) deleted.insert(name);
      if (placement.created &&
          std::find(placement.servers.begin(), placement.servers.end(),
                    options_.advertise) != placement.servers.end()) {
        mine.emplace(name, placement.log);
      }
    }
    std::vector<std::string> gone;
    for (const auto& [name, replica] : replicas_.All()) {
      const auto placed = mine.find(name);
      if (placed == mine.end()) {
        gone.push_back(name);
      } else if (replica->log().stream() !=
                 LogStream::StreamName(name, placed->second)) {
        // Deleted and created again between two rounds: another model.
        gone.push_back(name);
        deleted.insert(name);
      }
    }
    for (const auto& [name, replica] : replicas_.All()) {
      // Its log moved on past what it applied: hosted again below, from
      // the newest snapshot.
      if (mine.contains(name) && replica->fell_behind()) gone.push_back(name);
    }
    for (const std::string& name : gone) {
      Release(name, deleted.contains(name));
    }
    std::erase_if(hosting_retries_, [&](const auto& retry) {
      return !mine.contains(retry.first);
    });
    std::vector<ToHost> due;
    const absl::Time now = absl::Now();
    for (const auto& [name, log] : mine) {
      if (replicas_.Contains(name)) continue;
      const auto retry = hosting_retries_.find(name);
      if (retry == hosting_retries_.end() || now >= retry->second.next_try) {
        due.push_back({.name = name, .log = log});
      }
    }
    HostEach(due);
    // The first server of a placement snapshots the model.
    for (const auto& [name, replica] : replicas_.All()) {
      const auto placed = placements->find(name);
      const std::vector<std::string> servers = placed != placements->end()
                                                   ? placed->second.servers
                                                   : std::vector<std::string>{};
      replica->snapshots_here.store(!servers.empty() &&
                                    servers.front() == options_.advertise);
      std::vector<std::string> others;
      for (const std::string& server : servers) {
        if (server != options_.advertise) others.push_back(server);
      }
      replica->SetOtherServers(std::move(others));
    }
  }
  absl::StatusOr<std::vector<std::string>> live =
      membership_->SteadyLiveServers();
  if (!live.ok()) return live.status();
  const bool first_live = !live->empty() && live->front() == options_.advertise;
  first_live_.store(first_live);
  if (first_live) {
    // While this server's heartbeats are refused (a NATS node paused or
    // the live servers' stream electing a leader), the others' likely are
    // too: their absence from the list says nothing, and moving their
    // models would make every new replica replay its log. Moves wait
    // until heartbeats have been taken for server_ttl.
    if (membership_->HeartbeatsSteady()) {
      rebalancer_->Rebalance(*placements, *live);
    }
    if (absl::Status compacted = placements_->CompactIfDue(); !compacted.ok()) {
      spdlog::warn("event=cluster_placements_compaction_failed error=\"{}\"",
                   std::string(compacted.message()));
    }
  }
  return absl::OkStatus();
}

void ClusterNode::HostEach(const std::vector<ToHost>& models) {
  std::vector<absl::StatusOr<Started>> started(
      models.size(), absl::UnknownError("not started"));
  std::atomic<std::size_t> next{0};
  const auto start_next = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < models.size();) {
      started[i] = StartReplica(models[i]);
    }
  };
  {
    std::vector<std::jthread> helpers;
    for (std::size_t t = 1; t < std::min(models.size(), kConcurrentHostings);
         ++t) {
      helpers.emplace_back(start_next);
    }
    start_next();
  }  // the helpers joined
  for (std::size_t i = 0; i < models.size(); ++i) {
    const std::string& name = models[i].name;
    const absl::Status hosted = started[i].ok()
                                    ? Adopt(name, *std::move(started[i]))
                                    : started[i].status();
    if (hosted.ok()) {
      hosting_retries_.erase(name);
    } else {
      HostingFailed(name, hosted);
    }
  }
  not_hosted_.store(hosting_retries_.size());
}

void ClusterNode::HostingFailed(const std::string& name,
                                const absl::Status& status) {
  HostingRetry& retry = hosting_retries_[name];
  ++retry.failures;
  const absl::Duration pause =
      BackoffCeiling(retry.failures, options_.reconcile_interval,
                     kLongestHostingPause, 2.0) *
      absl::Uniform(random_, 0.5, 1.0);
  retry.next_try = absl::Now() + pause;
  counters_.host_failures.fetch_add(1);
  spdlog::warn(
      "event=cluster_host_failed model={} failures={} retry_in_seconds={:.2f} "
      "error=\"{}\"",
      name, retry.failures, absl::ToDoubleSeconds(pause),
      std::string(status.message()));
}

absl::StatusOr<ClusterNode::Started> ClusterNode::StartReplica(
    const ToHost& placed) {
  const std::string& name = placed.name;
  // The creator makes the log (Create); a server that hosts the model only
  // reads it, so hosting asks the cluster's metadata leader nothing (the
  // follower asks for its consumer on its own thread), and never makes a
  // stream that a create about to clear stale streams would delete under
  // it.
  const LogStream::Options copies = LogOptions();
  LogStream log = LogStream::Attach(*client_, name, copies, placed.log);
  SnapshotStore snapshots =
      SnapshotStore::Open(*client_, name,
                          {.replicas = copies.replicas,
                           .min_replicas = copies.min_replicas,
                           .chunk_bytes = options_.snapshot_chunk_bytes},
                          placed.log);
  absl::StatusOr<ReplicaModel> made =
      MakeReplicaModel(*registry_, name, log, snapshots);
  if (!made.ok()) return made.status();
  const std::shared_ptr<HostedModel>& model = made->model;
  const std::uint64_t from = made->from;
  auto replica = std::make_shared<HostedReplica>(
      std::move(log), std::move(snapshots), model, from,
      ReplicatedLog::Options{
          .writer = absl::StrCat(options_.advertise, "/",
                                 absl::ToUnixNanos(absl::Now())),
          .append_timeout = options_.write_timeout,
          .linger = options_.learn_linger});
  // A model restored from snapshots goes on with their chain: its next
  // increment builds on them (as on a snapshot this server put).
  replica->increment_base = model->model().restored_base();
  replica->samples_at_last_put = model->samples_logged();
  model->AttachWriteLog(replica);
  // The first server of the placement computes each MLKR fit; the others
  // take its result (docs/cluster.md, "MLKR fits computed once").
  fits_->Add(replica->log().stream(), model,
             [weak = std::weak_ptr<HostedReplica>(replica)] {
               const std::shared_ptr<HostedReplica> hosted = weak.lock();
               return hosted != nullptr && hosted->snapshots_here.load();
             });
  replica->Follow(LogFollower::Start(
      replica->log(),
      ReplicaApplier(model->log_writer(), HostedModel::kMaxUnlearned), from,
      made->stored));
  return Started{.model = std::move(made->model),
                 .replica = std::move(replica),
                 .from = from};
}

absl::Status ClusterNode::Adopt(const std::string& name, Started started) {
  if (absl::Status adopted = registry_->Adopt(std::move(started.model));
      !adopted.ok()) {
    started.replica->Stop();
    fits_->Remove(started.replica->log().stream());
    return adopted;
  }
  replicas_.Add(name, std::move(started.replica));
  spdlog::info("event=cluster_hosting model={} from_log_sequence={}", name,
               started.from);
  return absl::OkStatus();
}

LogStream::Options ClusterNode::LogOptions() const {
  // A majority of the copies asked for: as many as hold each entry of a
  // full log with the most nodes down that it survives.
  return {.replicas = options_.log_replicas,
          .min_replicas = options_.log_replicas / 2 + 1};
}

void ClusterNode::Release(const std::string& name, bool deleted) {
  const std::shared_ptr<HostedReplica> replica = replicas_.Take(name);
  if (replica == nullptr) return;
  // Out of the registry first, so that no new call finds it; then the
  // follower stops.
  if (deleted) {
    if (absl::Status status = registry_->Delete(name); !status.ok()) {
      spdlog::warn("event=cluster_release_failed model={} error=\"{}\"", name,
                   std::string(status.message()));
    }
  } else {
    registry_->Release(name);
  }
  replica->Stop();
  fits_->Remove(replica->log().stream());
  spdlog::info("event=cluster_released model={}", name);
}

absl::Status ClusterNode::Create(const ModelIdentity& identity) {
  if (absl::Status created = creation_->Create(identity); !created.ok()) {
    return created;
  }
  {
    // Tried at once, whatever an earlier model of the name left.
    MutexLock lock(&reconcile_mutex_);
    hosting_retries_.erase(identity.name);
  }
  return Reconcile();
}

absl::Status ClusterNode::Delete(absl::string_view name) {
  absl::StatusOr<std::uint64_t> log = creation_->Unplace(name);
  if (!log.ok()) return log.status();
  // Unplaced: every server releases it at its next reconcile, this one now.
  if (absl::Status reconciled = Reconcile(); !reconciled.ok()) {
    ReconcileFailed(reconciled);
  }
  if (absl::Status deleted =
          StreamJanitor::RemoveModelStreams(*client_, name, *log);
      !deleted.ok()) {
    // The next create of the name removes it.
    spdlog::warn("event=cluster_log_delete_failed model={} error=\"{}\"",
                 std::string(name), std::string(deleted.message()));
  }
  spdlog::info("event=cluster_deleted model={}", std::string(name));
  return absl::OkStatus();
}

absl::Status ClusterNode::Elsewhere(absl::string_view name) {
  absl::StatusOr<PlacementStore::Placement> placement = placements_->Get(name);
  if (!placement.ok()) return placement.status();
  if (placement->servers.empty()) {
    return absl::NotFoundError(absl::StrCat("model '", name, "' not found"));
  }
  if (!placement->created) {
    return absl::UnavailableError(
        absl::StrCat("model '", name, "' is being created; retry"));
  }
  if (std::find(placement->servers.begin(), placement->servers.end(),
                options_.advertise) != placement->servers.end()) {
    return absl::UnavailableError(absl::StrCat(
        "model '", name, "' is being set up on this server; retry"));
  }
  return ServedByError(name, placement->servers);
}

absl::StatusOr<std::map<std::string, std::vector<std::string>>>
ClusterNode::Placements() {
  absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
      all = placements_->All();
  if (!all.ok()) return all.status();
  std::map<std::string, std::vector<std::string>> placed;
  for (auto& [name, placement] : *all) {
    // A deleted model's register stays, naming no server; a model being
    // created is listed once it is.
    if (!placement.servers.empty() && placement.created) {
      placed.emplace(name, std::move(placement.servers));
    }
  }
  return placed;
}

void ClusterNode::StopFollowing() {
  for (const auto& [name, replica] : replicas_.All()) {
    replica->StopFollowing();
  }
}

std::vector<std::string> ClusterNode::hosted() const {
  std::vector<std::string> names;
  for (const auto& [name, replica] : replicas_.All()) names.push_back(name);
  return names;
}

ClusterNode::Report ClusterNode::report() const {
  Report report{
      .live_servers = membership_->live_servers(),
      .not_hosted = not_hosted_.load(),
      .heartbeat_failures = membership_->heartbeat_failures(),
      .reconcile_failures = counters_.reconcile_failures.load(),
      .host_failures = counters_.host_failures.load(),
      .snapshots = snapshotter_.counters().snapshots.load(),
      .snapshot_increments = snapshotter_.counters().increments.load(),
      .snapshot_failures = snapshotter_.counters().failures.load(),
      .models_moved = rebalancer_->models_moved(),
      .logs_given_up = creation_->logs_given_up(),
      .orphan_streams_removed = janitor_->orphans_removed(),
  };
  const FitExchange::Counters fits = fits_->counters();
  report.fit_results_published = fits.published;
  report.fit_results_received = fits.received;
  report.fit_results_refused = fits.refused;
  for (const auto& [name, replica] : replicas_.All()) {
    report.hosted.push_back(replica->report());
  }
  return report;
}

}  // namespace streamreg
