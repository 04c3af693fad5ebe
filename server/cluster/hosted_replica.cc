#include "server/cluster/hosted_replica.h"

namespace streamreg {

HostedReplica::Report HostedReplica::report() const {
  const FollowerProgress follower = progress();
  // In this order: a snapshot through past the whole one being put was put
  // while it was.
  return {.model = name(),
          .applied = follower.applied,
          .replayed_from = replayed_from_,
          .snapshot_through = snapshot_through.load(),
          .whole_snapshot_being_put = whole_being_put.load(),
          .catching_up = follower.catching_up,
          .fell_behind = follower.fell_behind};
}

}  // namespace streamreg
