#include "server/hosting/deferred_sync.h"

#include <utility>

namespace streamreg {

bool DeferredSync::Hold(Report report) {
  MutexLock lock(&mutex_);
  held_.push_back(std::move(report));
  return held_.size() == 1;
}

void DeferredSync::Sync(const std::function<absl::Status()>& sync) {
  std::vector<Report> covered;
  {
    MutexLock lock(&mutex_);
    covered.swap(held_);
  }
  // Every report taken was held after its samples were appended: the
  // fsync below covers them.
  const absl::Status synced = sync();
  for (Report& report : covered) report(synced);
}

}  // namespace streamreg
