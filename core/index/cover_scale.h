#ifndef STREAMREG_CORE_INDEX_COVER_SCALE_H_
#define STREAMREG_CORE_INDEX_COVER_SCALE_H_

#include <algorithm>
#include <array>
#include <cmath>

namespace streamreg {

// The radii of a cover tree's levels: level j has covering radius base^j.
// Base 2 as in BKL: measured on the trajectory benchmark (n = 10^5, d = 21,
// k = 10), k-NN computed 214, 178, 112, 113 and 132 distances per query with
// bases 1.2, 1.3, 1.6, 2 and 3, and base 2 opened the fewest nodes of those
// near the minimum. Radii come from one table, so every comparison of the
// tree — insertion, removal and the invariant check — sees the same value.
class CoverScale {
 public:
  static constexpr double kBase = 2.0;
  // The floor: 2^-1100 is 0 in double, so separation cannot be expressed
  // there (distinct points at computed distance 0 share it).
  static constexpr int kMinLevel = -1100;
  // Above any distance between points with coordinates within +-2^500.
  static constexpr int kMaxLevel = 600;

  // base^level; 0 at the floor.
  static double Radius(int level) {
    return Table()[std::clamp(level, kMinLevel, kMaxLevel) - kMinLevel];
  }

  // The smallest level j with distance <= base^j (kMinLevel for 0).
  static int LevelCovering(double distance) {
    if (!(distance > 0.0)) return kMinLevel;
    int level = std::clamp(
        static_cast<int>(std::ceil(std::log(distance) / std::log(kBase))),
        kMinLevel, kMaxLevel);
    while (level < kMaxLevel && Radius(level) < distance) ++level;
    while (level > kMinLevel && Radius(level - 1) >= distance) --level;
    return level;
  }

  // Bounds the distance from a node to anything in the subtree of a child
  // at `level`: the child lies within base^(level+1), its own subtree within
  // base^level + base^(level-1) + ... = base^(level+1) / (base - 1).
  static double SubtreeReach(int level) {
    return Radius(level + 1) * (kBase / (kBase - 1.0));
  }

 private:
  using Radii = std::array<double, kMaxLevel - kMinLevel + 1>;
  static const Radii& Table() {
    static const Radii table = [] {
      Radii radii{};
      for (int j = kMinLevel; j <= kMaxLevel; ++j) {
        radii[j - kMinLevel] = std::pow(kBase, j);
      }
      return radii;
    }();
    return table;
  }
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_COVER_SCALE_H_
