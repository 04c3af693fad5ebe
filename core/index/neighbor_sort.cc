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

}  // namespace

void SortNeighbors(std::span<Neighbor> neighbors) {
  const std::size_t n = neighbors.size();
  if (n < kSortedDirectly) {
    std::sort(neighbors.begin(), neighbors.end(), NeighborOrder());
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
    std::sort(neighbors.begin(), neighbors.end(), NeighborOrder());
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
  // ends[b] is bucket b's start; placing moves it to the bucket's end.
  placed.resize(n);
  for (const Neighbor& neighbor : neighbors) {
    placed[ends[bucket_of(neighbor.distance)]++] = neighbor;
  }
  std::size_t begin = 0;
  for (std::size_t b = 0; b < n; ++b) {
    const std::span<Neighbor> bucket(placed.data() + begin, ends[b] - begin);
    if (bucket.size() <= kInsertionSorted) {
      InsertionSort(bucket);
    } else {
      std::sort(bucket.begin(), bucket.end(), NeighborOrder());
    }
    begin = ends[b];
  }
  std::copy(placed.begin(), placed.end(), neighbors.begin());
}

void KeepNearest(std::size_t k, std::vector<Neighbor>* neighbors) {
  if (neighbors->size() > k) {
    if (k == 0) {
      neighbors->clear();
      return;
    }
    std::nth_element(neighbors->begin(), neighbors->begin() + (k - 1),
                     neighbors->end(), NeighborOrder());
    neighbors->resize(k);
  }
  SortNeighbors(*neighbors);
}

}  // namespace streamreg
