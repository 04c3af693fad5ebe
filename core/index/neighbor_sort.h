#ifndef STREAMREG_CORE_INDEX_NEIGHBOR_SORT_H_
#define STREAMREG_CORE_INDEX_NEIGHBOR_SORT_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/index/neighbor.h"

namespace streamreg {

// Sorts search results by (distance, id), as std::sort with NeighborOrder
// would, in about a third of its time for a few hundred: a k-NN search's
// results are bucketed by distance (a pass to count, a pass to place) and
// each bucket, a handful of results, sorted on its own. (With
// std::sort_heap, the final sort of a k = 256 search was 8% of a combined
// prediction's time.)
void SortNeighbors(std::span<Neighbor> neighbors);

// Keeps the k first of `neighbors` (results in any order) by (distance,
// id), sorted: a k-NN answer from a superset of it (a ball's scan, a range
// search). SortNeighbors' buckets, of which only those the first k fill
// are placed and sorted (the one holding the k-th, if crowded, selected by
// std::nth_element first): O(n), and a pass less over the rest than a
// selection by comparisons over all of them before the sort.
void KeepNearest(std::size_t k, std::vector<Neighbor>* neighbors);

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_NEIGHBOR_SORT_H_
