#ifndef STREAMREG_CORE_INDEX_NODE_DISTANCE_H_
#define STREAMREG_CORE_INDEX_NODE_DISTANCE_H_

#include <bit>
#include <cstdint>
#include <limits>

namespace streamreg {

// The two distances a cover tree node keeps (to its parent, and its
// subtree's bound), in single precision: 8 bytes a node instead of 16, at
// 10^6 samples 8 MB an index. A bound is rounded up wherever it is made
// (Above, and NextUp of a parent distance in a sum), so it stays a bound. A
// parent distance is kept to the nearest float, within a relative 2^-24 of
// the double it stands for; the lower bounds a search derives from it (|d(q,
// parent) - d(parent, child)|) allow for that with kSlack times the magnitudes
// they compare plus kTinySlack (CoverTree::BeyondNodeBound), so no subtree
// that holds an answer is pruned: answers stay exact. A distance beyond the
// float range is kept as +infinity, which disables every pruning it takes part
// in.
struct NodeDistance {
  // Tolerance of a pruning test on stored parent distances, twice their
  // rounding: relative, and absolute for those below the normal floats
  // (the smallest float).
  static constexpr double kSlack = 0x1p-23;
  static constexpr double kTinySlack = 0x1p-149;

  // A parent distance as kept: the nearest float (+infinity beyond them; a
  // NaN stays one, for a decoder to refuse).
  static float Nearest(double distance) {
    if (distance > std::numeric_limits<float>::max()) {
      return std::numeric_limits<float>::infinity();
    }
    return static_cast<float>(distance);
  }
  // A bound as kept: the smallest float at or above `distance`.
  static float Above(double distance) {
    const float nearest = Nearest(distance);
    return static_cast<double>(nearest) >= distance ? nearest : NextUp(nearest);
  }
  // The float after a non-negative finite `value`: at or above any double
  // that Nearest rounds to `value`.
  static float NextUp(float value) {
    if (value == std::numeric_limits<float>::infinity()) return value;
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(value) + 1);
  }
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_NODE_DISTANCE_H_
