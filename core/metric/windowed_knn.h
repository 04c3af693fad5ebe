#ifndef STREAMREG_CORE_METRIC_WINDOWED_KNN_H_
#define STREAMREG_CORE_METRIC_WINDOWED_KNN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace streamreg {

// Every point's neighbour list, packed: point i's are ids[begin[i]] to
// ids[begin[i + 1]] (indexes into the points).
struct NeighborLists {
  std::vector<std::size_t> begin;  // n + 1 offsets into ids
  std::vector<std::uint32_t> ids;

  std::span<const std::uint32_t> of(std::size_t i) const {
    return {ids.data() + begin[i], begin[i + 1] - begin[i]};
  }
};

// For each of n points (row-major, `dim` coordinates each, in stream
// order), its k nearest other points that are more than `window`
// positions away from it, sorted by (distance, index): the search an MLKR
// fit repeats under each new map (a stream's near copies left out, as the
// honest error leaves them out). Fewer than k where fewer are eligible.
//
// Below 2,500 points they are sorted by their projection on their
// principal axis, and each point's search walks outward from its own place
// in that order, the nearer projection first. It stops once the
// projections' gap exceeds the k-th distance found, and passes over a
// candidate whose projections on the leading axes (orthonormal) lie
// farther than it: both gaps are lower bounds of the distance. From 2,500
// points on (where the walk, quadratic when the k-th neighbour is far from
// most points, is no longer the faster) each point searches a cover tree
// over them. Either way the lists are exact, and the same to the bit as
// every search of this project gives (EuclideanDistance, ties to the
// smaller index). `threads` share the points.
NeighborLists WindowedKnn(std::span<const double> points, std::size_t dim,
                          std::size_t k, std::size_t window,
                          std::size_t threads);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_WINDOWED_KNN_H_
