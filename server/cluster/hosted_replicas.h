#ifndef STREAMREG_SERVER_CLUSTER_HOSTED_REPLICAS_H_
#define STREAMREG_SERVER_CLUSTER_HOSTED_REPLICAS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "server/cluster/hosted_replica.h"

namespace streamreg {

// The replicas this server hosts, by model name: changed by its reconciling
// (which the cluster node serializes), read by any thread — the reports,
// the snapshotting thread, a server going away — without waiting for a
// reconcile round, which may wait seconds on the cluster.
class HostedReplicas {
 public:
  using ByName = std::map<std::string, std::shared_ptr<HostedReplica>>;

  void Add(const std::string& name, std::shared_ptr<HostedReplica> replica)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Takes `name`'s out (null if there was none).
  std::shared_ptr<HostedReplica> Take(const std::string& name)
      ABSL_LOCKS_EXCLUDED(mutex_);
  bool Contains(const std::string& name) const ABSL_LOCKS_EXCLUDED(mutex_);
  // Each one as they are now, in name order.
  ByName All() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Those this server snapshots (HostedReplica::snapshots_here).
  std::vector<std::shared_ptr<HostedReplica>> SnapshottedHere() const
      ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  mutable Mutex mutex_;
  ByName replicas_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_HOSTED_REPLICAS_H_
