#include "core/index/brute_force_search.h"

#include <algorithm>

#include "core/index/euclidean_distance.h"

namespace streamreg {

void BruteForceSearch::Add(std::uint64_t id, std::span<const double> point) {
  ids_.push_back(id);
  coordinates_.insert(coordinates_.end(), point.begin(), point.end());
}

bool BruteForceSearch::Remove(std::uint64_t id) {
  const auto it = std::find(ids_.begin(), ids_.end(), id);
  if (it == ids_.end()) return false;
  const std::size_t i = it - ids_.begin();
  const std::size_t last = ids_.size() - 1;
  ids_[i] = ids_[last];
  std::copy_n(coordinates_.begin() + last * dim_, dim_,
              coordinates_.begin() + i * dim_);
  ids_.pop_back();
  coordinates_.resize(last * dim_);
  return true;
}

// Deliberately independent of the trees' rules: a scan that keeps the best k
// in a sorted array (insertion), ordered by (distance, id).
std::vector<Neighbor> BruteForceSearch::Knn(std::span<const double> query,
                                            std::size_t k) const {
  std::vector<Neighbor> best;
  best.reserve(std::min(k, ids_.size()) + 1);
  for (std::size_t i = 0; i < ids_.size() && k > 0; ++i) {
    const Neighbor candidate{
        ids_[i], EuclideanDistance(query.data(), point(i).data(), dim_)};
    if (best.size() == k && !NeighborLess(candidate, best.back())) continue;
    best.insert(
        std::upper_bound(best.begin(), best.end(), candidate, NeighborOrder()),
        candidate);
    if (best.size() > k) best.pop_back();
  }
  return best;
}

std::vector<Neighbor> BruteForceSearch::Range(std::span<const double> query,
                                              double radius) const {
  std::vector<Neighbor> within;
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    const double d = EuclideanDistance(query.data(), point(i).data(), dim_);
    if (d <= radius) within.push_back({ids_[i], d});
  }
  std::sort(within.begin(), within.end(), NeighborOrder());
  return within;
}

}  // namespace streamreg
