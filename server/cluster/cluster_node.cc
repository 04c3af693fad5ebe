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
#include "server/cluster/catching_up.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/log_follower.h"
#include "server/cluster/model_log.h"
#include "server/cluster/orphan_streams.h"
#include "server/cluster/rendezvous.h"
#include "server/cluster/retried_until.h"
#include "server/hosting/snapshot_schedule.h"
#include "server/storage/snapshot_reader.h"
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

// How long after a failed snapshot of a model the next is tried.
constexpr absl::Duration kSnapshotRetryPause = absl::Seconds(5);
// How often a model's streams made short of copies are looked at.
constexpr absl::Duration kReplicasCheckPause = absl::Seconds(10);
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

// How long a create waits for its new log's first leader before it gives
// that log up and makes another (ClusterNode::Create): kLogLeaderWait for
// each of the first kQuickLogTries logs, then doubling to
// kLongestLogLeaderWait (a cluster that makes no log that fast at all).
// nats-server 2.9 has a new stream's preferred leader (one of its peers,
// drawn at random) campaign at once, and a healthy cluster elects it in
// well under a second; the others campaign only after an election
// timeout, 4 to 8 s measured. With a NATS node killed, 36 logs of 95 paid
// it (measured): about the one in three whose preferred leader is the dead
// node.
constexpr absl::Duration kLogLeaderWait = absl::Seconds(1);
constexpr int kQuickLogTries = 3;
constexpr absl::Duration kLongestLogLeaderWait = absl::Seconds(4);

// Deletes the log and the snapshots of model `name` of log generation
// `log`, if any, waiting up to `wait` (0: the request timeout) for each
// answer.
absl::Status RemoveStreams(JetStreamClient& client, absl::string_view name,
                           std::uint64_t log,
                           absl::Duration wait = absl::ZeroDuration()) {
  absl::Status log_removed = ModelLog::Remove(client, name, log, wait);
  absl::Status snapshots = SnapshotStore::Remove(client, name, log, wait);
  return log_removed.ok() ? snapshots : log_removed;
}

// An abandoned log's removal: how long a try waits for its answer (the
// removal of a stream that never elected a leader is never answered, and
// the snapshotting thread makes the tries), and how long after a failed
// try the next is made (which finds it gone).
constexpr absl::Duration kAbandonedRemovalWait = absl::Milliseconds(250);
constexpr absl::Duration kAbandonedRetryPause = absl::Seconds(2);

