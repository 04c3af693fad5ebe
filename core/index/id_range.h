#ifndef STREAMREG_CORE_INDEX_ID_RANGE_H_
#define STREAMREG_CORE_INDEX_ID_RANGE_H_

#include <algorithm>
#include <cstdint>
#include <limits>

namespace streamreg {

// An interval of ids [lo, hi] in 32 bits: what a cover tree keeps per node
// for the ids of its subtree (an interval that holds them all, perhaps more:
// ids removed since may still widen it), and what search rules name as ids
// they exclude wholesale (SplitKnnRules: a model's recent samples). Ids of
// 2^32 - 1 and above saturate at kSaturated, and an interval reaching it is
// within no other: only small ids are ever judged by their interval.
struct IdRange {
  static constexpr std::uint32_t kSaturated =
      std::numeric_limits<std::uint32_t>::max();

  std::uint32_t lo = 1;  // lo > hi: no id
  std::uint32_t hi = 0;

  static IdRange Of(std::uint64_t id) {
    const auto small =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(id, kSaturated));
    return {small, small};
  }
  // [first, last], or no id if last is past the 32 bits.
  static IdRange Between(std::uint64_t first, std::uint64_t last) {
    if (first > last || last >= kSaturated) return {};
    return {static_cast<std::uint32_t>(first),
            static_cast<std::uint32_t>(last)};
  }

  bool empty() const { return lo > hi; }

  // Widens this interval to hold `other` too; whether it changed.
  bool Widen(IdRange other) {
    if (other.empty()) return false;
    if (empty()) {
      *this = other;
      return true;
    }
    if (other.lo >= lo && other.hi <= hi) return false;
    lo = std::min(lo, other.lo);
    hi = std::max(hi, other.hi);
    return true;
  }

  // Whether every id this interval may hold lies in `outer`.
  bool Within(IdRange outer) const {
    return !empty() && hi != kSaturated && outer.lo <= lo && hi <= outer.hi;
  }
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_ID_RANGE_H_
