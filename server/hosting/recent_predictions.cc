#include "server/hosting/recent_predictions.h"

#include <utility>

namespace streamreg {

void RecentPredictions::Record(std::uint64_t first,
                               std::span<const Sample> samples,
                               std::span<Prediction> predictions) {
  // Only the last kCapacity scored ones can stay: the batch from the first
  // of them on.
  std::size_t from = samples.size();
  for (std::size_t kept = 0; from > 0 && kept < kCapacity;) {
    if (!predictions[--from].value.empty()) ++kept;
  }
  MutexLock lock(&mutex_);
  for (std::size_t i = from; i < samples.size(); ++i) {
    Prediction& prediction = predictions[i];
    if (prediction.value.empty()) continue;  // not scored: none was made
    Entry* entry;
    if (ring_.size() < kCapacity) {
      entry = &ring_.emplace_back();
    } else {
      entry = &ring_[oldest_];
      oldest_ = (oldest_ + 1) % kCapacity;
    }
    entry->sample = first + i;
    entry->truth.assign(samples[i].y.begin(), samples[i].y.end());
    entry->value = std::move(prediction.value);
    entry->lower = std::move(prediction.lower);
    entry->upper = std::move(prediction.upper);
  }
}

std::vector<RecentPredictions::Entry> RecentPredictions::Entries() const {
  MutexLock lock(&mutex_);
  std::vector<Entry> out;
  out.reserve(ring_.size());
  for (std::size_t i = 0; i < ring_.size(); ++i) {
    out.push_back(ring_[(oldest_ + i) % ring_.size()]);
  }
  return out;
}

}  // namespace streamreg