bool SameServers(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

// One model hosted here: its log and snapshots, the follower applying the
// log to the hosted model, and the model's writes, which go to the log
// (WriteLog).
class ClusterNode::Replica : public WriteLog {
 public:
  Replica(ModelLog log, SnapshotStore snapshots,
          std::shared_ptr<HostedModel> model, std::uint64_t replayed_from,
          std::string writer, absl::Duration timeout, absl::Duration linger)
      : log_(std::move(log)),
        snapshots_(std::move(snapshots)),
        model_(model),
        name_(model->name()),
        replayed_from_(replayed_from),
        writer_(std::move(writer)),
        timeout_(timeout),
        linger_(linger) {}

  const std::string& name() const { return name_; }
  const ModelLog& log() const { return log_; }
  ModelLog& log() { return log_; }
  SnapshotStore& snapshots() { return snapshots_; }
  // Null once the model is gone (the model holds its replica, as its
  // write log: not the other way round).
  std::shared_ptr<HostedModel> model() const { return model_.lock(); }
  // Whether this server is the one that snapshots the model (the first of
  // its placement), as the last reconcile found.
  std::atomic<bool> snapshots_here{false};
  // The snapshotting thread's: no snapshot is tried before this (a failed
  // one waits a while rather than capturing again every round).
  absl::Time next_snapshot_try = absl::InfinitePast();
  // The snapshotting thread's too: what the last snapshot this server put
  // (whole or an increment) or restored the model from holds, which the
  // next increment builds on (none for a model made from its log until it
  // put a whole one, nor after a put failed), and the samples it had
  // applied then.
  std::optional<SnapshotBase> increment_base;
  std::uint64_t samples_at_last_put = 0;
  // Set by the snapshotting thread: the log sequence of a whole snapshot of
  // it being put (SnapshotDueModels; 0: none), its increments meanwhile
  // building on the chain before it, and the last log entry the newest
  // snapshot this server put includes.
  std::atomic<std::uint64_t> whole_being_put{0};
  std::atomic<std::uint64_t> snapshot_through{0};
  // The snapshotting thread's too: whether the log and snapshot streams
  // were found with all their copies (made while a NATS node was offline,
  // they may have fewer), and when to look next if not.
  bool replicas_whole = false;
  absl::Time next_replicas_check = absl::InfinitePast();
  // What report() shows of it.
  ClusterNode::Report::Hosted Progress() const {
    MutexLock lock(&mutex_);
    // In this order: a snapshot through past the whole one being put was
    // put while it was.
    Report::Hosted progress{.model = name_,
                            .replayed_from = replayed_from_,
                            .snapshot_through = snapshot_through.load(),
                            .whole_snapshot_being_put = whole_being_put.load()};
    if (follower_ != nullptr) {
      progress.applied = follower_->applied();
      progress.catching_up = follower_->catching_up();
      progress.fell_behind = follower_->fell_behind();
    }
    return progress;
  }
  // The follower stopped: the log it needs next was compacted away.
  bool fell_behind() const {
    MutexLock lock(&mutex_);
    return follower_ != nullptr && follower_->fell_behind();
  }
  void Follow(std::shared_ptr<LogFollower> follower) {
    MutexLock lock(&mutex_);
    follower_ = std::move(follower);
  }
  // Stops applying the log, keeping the follower (which then answers
  // every write UNAVAILABLE): the server is going away.
  void StopFollowing() {
    MutexLock lock(&mutex_);
    if (follower_ != nullptr) follower_->Stop();
  }
  // The model's other servers, as the last reconcile found them: where a
  // write goes while this replica catches up on its log.
  void SetOtherServers(std::vector<std::string> servers) {
    MutexLock lock(&mutex_);
    other_servers_ = std::move(servers);
  }
  // Stops applying the log (the model left this server).
  void Stop() {
    std::shared_ptr<LogFollower> follower;
    {
      MutexLock lock(&mutex_);
      follower = std::move(follower_);
    }
    // Writes waiting for it are answered now, not at their deadline.
    if (follower != nullptr) follower->Stop();
  }

  absl::StatusOr<LearnOutcome> AppendSamples(
      const ValidatedSamples& batch, const WriteOptions& options) override {
    // Applied (and counted) by the log's follower meanwhile: the announced
    // count is settled once this replica has applied the batch, or given
    // up waiting for it.
    struct Settle {
      const std::weak_ptr<HostedModel>& model;
      std::uint64_t announced;
      ~Settle() {
        if (auto hosted = model.lock(); hosted != nullptr) {
          hosted->WithdrawSamples(announced);
        }
      }
    } settle{model_, options.announced ? batch.size() : 0};
    // Samples without ids give each batch its own message.
    bool resent = false;
    absl::StatusOr<LearnOutcome> outcome =
        AppendAndWait(BatchMessageId(name_, batch.samples(), UniqueId()),
                      EncodeSamplesEntry(batch.samples(), options.take_overs),
                      options.deadline, &resent);
    if (outcome.ok() && resent) {
      // The log had the batch already: its first copy learned what was new.
      outcome->duplicates += outcome->accepted;
      outcome->accepted = 0;
      outcome->duplicate.assign(batch.size(), true);
    }
    return outcome;
  }
  // Asked by a read of a model with no sample learned here.
  absl::Status ReadableHere() const override {
    std::shared_ptr<LogFollower> follower = Follower();
    if (follower == nullptr) return absl::OkStatus();
    return WhileCatchingUp(*follower, CallKind::kRead);
  }
  absl::Duration UnappliedReadWait() const override { return absl::Seconds(1); }
  absl::Duration GroupLinger() const override { return linger_; }
  absl::Status ReadElsewhere(absl::string_view reason) const override {
    std::vector<std::string> others = OtherServers();
    if (others.empty()) return absl::OkStatus();
    return SendElsewhereError(absl::StrCat(reason, "; read from"), others);
  }
  // A refit runs on every replica, from the log: `progress` is not told.
  absl::Status AppendRefit(
      const std::function<void(std::size_t, std::size_t)>& /*progress*/,
      absl::Time deadline) override {
    bool resent = false;
    return AppendAndWait(absl::StrCat(name_, "/refit/", UniqueId()),
                         EncodeRefitEntry(), deadline, &resent)
        .status();
  }
  // Appended under a message id of the work's key: a second record of it
  // (another server's, or a retry) within JetStream's duplicate window is
  // the first, and any later one changes nothing where it is applied.
  absl::Status AppendTakeOver(const TakeOverKey& key) override {
    bool resent = false;
    return AppendAndWait(absl::StrCat(name_, "/take-over/",
                                      TakeOverKeyName(key), "/", key.earliest),
                         EncodeTakeOverEntry(key), absl::Now() + timeout_,
                         &resent)
        .status();
  }

 private:
  std::string UniqueId() {
    return absl::StrCat(writer_, "/", next_unique_.fetch_add(1));
  }

  std::shared_ptr<LogFollower> Follower() const {
    MutexLock lock(&mutex_);
    return follower_;
  }

  // Where a call goes while this replica replays its log's tail
  // (server/cluster/catching_up.h); OK once it does not.
  absl::Status WhileCatchingUp(const LogFollower& follower,
                               CallKind kind) const {
    return streamreg::WhileCatchingUp(name_, follower.catching_up(),
                                      follower.applied(), OtherServers(), kind);
  }

  // Appends the entry (retrying for at most the write timeout) and waits
  // for this replica to apply it until the client's `deadline`; *resent if
  // the log held an entry of that id already (whose outcome it returns).
  absl::StatusOr<LearnOutcome> AppendAndWait(std::string message_id,
                                             std::string payload,
                                             absl::Time deadline,
                                             bool* resent) {
    std::shared_ptr<LogFollower> follower = Follower();
    if (follower == nullptr) {
      return absl::UnavailableError(absl::StrCat(
          "model '", name_, "' is no longer served by this server; retry"));
    }
    // Just hosted and still replaying its log's tail, this replica would
    // answer only once all of it is applied: a server of the model that
    // is not catching up takes the write. (Alone, it waits.)
    if (absl::Status elsewhere = WhileCatchingUp(*follower, CallKind::kWrite);
        !elsewhere.ok()) {
      return elsewhere;
    }
    absl::StatusOr<ModelLog::Appended> appended =
        RetriedUntil(std::min(absl::Now() + timeout_, deadline),
                     [&] { return log_.Append(message_id, payload); });
    if (!appended.ok()) return appended.status();
    *resent = appended->duplicate;
    // A retried message answers with its first copy's entry, whose outcome
    // is the one to report (and whose bytes may differ from this copy's).
    // Applying may wait behind the model's background work (an index
    // take-over) as long as a single server's write would.
    absl::StatusOr<LearnOutcome> outcome =
        appended->duplicate
            ? follower->WaitApplied(appended->sequence, deadline)
            : follower->ApplyAppended({.sequence = appended->sequence,
                                       .subject = log_.subject(),
                                       .message_id = std::move(message_id),
                                       .payload = std::move(payload)},
                                      deadline);
    if (absl::IsDeadlineExceeded(outcome.status())) {
      // Stored, not yet applied here: the client's retry (same ids) finds
      // the same entry.
      return absl::UnavailableError(outcome.status().message());
    }
    return outcome;
  }

  std::vector<std::string> OtherServers() const {
    MutexLock lock(&mutex_);
    return other_servers_;
  }

  ModelLog log_;
  SnapshotStore snapshots_;  // the snapshotting thread's
  const std::weak_ptr<HostedModel> model_;
  const std::string name_;
  const std::uint64_t replayed_from_;
  // This server's address and a start time: unique among the writers of
  // any log.
  const std::string writer_;
  const absl::Duration timeout_;
  const absl::Duration linger_;
  std::atomic<std::uint64_t> next_unique_{1};
  mutable Mutex mutex_;
  std::shared_ptr<LogFollower> follower_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> other_servers_ ABSL_GUARDED_BY(mutex_);
};

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
  node->snapshotter_ = std::jthread([raw](std::stop_token stop) {
    BeginBackgroundThread("log-snapshots");
    Every(raw->options_.reconcile_interval, stop, [raw, stop] {
      raw->SnapshotDueModels(stop);
      raw->RemoveAbandonedLogs();
      raw->SweepOrphanStreamsIfDue();
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
  snapshotter_.request_stop();
  if (thread_.joinable()) thread_.join();
  if (snapshotter_.joinable()) snapshotter_.join();
  // Still announced meanwhile: no model moves while it is snapshotted.
  if (options_.snapshot_on_leave) SnapshotBeforeLeaving();
  announcer_.request_stop();
  if (announcer_.joinable()) announcer_.join();
  registry_->SetElsewhere([](absl::string_view) {
    return absl::UnavailableError("the server is leaving its cluster");
  });
  MutexLock lock(&reconcile_mutex_);
  std::vector<std::string> names;
  for (const auto& [name, replica] : replicas_) names.push_back(name);
  for (const std::string& name : names) Release(name, /*deleted=*/false);
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
  Every(options_.reconcile_interval, stop, [this] {
    if (absl::Status status = placements_->Heartbeat(options_.advertise);
        !status.ok()) {
      counters_.heartbeat_failures.fetch_add(1);
      last_heartbeat_failure_ns_.store(absl::ToUnixNanos(absl::Now()));
      spdlog::warn("event=cluster_heartbeat_failed error=\"{}\"",
                   std::string(status.message()));
    }
  });
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
    for (const auto& [name, replica] : replicas_) {
      const auto placed = mine.find(name);
      if (placed == mine.end()) {
        gone.push_back(name);
      } else if (replica->log().stream() !=
                 ModelLog::StreamName(name, placed->second)) {
        // Deleted and created again between two rounds: another model.
        gone.push_back(name);
        deleted.insert(name);
      }
    }
    for (const auto& [name, replica] : replicas_) {
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
      if (replicas_.contains(name)) continue;
      const auto retry = hosting_retries_.find(name);
      if (retry == hosting_retries_.end() || now >= retry->second.next_try) {
        due.push_back({.name = name, .log = log});
      }
    }
    HostEach(due);
    // The first server of a placement snapshots the model.
    for (const auto& [name, replica] : replicas_) {
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
  absl::StatusOr<std::vector<std::string>> live = SteadyLiveServers();
  if (!live.ok()) return live.status();
  const bool first_live = !live->empty() && live->front() == options_.advertise;
  first_live_.store(first_live);
  if (first_live) {
    // While this server's heartbeats are refused (a NATS node paused or
    // the live servers' stream electing a leader), the others' likely are
    // too: their absence from the list says nothing, and moving their
    // models would make every new replica replay its log. Moves wait
    // until heartbeats have been taken for server_ttl.
    if (absl::Now() - LastHeartbeatFailure() >= options_.server_ttl) {
      Rebalance(*placements, *live);
    }
    if (absl::Status compacted = placements_->CompactIfDue(); !compacted.ok()) {
      spdlog::warn("event=cluster_placements_compaction_failed error=\"{}\"",
                   std::string(compacted.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ClusterNode::SteadyLiveServers() {
  absl::StatusOr<std::vector<std::string>> live = placements_->LiveServers();
  MutexLock lock(&seen_mutex_);
  if (!live.ok()) {
    listing_failed_ = true;
    return live.status();
  }
  const absl::Time now = absl::Now();
  if (listing_failed_) {
    // The cluster could not be asked (a NATS node paused, an election):
    // the servers' heartbeats may have been refused meanwhile and their
    // liveness expired, so an absence now says nothing yet. Each known
    // server gets its grace again from now.
    for (auto& [server, seen] : last_seen_) seen = now;
    listing_failed_ = false;
  }
  for (const std::string& server : *live) last_seen_[server] = now;
  std::vector<std::string> steady;
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    if (now - it->second > options_.server_ttl / 2) {
      last_seen_.erase(it++);
    } else {
      steady.push_back((it++)->first);
    }
  }
  live_servers_.store(steady.size());
  return steady;  // in name order (a std::map's)
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
  const ModelLog::Options copies = LogOptions();
  ModelLog log = ModelLog::Attach(*client_, name, copies, placed.log);
  SnapshotStore snapshots =
      SnapshotStore::Open(*client_, name,
                          {.replicas = copies.replicas,
                           .min_replicas = copies.min_replicas,
                           .chunk_bytes = options_.snapshot_chunk_bytes},
                          placed.log);
  std::uint64_t from = 1, stored = 0;
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      MakeReplica(name, log, snapshots, &from, &stored);
  if (!model.ok()) return model.status();
  auto replica = std::make_shared<Replica>(
      std::move(log), std::move(snapshots), *model, from,
      absl::StrCat(options_.advertise, "/", absl::ToUnixNanos(absl::Now())),
      options_.write_timeout, options_.learn_linger);
  // A model restored from snapshots goes on with their chain: its next
  // increment builds on them (as on a snapshot this server put).
  replica->increment_base = (*model)->model().restored_base();
  replica->samples_at_last_put = (*model)->samples_logged();
  (*model)->AttachWriteLog(replica);
  // The first server of the placement computes each MLKR fit; the others
  // take its result (docs/cluster.md, "MLKR fits computed once").
  fits_->Add(replica->log().stream(), *model,
             [weak = std::weak_ptr<Replica>(replica)] {
               const std::shared_ptr<Replica> hosted = weak.lock();
               return hosted != nullptr && hosted->snapshots_here.load();
             });
  replica->Follow(LogFollower::Start(replica->log(), *model, from, stored));
  return Started{
      .model = *std::move(model), .replica = std::move(replica), .from = from};
}

absl::Status ClusterNode::Adopt(const std::string& name, Started started) {
  if (absl::Status adopted = registry_->Adopt(std::move(started.model));
      !adopted.ok()) {
    started.replica->Stop();
    fits_->Remove(started.replica->log().stream());
    return adopted;
  }
  AddReplica(name, std::move(started.replica));
  spdlog::info("event=cluster_hosting model={} from_log_sequence={}", name,
               started.from);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<HostedModel>> ClusterNode::MakeReplica(
    const std::string& name, const ModelLog& log, SnapshotStore& snapshots,
    std::uint64_t* from, std::uint64_t* stored) {
  absl::StatusOr<ModelLog::Bounds> bounds = log.StoredBounds();
  if (!bounds.ok()) return bounds.status();
  *stored = bounds->last;
  // A log of its create entry alone has no snapshot (a model just made,
  // whose snapshot stream is made by its first snapshot).
  absl::StatusOr<SnapshotStore::Snapshot> newest =
      absl::NotFoundError("no samples yet");
  const absl::Time start = absl::Now();
  if (bounds->first > 1 || bounds->last > 1) newest = snapshots.Newest();
  if (newest.ok()) {
    const absl::Time read = absl::Now();
    const std::string where =
        absl::StrCat("the snapshot of model '", name, "' at log sequence ",
                     newest->log_sequence);
    // The whole snapshot and its increments, restored as one.
    std::vector<SnapshotPart> parts = {{newest->bytes, newest->log_sequence}};
    std::size_t bytes = newest->bytes.size();
    for (const SnapshotStore::Snapshot::Increment& increment :
         newest->increments) {
      parts.push_back({increment.bytes, increment.log_sequence});
      bytes += increment.bytes.size();
    }
    absl::StatusOr<RestoredSnapshot> restored =
        RestoreSnapshotChain(parts, where);
    if (!restored.ok()) return restored.status();
    if (restored->header.identity.name != name) {
      return absl::DataLossError(absl::StrCat(
          where, " holds model '", restored->header.identity.name, "'"));
    }
    *from = newest->newest_log_sequence() + 1;
    spdlog::info(
        "event=cluster_snapshot_restored model={} log_sequence={} "
        "increments={} bytes={} inserted_rows={} read_seconds={:.3f} "
        "restore_seconds={:.3f}",
        name, newest->newest_log_sequence(), newest->increments.size(), bytes,
        restored->model->restore_insertions(),
        absl::ToDoubleSeconds(read - start),
        absl::ToDoubleSeconds(absl::Now() - read));
    absl::StatusOr<std::shared_ptr<HostedModel>> model =
        registry_->MakeRestored(*std::move(restored));
    // The next increment may build on the chain read (if it is still the
    // newest then): the restored model is exactly its newest part.
    if (model.ok()) snapshots.BuildOn(*newest);
    return model;
  }
  if (!absl::IsNotFound(newest.status())) {
    // The snapshots cannot be read now (their stream's leader being
    // elected, say): the log does while it still holds its create entry.
    if (bounds->first != 1) return newest.status();
    spdlog::info(
        "event=cluster_snapshot_unread model={} error=\"{}\" replay=whole_log",
        name, std::string(newest.status().message()));
  }
  // No snapshot: the whole log, from its create entry.
  if (bounds->last == 0) {
    return absl::NotFoundError(
        absl::StrCat("model '", name, "': its log holds no create entry yet"));
  }
  absl::StatusOr<LogEntry> first = log.Entry(1);
  if (!first.ok()) return first.status();
  DecodedLogEntry create;
  if (absl::Status decoded = DecodeLogEntry(first->payload, first->sequence,
                                            ModelConfig{}, &create);
      !decoded.ok()) {
    return decoded;
  }
  if (create.kind != LogEntryKind::kCreate || first->sequence != 1) {
    return absl::DataLossError(
        absl::StrCat("model '", name,
                     "': its log does not start with create, and it has "
                     "no snapshot"));
  }
  ModelIdentity& identity = create.identity;
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      registry_->Make(identity.name, std::move(identity.config),
                      std::move(identity.input_names), identity.create_time);
  if (!model.ok()) return model.status();
  // Made from it: the create entry is applied. Its follower reads on from
  // the next, and this server's own writes apply without a consumer.
  (*model)->NoteAppliedFromLog(1);
  *from = 2;
  return model;
}

// A whole snapshot being put: what was captured (its bytes stay where the
// put reads them) and how far the put got.
struct ClusterNode::WholePut {
  std::shared_ptr<Replica> replica;
  std::unique_ptr<HostedModel::LogSnapshot> snapshot;
  SnapshotStore::PendingPut put;
  absl::Duration capture;
  absl::Time start;
  absl::Status result;  // once the put is over
};

struct ClusterNode::SnapshotStart {
  absl::Status status = absl::OkStatus();
  std::optional<WholePut> whole = std::nullopt;
};

void ClusterNode::SnapshotDueModels(std::stop_token stop) {
  std::vector<std::shared_ptr<Replica>> mine;
  {
    MutexLock lock(&reconcile_mutex_);
    for (const auto& [name, replica] : replicas_) {
      if (replica->snapshots_here.load()) mine.push_back(replica);
    }
  }
  std::vector<WholePut> whole_puts;
  for (const std::shared_ptr<Replica>& replica : mine) {
    SnapshotIfDue(replica, whole_puts);
    RestoreReplicasIfDue(*replica);
  }
  while (!whole_puts.empty() && !stop.stop_requested()) {
    std::erase_if(whole_puts, [this](WholePut& put) {
      return PutWholeSlice(put, options_.whole_put_slice);
    });
    for (const std::shared_ptr<Replica>& replica : mine) {
      SnapshotIfDue(replica, whole_puts);
    }
  }
  for (WholePut& put : whole_puts) put.replica->whole_being_put = 0;
}

ModelLog::Options ClusterNode::LogOptions() const {
  // A majority of the copies asked for: as many as hold each entry of a
  // full log with the most nodes down that it survives.
  return {.replicas = options_.log_replicas,
          .min_replicas = options_.log_replicas / 2 + 1};
}

void ClusterNode::RestoreReplicasIfDue(Replica& replica) {
  if (replica.replicas_whole || absl::Now() < replica.next_replicas_check) {
    return;
  }
  absl::Status restored = replica.log().RestoreReplicas();
  if (restored.ok()) restored = replica.snapshots().RestoreReplicas();
  replica.replicas_whole = restored.ok();
  replica.next_replicas_check = absl::Now() + kReplicasCheckPause;
  if (!restored.ok() && !absl::IsUnavailable(restored)) {
    spdlog::warn("event=cluster_replicas_restore_failed model={} error=\"{}\"",
                 replica.name(), std::string(restored.message()));
  }
}

void ClusterNode::SnapshotIfDue(const std::shared_ptr<Replica>& replica,
                                std::vector<WholePut>& whole_puts) {
  const std::shared_ptr<HostedModel> model = replica->model();
  if (model == nullptr || absl::Now() < replica->next_snapshot_try) return;
  const SnapshotSchedule schedule{options_.snapshot_every_samples,
                                  options_.snapshot_interval};
  const bool putting_whole = replica->whole_being_put.load() != 0;
  const bool whole =
      !putting_whole &&
      schedule.Due(*model, model->samples_since_snapshot() > 0, absl::Now());
  if (!whole && !IncrementDue(*replica, *model)) return;
  // A refused increment waits for the whole one being put, if any.
  SnapshotStart started = StartSnapshot(replica, *model, /*increment=*/!whole,
                                        /*whole_if_refused=*/!putting_whole);
  if (!started.whole.has_value()) return;
  replica->whole_being_put = started.whole->snapshot->log_sequence;
  whole_puts.push_back(*std::move(started.whole));
}

bool ClusterNode::IncrementDue(const Replica& replica,
                               const HostedModel& model) const {
  const std::uint64_t every = options_.snapshot_increment_samples;
  return every > 0 && replica.increment_base.has_value() &&
         model.samples_logged() >= replica.samples_at_last_put + every;
}

void ClusterNode::Failed(Replica& replica, const std::string& model,
                         const absl::Status& status) {
  counters_.snapshot_failures.fetch_add(1);
  spdlog::warn("event=cluster_snapshot_failed model={} error=\"{}\"", model,
               std::string(status.message()));
  // Tried again a while later rather than captured again every round.
  replica.next_snapshot_try = absl::Now() + kSnapshotRetryPause;
}

ClusterNode::SnapshotStart ClusterNode::StartSnapshot(
    const std::shared_ptr<Replica>& replica, HostedModel& model, bool increment,
    bool whole_if_refused) {
  if (increment && replica->increment_base.has_value()) {
    const absl::Status put = PutIncrement(*replica, model);
    if (!absl::IsFailedPrecondition(put)) {
      if (!put.ok()) Failed(*replica, model.name(), put);
      return {.status = put};
    }
    if (!whole_if_refused) return {.status = put};
  }
  absl::StatusOr<WholePut> begun = BeginWholePut(replica);
  if (!begun.ok()) {
    Failed(*replica, model.name(), begun.status());
    return {.status = begun.status()};
  }
  return {.status = absl::OkStatus(), .whole = *std::move(begun)};
}

absl::Status ClusterNode::Snapshot(const std::shared_ptr<Replica>& replica,
                                   bool increment) {
  const std::shared_ptr<HostedModel> model = replica->model();
  if (model == nullptr) return absl::OkStatus();
  SnapshotStart started = StartSnapshot(replica, *model, increment,
                                        /*whole_if_refused=*/true);
  if (!started.whole.has_value()) return started.status;
  while (!PutWholeSlice(*started.whole, absl::InfiniteDuration())) {
  }
  return started.whole->result;
}

absl::Status ClusterNode::PutIncrement(Replica& replica, HostedModel& model) {
  const absl::Time start = absl::Now();
  absl::StatusOr<HostedModel::LogSnapshot> snapshot =
      model.CaptureForLog(&*replica.increment_base);
  if (!snapshot.ok()) {
    if (absl::IsFailedPrecondition(snapshot.status())) {
      replica.increment_base.reset();  // until a whole one is stored
    }
    return snapshot.status();
  }
  const absl::Duration capture = absl::Now() - start;
  if (absl::Status put = replica.snapshots().PutIncrement(
          snapshot->log_sequence, snapshot->bytes);
      !put.ok()) {
    // Refused (another server's snapshot came since) or not stored: the
    // next one is whole.
    replica.increment_base.reset();
    return put;
  }
  return Stored(replica, model, *snapshot, 0, capture, start);
}

absl::StatusOr<ClusterNode::WholePut> ClusterNode::BeginWholePut(
    std::shared_ptr<Replica> replica) {
  const std::shared_ptr<HostedModel> model = replica->model();
  if (model == nullptr) {
    return absl::NotFoundError("cluster: the model is no longer hosted here");
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<HostedModel::LogSnapshot> captured = model->CaptureForLog();
  if (!captured.ok()) return captured.status();
  auto snapshot =
      std::make_unique<HostedModel::LogSnapshot>(*std::move(captured));
  const absl::Duration capture = absl::Now() - start;
  absl::StatusOr<SnapshotStore::PendingPut> put =
      replica->snapshots().BeginPut(snapshot->log_sequence, snapshot->bytes);
  if (!put.ok()) return put.status();
  return WholePut{.replica = std::move(replica),
                  .snapshot = std::move(snapshot),
                  .put = *std::move(put),
                  .capture = capture,
                  .start = start,
                  .result = absl::OkStatus()};
}

bool ClusterNode::PutWholeSlice(WholePut& put, absl::Duration slice) {
  Replica& replica = *put.replica;
  const std::shared_ptr<HostedModel> model = replica.model();
  if (model == nullptr) {  // released meanwhile
    replica.whole_being_put = 0;
    put.result = absl::CancelledError("cluster: the model was released");
    return true;
  }
  SnapshotStore& store = replica.snapshots();
  absl::Status status = store.PutChunks(put.put, slice);
  if (status.ok() && !put.put.chunks_stored()) return false;
  replica.whole_being_put = 0;  // before what it stores is reported
  if (status.ok()) {
    absl::StatusOr<std::uint64_t> freed = store.FinishPut(put.put);
    status = freed.ok() ? Stored(replica, *model, *put.snapshot, *freed,
                                 put.capture, put.start)
                        : freed.status();
  }
  if (!status.ok()) {
    // Its head may be stored (a purge or the compaction failed after it),
    // and the store then builds on it: the next snapshot is whole.
    replica.increment_base.reset();
    Failed(replica, model->name(), status);
  }
  put.result = status;
  return true;
}

absl::Status ClusterNode::Stored(Replica& replica, HostedModel& model,
                                 const HostedModel::LogSnapshot& snapshot,
                                 std::uint64_t freed, absl::Duration capture,
                                 absl::Time start) {
  replica.increment_base = snapshot.base;
  replica.samples_at_last_put = snapshot.num_samples;
  // Increments put while this whole one was may have gone further.
  if (snapshot.log_sequence > replica.snapshot_through.load()) {
    replica.snapshot_through = snapshot.log_sequence;
  }
  if (!snapshot.increment) model.SnapshotStored(snapshot.num_samples);
  // What both snapshots kept include is needed by nobody. A replica still
  // behind it reads the newer snapshot instead (LogFollower::fell_behind).
  if (freed > 0) {
    if (absl::Status compacted = replica.log().Compact(freed);
        !compacted.ok()) {
      return compacted;
    }
  }
  (snapshot.increment ? counters_.snapshot_increments : counters_.snapshots)
      .fetch_add(1);
  spdlog::info(
      "event=cluster_snapshot model={} log_sequence={} samples={} bytes={} "
      "increment={} seconds={:.3f} capture_seconds={:.3f} "
      "log_compacted_through={}",
      model.name(), snapshot.log_sequence, snapshot.num_samples,
      snapshot.bytes.size(), snapshot.increment,
      absl::ToDoubleSeconds(absl::Now() - start),
      absl::ToDoubleSeconds(capture), freed);
  return absl::OkStatus();
}

void ClusterNode::SnapshotBeforeLeaving() {
  MutexLock lock(&reconcile_mutex_);
  const absl::Time wait_until = absl::Now() + options_.leave_snapshot_wait;
  for (const auto& [name, replica] : replicas_) {
    if (!replica->snapshots_here.load()) continue;
    // What it applied so far is what the snapshot holds.
    replica->Stop();
    const std::shared_ptr<HostedModel> model = replica->model();
    if (model == nullptr || model->samples_since_snapshot() == 0 ||
        model->samples_logged() == replica->samples_at_last_put) {
      continue;  // its last snapshot (or increment) holds every sample
    }
    while (!model->model().BackgroundWorkSettled() &&
           absl::Now() < wait_until) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!model->model().BackgroundWorkSettled()) {
      spdlog::warn(
          "event=cluster_leave_snapshot_skipped model={} reason=\"background "
          "work still running after {}\"",
          name, absl::FormatDuration(options_.leave_snapshot_wait));
      continue;
    }
    // The cluster unreachable: the next models' puts would wait as long
    // each, and the server is stopping.
    // An increment where one can be built (and increments are on):
    // seconds sooner at 10^6 samples.
    if (absl::Status status = Snapshot(
            replica, /*increment=*/options_.snapshot_increment_samples > 0);
        absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) {
      return;
    }
  }
}

void ClusterNode::Release(const std::string& name, bool deleted) {
  const auto it = replicas_.find(name);
  if (it == replicas_.end()) return;
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
  it->second->Stop();
  fits_->Remove(it->second->log().stream());
  RemoveReplica(name);
  spdlog::info("event=cluster_released model={}", name);
}

void ClusterNode::Rebalance(
    const absl::flat_hash_map<std::string, PlacementStore::Placement>&
        placements,
    const std::vector<std::string>& live) {
  for (const auto& [name, placement] : placements) {
    if (placement.servers.empty()) continue;  // deleted
    std::vector<std::string> owners = RendezvousOwners(
        name, live, static_cast<std::size_t>(options_.replicas));
    if (SameServers(owners, placement.servers)) continue;
    PlacementStore::Placement next = placement;
    next.servers = std::move(owners);
    absl::StatusOr<std::uint64_t> moved =
        placements_->CompareAndSet(name, next);
    // ABORTED: another change came first; the next round looks again.
    if (moved.ok()) {
      counters_.models_moved.fetch_add(1);
      spdlog::info("event=cluster_replaced model={} from={} to={}", name,
                   absl::StrJoin(placement.servers, ","),
                   absl::StrJoin(next.servers, ","));
    } else if (!absl::IsAborted(moved.status())) {
      spdlog::warn("event=cluster_replace_failed model={} error=\"{}\"", name,
                   std::string(moved.status().message()));
    }
  }
}

absl::Status ClusterNode::Create(const ModelIdentity& identity) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + options_.write_timeout;
  int logs_given_up = 0;
  for (;;) {
    absl::StatusOr<PlacementStore::Placement> placement =
        RetriedUntil(deadline, [&] { return placements_->Get(identity.name); });
    if (!placement.ok()) return placement.status();
    const absl::Status created = CreateAt(identity, *std::move(placement),
                                          start, deadline, &logs_given_up);
    // ABORTED: the placement changed meanwhile; what it is now decides.
    if (!absl::IsAborted(created)) return created;
    if (absl::Now() > deadline) {
      return absl::UnavailableError(
          absl::StrCat("model '", identity.name,
                       "': its placement kept changing while it was created; "
                       "retry"));
    }
  }
}

absl::Status ClusterNode::CreateAt(const ModelIdentity& identity,
                                   PlacementStore::Placement placement,
                                   absl::Time started, absl::Time deadline,
                                   int* logs_given_up) {
  const std::string& name = identity.name;
  if (placement.servers.empty()) {
    absl::StatusOr<PlacementStore::Placement> placed =
        PlaceNew(name, placement, deadline);
    if (!placed.ok()) return placed.status();
    placement = *std::move(placed);
  }
  const std::string entry = EncodeCreateEntry(identity);
  ModelLog log = ModelLog::Attach(*client_, name, LogOptions(), placement.log);
  if (!placement.created) {
    // The log's first leader is waited for up to `wait`; a log that has
    // none by then is given up for one of the next generation (its
    // preferred leader, drawn anew, is likely alive).
    const absl::Duration wait =
        BackoffCeiling(std::max(1, *logs_given_up + 2 - kQuickLogTries),
                       kLogLeaderWait, kLongestLogLeaderWait, 2.0);
    const absl::Time start = absl::Now();
    const absl::Status made = RetriedUntil(deadline, [&] {
      const absl::Status ensured = log.Ensure(wait);
      // Timed out (the client's clock may wake a little early): given up
      // below, not asked again.
      if (!ensured.ok() && absl::Now() - start >= wait * 0.9) {
        return absl::DeadlineExceededError(ensured.message());
      }
      return ensured;
    });
    if (absl::IsDeadlineExceeded(made)) {
      if (absl::Now() < deadline) {
        return GiveUpLog(name, placement, absl::Now() - start, deadline,
                         logs_given_up);
      }
      // The next create of the name (a client's retry) goes on from here.
      return absl::UnavailableError(made.message());
    }
    if (!made.ok()) return made;
    absl::StatusOr<ModelLog::Appended> appended = RetriedUntil(deadline, [&] {
      return log.Append(absl::StrCat(name, "/create"), entry);
    });
    if (!appended.ok()) return appended.status();
  }
  absl::StatusOr<LogEntry> first =
      RetriedUntil(deadline, [&] { return log.Entry(1); });
  if (placement.created && absl::IsNotFound(first.status())) {
    // Compacted away (the model has snapshots): it exists.
    return absl::AlreadyExistsError(
        absl::StrCat("model '", name, "' already exists"));
  }
  if (!first.ok()) return first.status();
  if (!placement.created) {
    // Its create entry is there (this call's, or one an earlier creator
    // appended before it failed): the servers host it from now on, and no
    // create gives this log up any more. ABORTED if another create gave it
    // up first: this call's entry, in a log nobody uses, was never
    // acknowledged.
    PlacementStore::Placement done = placement;
    done.created = true;
    absl::StatusOr<std::uint64_t> marked = RetriedUntil(
        deadline, [&] { return placements_->CompareAndSet(name, done); });
    if (!marked.ok()) return marked.status();
  }
  if (first->payload != entry) {
    return absl::AlreadyExistsError(
        absl::StrCat("model '", name, "' already exists"));
  }
  spdlog::info("event=cluster_created model={} stream={} seconds={:.3f}", name,
               log.stream(), absl::ToDoubleSeconds(absl::Now() - started));
  {
    // Tried at once, whatever an earlier model of the name left.
    MutexLock lock(&reconcile_mutex_);
    hosting_retries_.erase(name);
  }
  return Reconcile();
}

absl::StatusOr<PlacementStore::Placement> ClusterNode::PlaceNew(
    const std::string& name, const PlacementStore::Placement& previous,
    absl::Time deadline) {
  absl::StatusOr<std::vector<std::string>> live =
      RetriedUntil(deadline, [&] { return SteadyLiveServers(); });
  if (!live.ok()) return live.status();
  if (live->empty()) {
    return absl::UnavailableError("cluster: no live server to place on");
  }
  // A log of its own: whatever an earlier model of the name left in its
  // log (a deletion that could not remove it) is never read.
  PlacementStore::Placement next{
      .servers = RendezvousOwners(name, *live,
                                  static_cast<std::size_t>(options_.replicas)),
      .revision = previous.revision,
      .log = previous.log + 1,
      .created = false};
  absl::StatusOr<std::uint64_t> placed = RetriedUntil(
      deadline, [&] { return placements_->CompareAndSet(name, next); });
  if (!placed.ok()) return placed.status();
  if (previous.revision != 0) Abandon(name, previous.log);
  next.revision = *placed;
  return next;
}

absl::Status ClusterNode::GiveUpLog(const std::string& name,
                                    const PlacementStore::Placement& placement,
                                    absl::Duration waited, absl::Time deadline,
                                    int* logs_given_up) {
  PlacementStore::Placement next = placement;
  ++next.log;
  absl::StatusOr<std::uint64_t> moved = RetriedUntil(
      deadline, [&] { return placements_->CompareAndSet(name, next); });
  if (!moved.ok()) return moved.status();
  ++*logs_given_up;
  counters_.logs_given_up.fetch_add(1);
  spdlog::warn(
      "event=cluster_log_given_up model={} stream={} next_stream={} "
      "waited_seconds={:.3f} reason=\"no leader elected in time\"",
      name, ModelLog::StreamName(name, placement.log),
      ModelLog::StreamName(name, next.log), absl::ToDoubleSeconds(waited));
  Abandon(name, placement.log);
  // The placement changed: the next try reads it.
  return absl::AbortedError("the model's log was given up");
}

absl::Status ClusterNode::Delete(absl::string_view name) {
  const absl::Time deadline = absl::Now() + options_.write_timeout;
  std::uint64_t log = 0;
  for (;;) {
    absl::StatusOr<PlacementStore::Placement> placement =
        RetriedUntil(deadline, [&] { return placements_->Get(name); });
    if (!placement.ok()) return placement.status();
    if (placement->servers.empty()) {
      return absl::NotFoundError(absl::StrCat("model '", name, "' not found"));
    }
    log = placement->log;
    // Its log's generation stays: the next create of the name starts the
    // one after.
    PlacementStore::Placement emptied_placement = *placement;
    emptied_placement.servers.clear();
    absl::StatusOr<std::uint64_t> emptied = RetriedUntil(deadline, [&] {
      return placements_->CompareAndSet(name, emptied_placement);
    });
    if (emptied.ok()) break;
    // ABORTED: moved meanwhile; delete what it is now.
    if (!absl::IsAborted(emptied.status()) || absl::Now() > deadline) {
      return emptied.status();
    }
  }
  // Unplaced: every server releases it at its next reconcile, this one now.
  if (absl::Status reconciled = Reconcile(); !reconciled.ok()) {
    ReconcileFailed(reconciled);
  }
  if (absl::Status deleted = RemoveStreams(*client_, name, log);
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
  MutexLock lock(&reconcile_mutex_);
  for (const auto& [name, replica] : replicas_) replica->StopFollowing();
}

std::vector<std::string> ClusterNode::hosted() const {
  MutexLock lock(&hosted_mutex_);
  std::vector<std::string> names;
  for (const auto& [name, replica] : hosted_) names.push_back(name);
  return names;
}

void ClusterNode::AddReplica(const std::string& name,
                             std::shared_ptr<Replica> replica) {
  {
    MutexLock lock(&hosted_mutex_);
    hosted_[name] = replica;
  }
  replicas_.emplace(name, std::move(replica));
}

void ClusterNode::RemoveReplica(const std::string& name) {
  replicas_.erase(name);
  MutexLock lock(&hosted_mutex_);
  hosted_.erase(name);
}

void ClusterNode::Abandon(const std::string& name, std::uint64_t log) {
  MutexLock lock(&abandoned_mutex_);
  abandoned_logs_.try_emplace({name, log}, absl::InfinitePast());
}

void ClusterNode::RemoveAbandonedLogs() {
  std::vector<std::pair<std::string, std::uint64_t>> due;
  {
    MutexLock lock(&abandoned_mutex_);
    const absl::Time now = absl::Now();
    for (const auto& [log, next_try] : abandoned_logs_) {
      if (now >= next_try) due.push_back(log);
    }
  }
  for (const auto& [name, log] : due) {
    // A log that never elected a leader is removed by the metadata leader,
    // but only its leader would answer the request: it times out, and the
    // next try finds the stream gone.
    const absl::Status removed =
        RemoveStreams(*client_, name, log, kAbandonedRemovalWait);
    MutexLock lock(&abandoned_mutex_);
    if (removed.ok()) {
      abandoned_logs_.erase({name, log});
      spdlog::info("event=cluster_abandoned_log_removed model={} stream={}",
                   name, ModelLog::StreamName(name, log));
    } else {
      abandoned_logs_[{name, log}] = absl::Now() + kAbandonedRetryPause;
      spdlog::info(
          "event=cluster_abandoned_log_kept model={} stream={} "
          "retry_in_seconds={} error=\"{}\"",
          name, ModelLog::StreamName(name, log),
          absl::ToDoubleSeconds(kAbandonedRetryPause),
          std::string(removed.message()));
    }
  }
}

void ClusterNode::SweepOrphanStreamsIfDue() {
  const absl::Time now = absl::Now();
  if (!first_live_.load() || now < next_orphan_sweep_) return;
  next_orphan_sweep_ = now + options_.orphan_sweep_interval;
  // Listed before the placements are read: a stream listed was made after
  // its placement (IsOrphan), so the placements read next know it.
  absl::StatusOr<std::vector<std::string>> names =
      client_->StreamNames("cluster: listing the streams");
  absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
      placements = names.ok() ? placements_->All() : names.status();
  if (!placements.ok()) {
    spdlog::warn("event=cluster_orphan_sweep_failed error=\"{}\"",
                 std::string(placements.status().message()));
    return;
  }
  for (const std::string& name : *names) {
    const std::optional<ModelStream> stream = ParseModelStream(name);
    if (!stream.has_value() || !IsOrphan(*stream, *placements)) continue;
    const PlacementStore::Placement& placement = placements->at(stream->model);
    // A stream that never elected a leader is removed without an answer
    // (as an abandoned log is): the next sweep finds it gone.
    const absl::Status removed =
        client_->DeleteStream(name, kAbandonedRemovalWait);
    if (removed.ok()) {
      counters_.orphan_streams_removed.fetch_add(1);
      spdlog::info(
          "event=cluster_orphan_stream_removed model={} stream={} "
          "placement_generation={} model_deleted={}",
          stream->model, name, placement.log, placement.servers.empty());
    } else {
      spdlog::info(
          "event=cluster_orphan_stream_kept model={} stream={} error=\"{}\"",
          stream->model, name, std::string(removed.message()));
    }
  }
}

ClusterNode::Report ClusterNode::report() const {
  Report report{
      .live_servers = live_servers_.load(),
      .not_hosted = not_hosted_.load(),
      .heartbeat_failures = counters_.heartbeat_failures.load(),
      .reconcile_failures = counters_.reconcile_failures.load(),
      .host_failures = counters_.host_failures.load(),
      .snapshots = counters_.snapshots.load(),
      .snapshot_increments = counters_.snapshot_increments.load(),
      .snapshot_failures = counters_.snapshot_failures.load(),
      .models_moved = counters_.models_moved.load(),
      .logs_given_up = counters_.logs_given_up.load(),
      .orphan_streams_removed = counters_.orphan_streams_removed.load(),
  };
  const FitExchange::Counters fits = fits_->counters();
  report.fit_results_published = fits.published;
  report.fit_results_received = fits.received;
  report.fit_results_refused = fits.refused;
  std::vector<std::shared_ptr<Replica>> replicas;
  {
    MutexLock lock(&hosted_mutex_);
    for (const auto& [name, replica] : hosted_) replicas.push_back(replica);
  }
  for (const std::shared_ptr<Replica>& replica : replicas) {
    report.hosted.push_back(replica->Progress());
  }
  return report;
}

}  // namespace streamreg
