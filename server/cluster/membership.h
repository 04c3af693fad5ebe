#ifndef STREAMREG_SERVER_CLUSTER_MEMBERSHIP_H_
#define STREAMREG_SERVER_CLUSTER_MEMBERSHIP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "server/cluster/placement_store.h"

namespace streamreg {

// This server as a member of its cluster: its heartbeats (its liveness in
// the placements' bucket, PlacementStore::Heartbeat), and the live servers
// steadied: one that drops out of the live list (its liveness renewed late
// under load, or a listing that missed it) still counts for server_ttl / 2
// after it was last seen, so a moment's absence moves no model, and one
// that stops is taken for gone that much later. After the list could not
// be read (the cluster unreachable, when every server's heartbeats may
// have been refused and their liveness expired), each known server has
// server_ttl / 2 again to reappear. Thread-safe.
class Membership {
 public:
  // `placements` must outlive it.
  Membership(PlacementStore& placements, std::string advertise,
             absl::Duration server_ttl)
      : placements_(placements),
        advertise_(std::move(advertise)),
        server_ttl_(server_ttl) {}

  // One heartbeat of this server; a refused one is logged and counted.
  absl::Status Heartbeat();
  // Whether heartbeats have been taken for server_ttl: while they fail,
  // the others' likely fail too and the live list is missing them, so no
  // model may be moved on its word.
  bool HeartbeatsSteady() const;
  // The live servers, steadied, in name order.
  absl::StatusOr<std::vector<std::string>> SteadyLiveServers()
      ABSL_LOCKS_EXCLUDED(mutex_);

  const std::string& advertise() const { return advertise_; }
  // As the last SteadyLiveServers found them (0 before).
  std::size_t live_servers() const { return live_servers_.load(); }
  std::uint64_t heartbeat_failures() const {
    return heartbeat_failures_.load();
  }

 private:
  PlacementStore& placements_;
  const std::string advertise_;
  const absl::Duration server_ttl_;
  std::atomic<std::uint64_t> heartbeat_failures_{0};
  // When a heartbeat last failed (Unix nanoseconds; 0: never).
  std::atomic<std::int64_t> last_heartbeat_failure_ns_{0};
  std::atomic<std::size_t> live_servers_{0};

  Mutex mutex_;
  // When each server was last in the live list.
  std::map<std::string, absl::Time> last_seen_ ABSL_GUARDED_BY(mutex_);
  // The last try to read the live list failed.
  bool listing_failed_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_MEMBERSHIP_H_
