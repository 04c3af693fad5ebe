#include "server/hosting/recent_sample_ids.h"

namespace streamreg {

std::optional<std::uint64_t> RecentSampleIds::Find(std::uint64_t id) const {
  const auto it = sequence_of_.find(id);
  if (it == sequence_of_.end()) return std::nullopt;
  return it->second;
}

void RecentSampleIds::Remember(std::uint64_t id, std::uint64_t sequence) {
  if (capacity_ == 0) return;
  if (!sequence_of_.emplace(id, sequence).second) return;
  order_.emplace_back(id, sequence);
  if (order_.size() > capacity_) {
    sequence_of_.erase(order_.front().first);
    order_.pop_front();
  }
}

}  // namespace streamreg
