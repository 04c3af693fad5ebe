#ifndef STREAMREG_CORE_INDEX_BRUTE_FORCE_SEARCH_H_
#define STREAMREG_CORE_INDEX_BRUTE_FORCE_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/index/neighbor.h"

namespace streamreg {

// The reference every index is measured against: a linear scan over points
// stored row-major, using the same distance function, so its answers are the
// exact ones (same ids, bit-identical distances, same tie-break by id).
class BruteForceSearch {
 public:
  explicit BruteForceSearch(std::size_t dim) : dim_(dim) {}

  void Add(std::uint64_t id, std::span<const double> point);
  // Removes `id`; returns false if it is not stored.
  bool Remove(std::uint64_t id);

  std::vector<Neighbor> Knn(std::span<const double> query, std::size_t k) const;
  std::vector<Neighbor> Range(std::span<const double> query,
                              double radius) const;

  std::size_t size() const { return ids_.size(); }
  std::size_t dim() const { return dim_; }
  std::uint64_t id(std::size_t i) const { return ids_[i]; }
  std::span<const double> point(std::size_t i) const {
    return {coordinates_.data() + i * dim_, dim_};
  }

 private:
  std::size_t dim_;
  std::vector<std::uint64_t> ids_;
  std::vector<double> coordinates_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_BRUTE_FORCE_SEARCH_H_
