#include "server/cluster/hosted_replicas.h"

#include <utility>

namespace streamreg {

void HostedReplicas::Add(const std::string& name,
                         std::shared_ptr<HostedReplica> replica) {
  MutexLock lock(&mutex_);
  replicas_[name] = std::move(replica);
}

std::shared_ptr<HostedReplica> HostedReplicas::Take(const std::string& name) {
  MutexLock lock(&mutex_);
  const auto it = replicas_.find(name);
  if (it == replicas_.end()) return nullptr;
  std::shared_ptr<HostedReplica> taken = std::move(it->second);
  replicas_.erase(it);
  return taken;
}

bool HostedReplicas::Contains(const std::string& name) const {
  MutexLock lock(&mutex_);
  return replicas_.contains(name);
}

HostedReplicas::ByName HostedReplicas::All() const {
  MutexLock lock(&mutex_);
  return replicas_;
}

std::vector<std::shared_ptr<HostedReplica>> HostedReplicas::SnapshottedHere()
    const {
  MutexLock lock(&mutex_);
  std::vector<std::shared_ptr<HostedReplica>> mine;
  for (const auto& [name, replica] : replicas_) {
    if (replica->snapshots_here.load()) mine.push_back(replica);
  }
  return mine;
}

}  // namespace streamreg
