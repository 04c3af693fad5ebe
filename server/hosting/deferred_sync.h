#ifndef STREAMREG_SERVER_HOSTING_DEFERRED_SYNC_H_
#define STREAMREG_SERVER_HOSTING_DEFERRED_SYNC_H_

#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"

namespace streamreg {

// The durability reports of Learn streams' samples logged without an fsync
// of their own (--learn-linger under --sync=always): each is held until
// one fsync, run once a while after the first of them, covers them all,
// and then given that fsync's status. The samples are learned at once
// meanwhile; only their reports wait, so that a 1 kHz arm's samples share
// their fsyncs a few at a time without being learned any later.
// Thread-safe; Sync may run beside appends (the journal fsyncs outside its
// lock).
class DeferredSync {
 public:
  using Report = std::function<void(const absl::Status& synced)>;

  // Holds `report` until the next Sync(); true if none was held before it
  // (the caller then schedules a Sync).
  bool Hold(Report report) ABSL_LOCKS_EXCLUDED(mutex_);
  // Runs `sync` once and gives each report held before the call its
  // status; one held meanwhile waits for the next Sync.
  void Sync(const std::function<absl::Status()>& sync)
      ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  Mutex mutex_;
  std::vector<Report> held_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_DEFERRED_SYNC_H_
