#include "server/cluster/model_creation.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/exponential_backoff.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/rendezvous.h"
#include "server/cluster/retried_until.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

// How long a create waits for its new log's first leader before it gives
// that log up and makes another (ModelCreation::Create): kLogLeaderWait for
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

}  // namespace

absl::Status ModelCreation::Create(const ModelIdentity& identity) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + options_.write_timeout;
  int given_up = 0;
  for (;;) {
    absl::StatusOr<PlacementStore::Placement> placement =
        RetriedUntil(deadline, [&] { return placements_.Get(identity.name); });
    if (!placement.ok()) return placement.status();
    const absl::Status created =
        CreateAt(identity, *std::move(placement), start, deadline, &given_up);
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

absl::Status ModelCreation::CreateAt(const ModelIdentity& identity,
                                     PlacementStore::Placement placement,
                                     absl::Time started, absl::Time deadline,
                                     int* given_up) {
  const std::string& name = identity.name;
  if (placement.servers.empty()) {
    absl::StatusOr<PlacementStore::Placement> placed =
        PlaceNew(name, placement, deadline);
    if (!placed.ok()) return placed.status();
    placement = *std::move(placed);
  }
  const std::string entry = EncodeCreateEntry(identity);
  LogStream log = LogStream::Attach(client_, name, options_.log, placement.log);
  if (!placement.created) {
    // The log's first leader is waited for up to `wait`; a log that has
    // none by then is given up for one of the next generation (its
    // preferred leader, drawn anew, is likely alive).
    const absl::Duration wait =
        BackoffCeiling(std::max(1, *given_up + 2 - kQuickLogTries),
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
                         given_up);
      }
      // The next create of the name (a client's retry) goes on from here.
      return absl::UnavailableError(made.message());
    }
    if (!made.ok()) return made;
    absl::StatusOr<LogStream::Appended> appended = RetriedUntil(deadline, [&] {
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
        deadline, [&] { return placements_.CompareAndSet(name, done); });
    if (!marked.ok()) return marked.status();
  }
  if (first->payload != entry) {
    return absl::AlreadyExistsError(
        absl::StrCat("model '", name, "' already exists"));
  }
  spdlog::info("event=cluster_created model={} stream={} seconds={:.3f}", name,
               log.stream(), absl::ToDoubleSeconds(absl::Now() - started));
  return absl::OkStatus();
}

absl::StatusOr<PlacementStore::Placement> ModelCreation::PlaceNew(
    const std::string& name, const PlacementStore::Placement& previous,
    absl::Time deadline) {
  absl::StatusOr<std::vector<std::string>> live =
      RetriedUntil(deadline, [&] { return membership_.SteadyLiveServers(); });
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
      deadline, [&] { return placements_.CompareAndSet(name, next); });
  if (!placed.ok()) return placed.status();
  if (previous.revision != 0) janitor_.Abandon(name, previous.log);
  next.revision = *placed;
  return next;
}

absl::Status ModelCreation::GiveUpLog(
    const std::string& name, const PlacementStore::Placement& placement,
    absl::Duration waited, absl::Time deadline, int* given_up) {
  PlacementStore::Placement next = placement;
  ++next.log;
  absl::StatusOr<std::uint64_t> moved = RetriedUntil(
      deadline, [&] { return placements_.CompareAndSet(name, next); });
  if (!moved.ok()) return moved.status();
  ++*given_up;
  logs_given_up_.fetch_add(1);
  spdlog::warn(
      "event=cluster_log_given_up model={} stream={} next_stream={} "
      "waited_seconds={:.3f} reason=\"no leader elected in time\"",
      name, LogStream::StreamName(name, placement.log),
      LogStream::StreamName(name, next.log), absl::ToDoubleSeconds(waited));
  janitor_.Abandon(name, placement.log);
  // The placement changed: the next try reads it.
  return absl::AbortedError("the model's log was given up");
}

absl::StatusOr<std::uint64_t> ModelCreation::Unplace(absl::string_view name) {
  const absl::Time deadline = absl::Now() + options_.write_timeout;
  std::uint64_t log = 0;
  for (;;) {
    absl::StatusOr<PlacementStore::Placement> placement =
        RetriedUntil(deadline, [&] { return placements_.Get(name); });
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
      return placements_.CompareAndSet(name, emptied_placement);
    });
    if (emptied.ok()) break;
    // ABORTED: moved meanwhile; delete what it is now.
    if (!absl::IsAborted(emptied.status()) || absl::Now() > deadline) {
      return emptied.status();
    }
  }
  return log;
}

}  // namespace streamreg
