#ifndef STREAMREG_CORE_REGRESSION_NORMAL_EQUATION_ROWS_H_
#define STREAMREG_CORE_REGRESSION_NORMAL_EQUATION_ROWS_H_

#include <cstddef>

namespace streamreg {

// Rows added to a linear fit's normal equations (LocalLinearEquations):
// for each design row (v_j, 1) with targets y_j,
//   G += (v_j, 1)(v_j, 1)^T   (n = d + 1, row-major; its lower triangle,
//                             and a few entries above the diagonal that
//                             fill a vector, which no one reads)
//   C += (v_j, 1) y_j^T       (n x m, row-major).
// Each entry's sum takes the rows' products in the rows' order, one product
// rounded and then added at a time, whatever vectors a CPU has: the same
// bits on every x86-64 machine (a model learns the same everywhere), and
// the same whether the rows come in one batch or several.
struct NormalEquationRows {
  const double* offsets;      // v_j, d coordinates each
  std::size_t offset_stride;  // between rows of `offsets`
  const double* targets;      // y_j, m each
  std::size_t target_stride;  // between rows of `targets`
  std::size_t rows;
};

// Adds `rows` to `gram` and `cross`, with the widest vectors the CPU runs
// (AVX2 where it has them).
void AddNormalEquationRows(const NormalEquationRows& rows, std::size_t d,
                           std::size_t m, double* gram, double* cross);

// The same with SSE2's vectors (every x86-64 CPU's), and with AVX2's (only
// where RunsAvx2(), core/base/vector_lanes.h): for tests that the two
// give the same bits.
void AddNormalEquationRowsPortable(const NormalEquationRows& rows,
                                   std::size_t d, std::size_t m, double* gram,
                                   double* cross);
void AddNormalEquationRowsAvx2(const NormalEquationRows& rows, std::size_t d,
                               std::size_t m, double* gram, double* cross);

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_NORMAL_EQUATION_ROWS_H_
