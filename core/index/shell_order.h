#ifndef STREAMREG_CORE_INDEX_SHELL_ORDER_H_
#define STREAMREG_CORE_INDEX_SHELL_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/index/neighbor.h"

namespace streamreg {

// The canonical order of a range search's result that feeds estimates at a
// grid of radii r_0 < ... < r_{G-1} (the bandwidth grid): by shell, then by
// id, where a neighbour's shell is the first g with distance < r_g (G for
// those beyond every radius). Then
//  - every open ball B(x, r_g) holds exactly a prefix of the list (the
//    neighbours with positive kernel weight at bandwidth r_g), so one list
//    serves the whole grid, and
//  - the order depends only on the stored points and the query, not on the
//    tree's shape or its traversal, so sums over it are bit-identical
//    however the index was built (a snapshot's restored model predicts
//    exactly as the model that wrote it).
// Sorting by (distance, id) has both properties too, at O(n log n); this
// order costs a few linear passes (an LSD radix sort on (shell, id)).
class ShellOrder {
 public:
  // Orders `neighbors` in place for `radii` (ascending, at most 255; with
  // none, by id alone).
  void Apply(std::span<const double> radii, std::vector<Neighbor>* neighbors);

  // After Apply: how many neighbours lie strictly within radii[g].
  std::size_t CountWithin(std::size_t g) const { return within_[g]; }

 private:
  std::vector<Neighbor> buffer_;
  std::vector<std::size_t> within_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_SHELL_ORDER_H_
