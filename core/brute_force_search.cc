#include "core/brute_force_search.h"

#include <algorithm>

#include "core/euclidean_distance.h"

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

// Deliberately independent of the trees' rules: every distance, then a
// selection by (distance, id).
std::vector<Neighbor> BruteForceSearch::Knn(std::span<const double> query,
                                            std::size_t k) const {
  std::vector<Neighbor> all = AllDistances(query);
  const std::size_t kept = std::min(k, all.size());
  std::nth_element(all.begin(), all.begin() + kept, all.end(), NeighborLess);
  all.resize(kept);
  std::sort(all.begin(), all.end(), NeighborLess);
  return all;
}

std::vector<Neighbor> BruteForceSearch::Range(std::span<const double> query,
                                              double radius) const {
  std::vector<Neighbor> all = AllDistances(query);
  std::erase_if(all,
                [radius](const Neighbor& n) { return n.distance > radius; });
  std::sort(all.begin(), all.end(), NeighborLess);
  return all;
}

std::vector<Neighbor> BruteForceSearch::AllDistances(
    std::span<const double> query) const {
  std::vector<Neighbor> all(ids_.size());
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    all[i] = {ids_[i], EuclideanDistance(query.data(), point(i).data(), dim_)};
  }
  return all;
}

}  // namespace streamreg
