#include "core/model/recent_slots.h"

#include <algorithm>

namespace streamreg {

std::size_t RecentSlots::LagAfter(std::uint64_t seen) const {
  return static_cast<std::size_t>(
      std::min<std::uint64_t>(max_lag_, seen / seen_per_lagged_));
}

void RecentSlots::Add(std::uint64_t slot, std::uint64_t seen) {
  order_.push_back(slot);
  if (slot != kNotStored) {
    ++count_[slot];
    ExtendRun(slot);
  }
  // The lag grows by at most one per sample: the deque is full at every
  // lag but one restored from an older, longer one.
  const std::size_t lag = LagAfter(seen);
  while (order_.size() > lag) {
    const std::uint64_t oldest = order_.front();
    order_.pop_front();
    if (oldest != kNotStored) {
      auto it = count_.find(oldest);
      if (--it->second == 0) {
        count_.erase(it);
        ShrinkRun(oldest);
      }
    }
  }
}

void RecentSlots::ExtendRun(std::uint64_t slot) {
  if (run_first_ <= run_last_ && slot == run_last_ + 1) {
    run_last_ = slot;
  } else {
    run_first_ = run_last_ = slot;
  }
}

// Slots leave in the order they came, so the run's first leaves first; any
// other slot of the run leaving (a reservoir's reuse) ends the run.
void RecentSlots::ShrinkRun(std::uint64_t slot) {
  if (slot < run_first_ || slot > run_last_) return;
  if (slot == run_first_) {
    ++run_first_;
  } else {
    run_first_ = 1;
    run_last_ = 0;
  }
}

void RecentSlots::Save(ByteWriter& out) const {
  out.U64(order_.size());
  for (std::uint64_t slot : order_) out.U64(slot);
}

bool RecentSlots::Load(ByteReader& in) {
  const std::uint64_t size = in.U64();
  if (!in.ok() || size > max_lag_ ||
      size > in.remaining() / sizeof(std::uint64_t)) {
    return false;
  }
  order_.clear();
  count_.clear();
  run_first_ = 1;
  run_last_ = 0;
  for (std::uint64_t i = 0; i < size; ++i) {
    const std::uint64_t slot = in.U64();
    order_.push_back(slot);
    if (slot != kNotStored) {
      ++count_[slot];
      ExtendRun(slot);
    }
  }
  return in.ok();
}

}  // namespace streamreg
