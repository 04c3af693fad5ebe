#include "server/hosting/ahead_errors.h"

#include <utility>

namespace streamreg {

void AheadErrors::Sent(std::uint64_t sample_id, Prediction* prediction) {
  errors_.Calibrate(prediction);
  // Only what scoring reads.
  Prediction kept;
  kept.value = prediction->value;
  kept.lower = prediction->lower;
  kept.upper = prediction->upper;
  MutexLock lock(&mutex_);
  const bool inserted =
      waiting_.insert_or_assign(sample_id, std::move(kept)).second;
  if (!inserted) return;  // (its place in the order is the first's)
  sent_order_.push_back(sample_id);
  while (sent_order_.size() > kWaiting) {
    waiting_.erase(sent_order_.front());
    sent_order_.pop_front();
  }
  any_waiting_.store(true, std::memory_order_release);
}

void AheadErrors::Arrived(const Sample& sample) {
  if (sample.sample_id == 0 || !any_waiting_.load(std::memory_order_acquire)) {
    return;
  }
  Prediction sent;
  {
    MutexLock lock(&mutex_);
    auto it = waiting_.find(sample.sample_id);
    if (it == waiting_.end()) return;
    sent = std::move(it->second);
    waiting_.erase(it);
    // (Its id stays in sent_order_ until it comes to the front: erasing
    // an id no longer waiting is a no-op.)
  }
  errors_.Score(sent, sample.y);
}

}  // namespace streamreg
