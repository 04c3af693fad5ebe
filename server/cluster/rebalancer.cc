#include "server/cluster/rebalancer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "server/cluster/rendezvous.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

bool SameServers(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

void Rebalancer::Rebalance(
    const absl::flat_hash_map<std::string, PlacementStore::Placement>&
        placements,
    const std::vector<std::string>& live) {
  for (const auto& [name, placement] : placements) {
    if (placement.servers.empty()) continue;  // deleted
    std::vector<std::string> owners = RendezvousOwners(name, live, replicas_);
    if (SameServers(owners, placement.servers)) continue;
    PlacementStore::Placement next = placement;
    next.servers = std::move(owners);
    absl::StatusOr<std::uint64_t> moved = placements_.CompareAndSet(name, next);
    // ABORTED: another change came first; the next round looks again.
    if (moved.ok()) {
      models_moved_.fetch_add(1);
      spdlog::info("event=cluster_replaced model={} from={} to={}", name,
                   absl::StrJoin(placement.servers, ","),
                   absl::StrJoin(next.servers, ","));
    } else if (!absl::IsAborted(moved.status())) {
      spdlog::warn("event=cluster_replace_failed model={} error=\"{}\"", name,
                   std::string(moved.status().message()));
    }
  }
}

}  // namespace streamreg
