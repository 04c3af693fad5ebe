#include "core/regression/normal_equation_rows.h"

#include <algorithm>
#include <utility>

#include "core/base/vector_lanes.h"

namespace streamreg {
namespace {

// Rows taken together: each entry is loaded once, takes the block's
// products in order, and is stored once.
constexpr std::size_t kBlock = 4;

// sum[j] += scale[b] * rows[b][j] for j < length, for b = 0 .. Count - 1 in
// turn (without Scaled: the rows alone), a lane per j; the blocks' terms
// unrolled at compile time (the comma fold adds them left to right).
template <bool Scaled, std::size_t Count, std::size_t... B>
[[gnu::always_inline]] inline void AddScaledRows(
    const double (&scale)[Count], const double* const (&rows)[Count],
    std::size_t length, double* sum, std::index_sequence<B...>) {
  std::size_t j = 0;
  for (; j + kLanes <= length; j += kLanes) {
    Lanes lanes;
    LoadLanes(sum + j, lanes);
    Lanes row[Count];
    (LoadLanes(rows[B] + j, row[B]), ...);
    if constexpr (Scaled) {
      ((lanes += scale[B] * row[B]), ...);
    } else {
      ((lanes += row[B]), ...);
    }
    StoreLanes(lanes, sum + j);
  }
  for (; j < length; ++j) {
    double lane = sum[j];
    if constexpr (Scaled) {
      ((lane += scale[B] * rows[B][j]), ...);
    } else {
      ((lane += rows[B][j]), ...);
    }
    sum[j] = lane;
  }
}

template <bool Scaled, std::size_t Count>
[[gnu::always_inline]] inline void AddScaledRows(
    const double (&scale)[Count], const double* const (&rows)[Count],
    std::size_t length, double* sum) {
  AddScaledRows<Scaled>(scale, rows, length, sum,
                        std::make_index_sequence<Count>());
}

// Adds rows [r, r + Count) of `rows`; each entry's adds stay in the rows'
// order (and the build never fuses a multiply and an add:
// -ffp-contract=off).
template <std::size_t Count>
[[gnu::always_inline]] inline void AddBlock(const NormalEquationRows& rows,
                                            std::size_t r, std::size_t d,
                                            std::size_t m, double* gram,
                                            double* cross) {
  const std::size_t n = d + 1;
  const double* v[Count];
  const double* y[Count];
  double none[Count];
  for (std::size_t b = 0; b < Count; ++b) {
    v[b] = rows.offsets + (r + b) * rows.offset_stride;
    y[b] = rows.targets + (r + b) * rows.target_stride;
    none[b] = 0.0;
  }
  for (std::size_t i = 0; i < d; ++i) {
    double vi[Count];
    for (std::size_t b = 0; b < Count; ++b) vi[b] = v[b][i];
    // Row i's entries j <= i, and those after it up to a whole vector
    // (G is symmetric: they are G_ij too, and only the lower triangle is
    // read), short of the intercept's column.
    const std::size_t length = std::min(d, (i + kLanes) / kLanes * kLanes);
    AddScaledRows<true>(vi, v, length, gram + i * n);
    AddScaledRows<true>(vi, y, m, cross + i * m);
  }
  // The intercept's row: the coordinates' and targets' sums, and the count.
  AddScaledRows<false>(none, v, d, gram + d * n);
  for (std::size_t b = 0; b < Count; ++b) gram[d * n + d] += 1.0;
  AddScaledRows<false>(none, y, m, cross + d * m);
}

[[gnu::always_inline]] inline void AddAll(const NormalEquationRows& rows,
                                          std::size_t d, std::size_t m,
                                          double* gram, double* cross) {
  std::size_t r = 0;
  for (; r + kBlock <= rows.rows; r += kBlock) {
    AddBlock<kBlock>(rows, r, d, m, gram, cross);
  }
  for (; r < rows.rows; ++r) AddBlock<1>(rows, r, d, m, gram, cross);
}

}  // namespace

void AddNormalEquationRowsPortable(const NormalEquationRows& rows,
                                   std::size_t d, std::size_t m, double* gram,
                                   double* cross) {
  AddAll(rows, d, m, gram, cross);
}

STREAMREG_FOR_AVX2 void AddNormalEquationRowsAvx2(
    const NormalEquationRows& rows, std::size_t d, std::size_t m, double* gram,
    double* cross) {
  AddAll(rows, d, m, gram, cross);
}

void AddNormalEquationRows(const NormalEquationRows& rows, std::size_t d,
                           std::size_t m, double* gram, double* cross) {
  if (RunsAvx2()) {
    AddNormalEquationRowsAvx2(rows, d, m, gram, cross);
  } else {
    AddNormalEquationRowsPortable(rows, d, m, gram, cross);
  }
}

}  // namespace streamreg
