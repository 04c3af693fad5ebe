#include "server/cluster/subscription_reaper.h"

#include <thread>
#include <utility>
#include <vector>

#include "core/base/background_thread.h"
#include "nats/nats.h"

namespace streamreg {

SubscriptionReaper& SubscriptionReaper::Get() {
  static SubscriptionReaper* const reaper = [] {
    auto* made = new SubscriptionReaper();
    std::thread([made] { made->Run(); }).detach();
    return made;
  }();
  return *reaper;
}

void SubscriptionReaper::Retire(void* subscription) {
  if (subscription == nullptr) return;
  MutexLock lock(&mutex_);
  retired_.push_back(subscription);
  changed_.SignalAll();
}

void SubscriptionReaper::Run() {
  BeginBackgroundThread("sub-reaper");
  for (;;) {
    std::vector<void*> to_unsubscribe, to_free;
    {
      MutexLock lock(&mutex_);
      while (retired_.empty() &&
             (unsubscribed_.empty() ||
              absl::Now() < unsubscribed_.front().free_at)) {
        if (unsubscribed_.empty()) {
          changed_.Wait(&mutex_);
        } else {
          changed_.WaitUntil(&mutex_, unsubscribed_.front().free_at);
        }
      }
      to_unsubscribe.assign(retired_.begin(), retired_.end());
      retired_.clear();
      const absl::Time now = absl::Now();
      while (!unsubscribed_.empty() && unsubscribed_.front().free_at <= now) {
        to_free.push_back(unsubscribed_.front().subscription);
        unsubscribed_.pop_front();
      }
    }
    for (void* subscription : to_free) {
      // Unsubscribed already: this only releases it.
      natsSubscription_Destroy(static_cast<natsSubscription*>(subscription));
    }
    for (void* subscription : to_unsubscribe) {
      // Removes it from its connection (the server stops delivering, and
      // the library deletes the consumer it made); an error (the
      // connection closed meanwhile) leaves nothing more to undo.
      (void)natsSubscription_Unsubscribe(
          static_cast<natsSubscription*>(subscription));
    }
    if (!to_unsubscribe.empty()) {
      MutexLock lock(&mutex_);
      const absl::Time free_at = absl::Now() + kGrace;
      for (void* subscription : to_unsubscribe) {
        unsubscribed_.push_back({subscription, free_at});
      }
    }
  }
}

}  // namespace streamreg
