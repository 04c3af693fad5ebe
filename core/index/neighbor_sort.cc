#include "core/index/neighbor_sort.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace streamreg {
namespace {

// Fewer results are sorted directly; so is a bucket of more (skewed
// distances), which keeps the worst case O(n log n).
constexpr std::size_t kSortedDirectly = 32;
constexpr std::size_t kInsertionSorted = 16;

void InsertionSort(std::span<Neighbor> neighbors) {
  for (std::size_t i = 1; i < neighbors.size(); ++i) {
    const Neighbor next = neighbors[i];
    std::size_t j = i;
    for (; j > 0 && NeighborLess(next, neighbors[j - 1]); --j) {
      neighbors[j] = neighbors[j - 1];
    }
    neighbors[j] = next;
  }
}

// The first `count` of `neighbors` by (distance, id), in order at its front,
// by comparisons: selected (when not all are wanted), then sorted.
void SelectAndSort(std::span<Neighbor> neighbors, std::size_t count) {
  if (count < neighbors.size()) {
    std::nth_element(neighbors.begin(), neighbors.begin() + (count - 1),
                     neighbors.end(), NeighborOrder());
  }
  const std::span<Neighbor> first = neighbors.first(count);
  if (first.size() <= kInsertionSorted) {
    InsertionSort(first);
  } else {
    std::sort(first.begin(), first.end(), NeighborOrder());
  }
}

// Orders the first `count` results of `neighbors` by (distance, id) at its
// front (count <= size; the rest are left in any order): the results are
// bucketed by distance (a pass to count, a pass to place those of the
// buckets the first `count` need) and each bucket, a handful of results,
// sorted on its own.
void SortFirst(std::span<Neighbor> neighbors, std::size_t count) {
  const std::size_t n = neighbors.size();
  if (count == 0) return;
  if (n < kSortedDirectly) {
    SelectAndSort(neighbors, count);
    return;
  }
  const auto [nearest, farthest] =
      std::minmax_element(neighbors.begin(), neighbors.end(),
                          [](const Neighbor& a, const Neighbor& b) {
                            return a.distance < b.distance;
                          });
  const double low = nearest->distance;
  // n buckets of equal width from the nearest to the farthest; none when
  // every distance is the same, or their spread is not finite (or so small
  // that n over it is not).
  const double scale = static_cast<double>(n) / (farthest->distance - low);
  if (!(scale > 0.0 && scale < std::numeric_limits<double>::infinity())) {
    SelectAndSort(neighbors, count);
    return;
  }
  // Non-decreasing in the distance (each step rounds monotonically), so a
  // bucket holds no result that belongs after the next one's.
  const auto bucket_of = [low, scale, n](double distance) {
    const double bucket = (distance - low) * scale;
    return bucket < static_cast<double>(n) ? static_cast<std::size_t>(bucket)
                                           : n - 1;
  };
  thread_local std::vector<std::size_t> ends;
  thread_local std::vector<Neighbor> placed;
  ends.assign(n + 1, 0);
  for (const Neighbor& neighbor : neighbors) {
    ++ends[bucket_of(neighbor.distance) + 1];
  }
  for (std::size_t b = 1; b <= n; ++b) ends[b] += ends[b - 1];
  // ends[b] is bucket b's start; the buckets up to `last` hold the first
  // `count`, and only their results are placed (placing moves a bucket's
  // start to its end).
  std::size_t last = 0;
  while (ends[last + 1] < count) ++last;
  placed.resize(ends[last + 1]);
  for (const Neighbor& neighbor : neighbors) {
    const std::size_t b = bucket_of(neighbor.distance);
    if (b <= last) placed[ends[b]++] = neighbor;
  }
  std::size_t begin = 0;
  for (std::size_t b = 0; b <= last; ++b) {
    const std::span<Neighbor> bucket(placed.data() + begin, ends[b] - begin);
    // Of the last bucket only the first `count` are wanted: selected first
    // (skewed distances can crowd most results into it), so that keeping k
    // of n stays O(n).
    SelectAndSort(bucket, std::min(bucket.size(), count - begin));
    begin = ends[b];
  }
  std::copy_n(placed.begin(), count, neighbors.begin());
}

}  // namespace

void SortNeighbors(std::span<Neighbor> neighbors) {
  SortFirst(neighbors, neighbors.size());
}

void KeepNearest(std::size_t k, std::vector<Neighbor>* neighbors) {
  const std::size_t kept = std::min(k, neighbors->size());
  SortFirst(*neighbors, kept);
  neighbors->resize(kept);
}

}  // namespace streamreg
