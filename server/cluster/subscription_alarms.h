#ifndef STREAMREG_SERVER_CLUSTER_SUBSCRIPTION_ALARMS_H_
#define STREAMREG_SERVER_CLUSTER_SUBSCRIPTION_ALARMS_H_

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "core/base/mutex.h"

namespace streamreg {

// The subscriptions the NATS client library reported trouble for on its
// error callback (missed heartbeats: the consumer's server went away or
// stopped; a sequence mismatch; a slow consumer): raised there, taken by
// the StreamCursor reading that subscription, which then reports the
// cluster unavailable so that its reader follows the stream afresh.
// One per process: the library's callback outlives the client that set it,
// and knows a subscription only by its address (a cursor forgets its
// address when it opens and closes; a late report for an address reused
// since costs one needless re-follow).
class SubscriptionAlarms {
 public:
  static SubscriptionAlarms& Get();

  void Raise(const void* subscription) ABSL_LOCKS_EXCLUDED(mutex_);
  // Whether an alarm was raised for `subscription` since the last Take
  // (clearing it).
  bool Take(const void* subscription) ABSL_LOCKS_EXCLUDED(mutex_);
  void Forget(const void* subscription) ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  SubscriptionAlarms() = default;

  Mutex mutex_;
  absl::flat_hash_set<const void*> raised_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_SUBSCRIPTION_ALARMS_H_
