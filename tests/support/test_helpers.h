#ifndef STREAMREG_TESTS_SUPPORT_TEST_HELPERS_H_
#define STREAMREG_TESTS_SUPPORT_TEST_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "core/index/brute_force_search.h"
#include "core/index/cover_tree.h"
#include "tests/support/synthetic_points.h"

namespace streamreg {

// Ids 0, 1, ..., n - 1: point i of a PointSet gets id i.
inline std::vector<std::uint64_t> SequentialIds(std::size_t n) {
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  return ids;
}

// The brute-force reference over `points`, point i with id i.
inline BruteForceSearch BruteForceOver(const PointSet& points) {
  BruteForceSearch brute(points.dim);
  for (std::size_t i = 0; i < points.size(); ++i) brute.Add(i, points.point(i));
  return brute;
}

// A cover tree grown by inserting `points` one at a time in order, point i
// with id i.
inline CoverTree GrownCoverTree(const PointSet& points) {
  CoverTree tree(points.dim);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!tree.Insert(i, points.point(i)).ok()) std::abort();
  }
  return tree;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_TEST_HELPERS_H_
