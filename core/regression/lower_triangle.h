#ifndef STREAMREG_CORE_REGRESSION_LOWER_TRIANGLE_H_
#define STREAMREG_CORE_REGRESSION_LOWER_TRIANGLE_H_

#include <cstddef>
#include <span>

#include "core/base/byte_coding.h"

namespace streamreg {

// The lower triangle of a column-major n x n matrix, column by column: how
// snapshots hold a symmetric matrix or a Cholesky factor (half the bytes of
// the whole).
inline void SaveLowerTriangle(std::span<const double> matrix, std::size_t n,
                              ByteWriter& out) {
  for (std::size_t j = 0; j < n; ++j) {
    out.RawDoubles(matrix.subspan(j * n + j, n - j));
  }
}

// Reads one into `matrix` (n x n), zeroing the strict upper triangle.
inline bool LoadLowerTriangle(ByteReader& in, std::size_t n,
                              std::span<double> matrix) {
  if (n * (n + 1) / 2 > in.remaining() / sizeof(double)) return false;
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < j; ++i) matrix[j * n + i] = 0.0;
    in.RawDoubles(matrix.subspan(j * n + j, n - j));
  }
  return in.ok();
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_LOWER_TRIANGLE_H_
