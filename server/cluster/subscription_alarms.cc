#include "server/cluster/subscription_alarms.h"

namespace streamreg {

SubscriptionAlarms& SubscriptionAlarms::Get() {
  // Never destroyed: the library may call back while the process exits.
  static SubscriptionAlarms* const alarms = new SubscriptionAlarms();
  return *alarms;
}

void SubscriptionAlarms::Raise(const void* subscription) {
  MutexLock lock(&mutex_);
  raised_.insert(subscription);
}

bool SubscriptionAlarms::Take(const void* subscription) {
  MutexLock lock(&mutex_);
  return raised_.erase(subscription) > 0;
}

void SubscriptionAlarms::Forget(const void* subscription) {
  MutexLock lock(&mutex_);
  raised_.erase(subscription);
}

}  // namespace streamreg
