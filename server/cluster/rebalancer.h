#ifndef STREAMREG_SERVER_CLUSTER_REBALANCER_H_
#define STREAMREG_SERVER_CLUSTER_REBALANCER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/cluster/placement_store.h"

namespace streamreg {

// Moves models to the servers rendezvous hashing picks among the live
// ones (a server gone, one joined): what the first live server does each
// reconcile round. A move is a compare-and-set of the model's placement,
// so one that another change came before is left to the next round.
class Rebalancer {
 public:
  // `placements` must outlive it.
  Rebalancer(PlacementStore& placements, std::size_t replicas)
      : placements_(placements), replicas_(replicas) {}

  // Proposes, for each model of `placements` (as read) that is not
  // deleted, the `replicas` servers of `live` rendezvous hashing gives it,
  // where they differ from its servers now.
  void Rebalance(const absl::flat_hash_map<
                     std::string, PlacementStore::Placement>& placements,
                 const std::vector<std::string>& live);

  std::uint64_t models_moved() const { return models_moved_.load(); }

 private:
  PlacementStore& placements_;
  const std::size_t replicas_;
  std::atomic<std::uint64_t> models_moved_{0};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_REBALANCER_H_
