#include "core/model/recent_slots.h"

namespace streamreg {

void RecentSlots::Add(std::uint64_t slot) {
  if (lag_ == 0) return;
  if (order_.size() == lag_) {
    const std::uint64_t oldest = order_.front();
    order_.pop_front();
    if (oldest != kNotStored) {
      auto it = count_.find(oldest);
      if (--it->second == 0) count_.erase(it);
    }
  }
  order_.push_back(slot);
  if (slot != kNotStored) ++count_[slot];
}

void RecentSlots::Save(ByteWriter& out) const {
  out.U64(order_.size());
  for (std::uint64_t slot : order_) out.U64(slot);
}

bool RecentSlots::Load(ByteReader& in) {
  const std::uint64_t size = in.U64();
  if (!in.ok() || size > lag_ ||
      size > in.remaining() / sizeof(std::uint64_t)) {
    return false;
  }
  order_.clear();
  count_.clear();
  for (std::uint64_t i = 0; i < size; ++i) {
    const std::uint64_t slot = in.U64();
    order_.push_back(slot);
    if (slot != kNotStored) ++count_[slot];
  }
  return in.ok();
}

}  // namespace streamreg
