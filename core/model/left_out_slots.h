#ifndef STREAMREG_CORE_MODEL_LEFT_OUT_SLOTS_H_
#define STREAMREG_CORE_MODEL_LEFT_OUT_SLOTS_H_

#include <algorithm>
#include <cstdint>

#include "core/index/id_range.h"
#include "core/model/recent_slots.h"

namespace streamreg {

// The store slots a prediction leaves out of its neighbours: a model's
// recent samples (a RecentSlots: what the honest error and the queries'
// calibration lag leave out), none, or every stride-th slot of an
// interval (a stored sample rescored without itself, without the samples
// around it in time, or without as many spread twice as wide:
// IntervalRecalibration). Cheap to copy; a RecentSlots it names must
// outlive it.
class LeftOutSlots {
 public:
  LeftOutSlots() = default;
  explicit LeftOutSlots(const RecentSlots* recent) : recent_(recent) {}
  // Slots first, first + stride, ... up to last (none if first > last).
  static LeftOutSlots Between(std::uint64_t first, std::uint64_t last,
                              std::uint64_t stride = 1) {
    LeftOutSlots slots;
    slots.first_ = first;
    slots.last_ = last;
    slots.stride_ = std::max<std::uint64_t>(stride, 1);
    return slots;
  }

  bool Contains(std::uint64_t slot) const {
    if (recent_ != nullptr) return recent_->Contains(slot);
    return slot >= first_ && slot <= last_ && (slot - first_) % stride_ == 0;
  }
  // Consecutive slots that are all left out, which a search may skip
  // wholesale (SplitKnnRules), or none.
  IdRange run() const {
    if (recent_ != nullptr) return recent_->run();
    return stride_ == 1 ? IdRange::Between(first_, last_) : IdRange{};
  }

 private:
  const RecentSlots* recent_ = nullptr;
  std::uint64_t first_ = 1;  // without recent_: [first_, last_]
  std::uint64_t last_ = 0;
  std::uint64_t stride_ = 1;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_LEFT_OUT_SLOTS_H_
