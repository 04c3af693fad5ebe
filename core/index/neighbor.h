#ifndef STREAMREG_CORE_INDEX_NEIGHBOR_H_
#define STREAMREG_CORE_INDEX_NEIGHBOR_H_

#include <cstdint>
#include <tuple>

namespace streamreg {

// One search result: a stored point's caller-chosen id and its distance to
// the query. Results are ordered by distance, ties broken by id, so every
// search has exactly one correct answer.
struct Neighbor {
  std::uint64_t id = 0;
  double distance = 0.0;

  friend bool operator==(const Neighbor&, const Neighbor&) = default;
};

// Strict weak order (distance, id): the order of every result list.
inline bool NeighborLess(const Neighbor& a, const Neighbor& b) {
  return std::tie(a.distance, a.id) < std::tie(b.distance, b.id);
}

// NeighborLess as a type, so sorts and heaps inline it (a function pointer
// would be called per comparison).
struct NeighborOrder {
  bool operator()(const Neighbor& a, const Neighbor& b) const {
    return NeighborLess(a, b);
  }
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_NEIGHBOR_H_
