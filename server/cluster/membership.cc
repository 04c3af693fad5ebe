#include "server/cluster/membership.h"

#include "spdlog/spdlog.h"

namespace streamreg {

absl::Status Membership::Heartbeat() {
  absl::Status status = placements_.Heartbeat(advertise_);
  if (!status.ok()) {
    heartbeat_failures_.fetch_add(1);
    last_heartbeat_failure_ns_.store(absl::ToUnixNanos(absl::Now()));
    spdlog::warn("event=cluster_heartbeat_failed error=\"{}\"",
                 std::string(status.message()));
  }
  return status;
}

bool Membership::HeartbeatsSteady() const {
  const absl::Time last_failure =
      absl::FromUnixNanos(last_heartbeat_failure_ns_.load());
  return absl::Now() - last_failure >= server_ttl_;
}

absl::StatusOr<std::vector<std::string>> Membership::SteadyLiveServers() {
  absl::StatusOr<std::vector<std::string>> live = placements_.LiveServers();
  MutexLock lock(&mutex_);
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
    if (now - it->second > server_ttl_ / 2) {
      last_seen_.erase(it++);
    } else {
      steady.push_back((it++)->first);
    }
  }
  live_servers_.store(steady.size());
  return steady;  // in name order (a std::map's)
}

}  // namespace streamreg
