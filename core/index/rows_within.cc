#include "core/index/rows_within.h"

#include <cmath>

#include "core/base/vector_lanes.h"
#include "core/index/euclidean_distance.h"

namespace streamreg {
namespace {

// Rows measured a group at a time, so that their chains of additions run
// side by side.
constexpr std::size_t kGroup = 4;

// Finishes a row's squared distance from its vector of partial sums over
// the coordinates before `i` (the rest into the first, as SquaredDistance
// does) and appends the row if it is within the limit.
[[gnu::always_inline]] inline void FinishRow(const double* query,
                                             const double* row, std::size_t i,
                                             std::size_t dim, const Lanes& sums,
                                             std::uint64_t id, double limit,
                                             double stop_above,
                                             std::vector<Neighbor>* out) {
  double first = sums[0];
  for (; i < dim; ++i) {
    const double t = query[i] - row[i];
    first += t * t;
  }
  const double squared = (first + sums[1]) + (sums[2] + sums[3]);
  // Above stop_above the distance is above the limit (SquaredDistance's
  // early stop says the same).
  if (!(squared <= stop_above)) return;
  const double distance = std::sqrt(squared);
  if (distance <= limit) out->push_back({id, distance});
}

// Rows [j, j + Group) measured together; a group whose partial sums all
// pass the limit stops early.
template <std::size_t Group>
[[gnu::always_inline]] inline void MeasureGroup(const double* query,
                                                const PointRows& rows,
                                                std::size_t j, double limit,
                                                double stop_above,
                                                std::vector<Neighbor>* out) {
  const std::size_t dim = rows.dim;
  const double* row = rows.coordinates + j * dim;
  Lanes sums[Group] = {};
  std::size_t i = 0;
  for (; i + kLanes <= dim; i += kLanes) {
    Lanes x;
    LoadLanes(query + i, x);
#pragma GCC unroll 4
    for (std::size_t b = 0; b < Group; ++b) {
      Lanes y;
      LoadLanes(row + b * dim + i, y);
      const Lanes t = x - y;
      sums[b] += t * t;
    }
    if ((i & 4) != 0) {
      bool all_beyond = true;
#pragma GCC unroll 4
      for (std::size_t b = 0; b < Group; ++b) {
        all_beyond &=
            (sums[b][0] + sums[b][1]) + (sums[b][2] + sums[b][3]) > stop_above;
      }
      if (all_beyond) return;
    }
  }
#pragma GCC unroll 4
  for (std::size_t b = 0; b < Group; ++b) {
    FinishRow(query, row + b * dim, i, dim, sums[b], rows.ids[j + b], limit,
              stop_above, out);
  }
}

[[gnu::always_inline]] inline void AppendAll(const double* query,
                                             const PointRows& rows,
                                             double limit,
                                             std::vector<Neighbor>* out) {
  static_assert(kLanes == 4, "the lanes are SquaredDistance's four sums");
  const double stop_above = internal::StopAbove(limit);
  std::size_t j = 0;
  for (; j + kGroup <= rows.count; j += kGroup) {
    MeasureGroup<kGroup>(query, rows, j, limit, stop_above, out);
  }
  for (; j < rows.count; ++j) {
    MeasureGroup<1>(query, rows, j, limit, stop_above, out);
  }
}

}  // namespace

void AppendRowsWithinPortable(const double* query, const PointRows& rows,
                              double limit, std::vector<Neighbor>* out) {
  AppendAll(query, rows, limit, out);
}

STREAMREG_FOR_AVX2 void AppendRowsWithinAvx2(const double* query,
                                             const PointRows& rows,
                                             double limit,
                                             std::vector<Neighbor>* out) {
  AppendAll(query, rows, limit, out);
}

void AppendRowsWithin(const double* query, const PointRows& rows, double limit,
                      std::vector<Neighbor>* out) {
  if (RunsAvx2()) {
    AppendRowsWithinAvx2(query, rows, limit, out);
  } else {
    AppendRowsWithinPortable(query, rows, limit, out);
  }
}

}  // namespace streamreg
