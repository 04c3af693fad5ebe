#ifndef STREAMREG_CORE_INDEX_ROWS_WITHIN_H_
#define STREAMREG_CORE_INDEX_ROWS_WITHIN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/index/neighbor.h"

namespace streamreg {

// Points stored one after another (`count` rows of `dim` coordinates) and
// their ids: a block a search scans in full (a kept ball,
// RecentNeighborhoods).
struct PointRows {
  const double* coordinates;
  const std::uint64_t* ids;
  std::size_t count;
  std::size_t dim;
};

// Appends to `out`, in the rows' order, {id, distance} of every row within
// `limit` of `query`, the distance bit for bit EuclideanDistance's
// (core/index/euclidean_distance.h): its four partial sums are a vector's
// lanes, so the CPU's widest vectors (AVX2 where it has them) give the
// same answer as every other x86-64 CPU. Rows are measured four at a time
// (their chains of additions side by side), and a group all of whose
// partial sums pass the limit stops early, as EuclideanDistanceUpTo does.
void AppendRowsWithin(const double* query, const PointRows& rows, double limit,
                      std::vector<Neighbor>* out);

// The same with SSE2's vectors (every x86-64 CPU's), and with AVX2's (only
// where RunsAvx2(), core/base/vector_lanes.h): for tests that the two give
// the same answer.
void AppendRowsWithinPortable(const double* query, const PointRows& rows,
                              double limit, std::vector<Neighbor>* out);
void AppendRowsWithinAvx2(const double* query, const PointRows& rows,
                          double limit, std::vector<Neighbor>* out);

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_ROWS_WITHIN_H_
