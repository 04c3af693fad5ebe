#ifndef STREAMREG_SERVER_CLUSTER_SUBSCRIPTION_REAPER_H_
#define STREAMREG_SERVER_CLUSTER_SUBSCRIPTION_REAPER_H_

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"

namespace streamreg {

// Closes the NATS subscriptions StreamCursor is done with, without freeing
// one that the connection's reader thread may still be delivering to.
// libnats 3.4.1's natsConn_processMsg looks a subscription up under the
// connection's lock, releases that lock and only then locks the
// subscription, holding no reference to it: a subscription destroyed in
// between (natsSubscription_Destroy, while its consumer still pushes
// messages) is used after it is freed, and the process crashes. So a
// retired subscription is first unsubscribed (the connection forgets it
// and no reader finds it again) and released only `kGrace` later, on a
// thread of the reaper's own (unsubscribing may wait for the cluster to
// delete the consumer). One per process, never destroyed: subscriptions
// outlive the cursors and the clients that made them.
class SubscriptionReaper {
 public:
  static SubscriptionReaper& Get();

  // Takes `subscription` (a natsSubscription*) over: unsubscribed at
  // once, freed after the grace period.
  void Retire(void* subscription) ABSL_LOCKS_EXCLUDED(mutex_);

  // How long an unsubscribed subscription stays allocated: far beyond the
  // few instructions a reader thread spends between its lookup and its
  // lock, even on a loaded machine.
  static constexpr absl::Duration kGrace = absl::Seconds(1);

 private:
  struct Unsubscribed {
    void* subscription;
    absl::Time free_at;
  };

  SubscriptionReaper() = default;
  void Run();

  Mutex mutex_;
  CondVar changed_;
  std::deque<void*> retired_ ABSL_GUARDED_BY(mutex_);
  std::deque<Unsubscribed> unsubscribed_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_SUBSCRIPTION_REAPER_H_
