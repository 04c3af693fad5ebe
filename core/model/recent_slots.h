#ifndef STREAMREG_CORE_MODEL_RECENT_SLOTS_H_
#define STREAMREG_CORE_MODEL_RECENT_SLOTS_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "core/base/byte_coding.h"

namespace streamreg {

// Which store slots hold one of the last `lag` samples seen: the samples the
// honest (leave-recent-out) error leaves out of a prediction's neighbours
// (docs/estimators.md, "Honest error"). On a stream sampled fast, the last
// few samples lie next to the next one in input space (a robot's previous
// tick) and make every local method look as good as a lookup table;
// leaving them out asks how well the model predicts where it has not just
// been.
class RecentSlots {
 public:
  // A slot number that stands for "not stored" (a reservoir passing the
  // sample over).
  static constexpr std::uint64_t kNotStored = ~std::uint64_t{0};

  explicit RecentSlots(std::size_t lag) : lag_(lag) {}

  // The next sample seen went into `slot` (or kNotStored); the sample `lag`
  // before it stops being recent.
  void Add(std::uint64_t slot);
  // Whether `slot` holds one of the last `lag` samples.
  bool Contains(std::uint64_t slot) const { return count_.contains(slot); }
  bool empty() const { return count_.empty(); }
  std::size_t lag() const { return lag_; }

  // The exact state, for snapshots; Load fails on a malformed encoding.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  std::size_t lag_;
  std::deque<std::uint64_t> order_;  // the last `lag` slots, oldest first
  // How many entries of order_ name each slot (a reservoir may store two
  // recent samples in one slot, one after the other).
  absl::flat_hash_map<std::uint64_t, std::uint32_t> count_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_RECENT_SLOTS_H_
