#include "core/regression/small_cholesky.h"

#include <cmath>
#include <cstring>

#include "core/base/vector_lanes.h"

namespace streamreg {
namespace {

// The loops below are compiled twice (SSE2 and AVX2, vector_lanes.h), with
// the same bits from both.

// sum_k a[k] b[k] over [0, count), in four interleaved partial sums (the
// loop is a latency chain otherwise), a lane each; the order is fixed, so
// the result is the same on every call and every CPU.
[[gnu::always_inline]] inline double Dot(const double* a, const double* b,
                                         std::size_t count) {
  Lanes sums = {0.0, 0.0, 0.0, 0.0};
  std::size_t k = 0;
  for (; k + kLanes <= count; k += kLanes) {
    Lanes x, y;
    LoadLanes(a + k, x);
    LoadLanes(b + k, y);
    sums += x * y;
  }
  double s0 = sums[0];
  for (; k < count; ++k) s0 += a[k] * b[k];
  return (s0 + sums[1]) + (sums[2] + sums[3]);
}

// x[c] -= factor * solved[c] for c < m: a row of right-hand sides less a
// multiple of a solved one, four columns at a time, then two, then one;
// each column's product and subtraction are the scalar code's.
[[gnu::always_inline]] inline void SubtractScaled(
    double* __restrict x, const double* __restrict solved, double factor,
    std::size_t m) {
  using Pair = double __attribute__((vector_size(16)));
  std::size_t c = 0;
  for (; c + kLanes <= m; c += kLanes) {
    Lanes lanes, scaled;
    LoadLanes(x + c, lanes);
    LoadLanes(solved + c, scaled);
    StoreLanes(lanes - factor * scaled, x + c);
  }
  if (c + 2 <= m) {
    Pair pair, scaled;
    std::memcpy(&pair, x + c, sizeof pair);
    std::memcpy(&scaled, solved + c, sizeof scaled);
    pair -= factor * scaled;
    std::memcpy(x + c, &pair, sizeof pair);
    c += 2;
  }
  for (; c < m; ++c) x[c] -= factor * solved[c];
}

// Factor's loops over L (n x n, row-major) and 1 / L_ii; false if a pivot
// is not positive.
[[gnu::always_inline]] inline bool FactorInto(const double* a, std::size_t n,
                                              double* factor,
                                              double* inverse_diagonal) {
  // Row by row (Cholesky-Banachiewicz): L_ij = (A_ij - L_i. L_j.) / L_jj
  // over the first j columns, both rows contiguous; a multiplication by the
  // pivot's inverse, kept, instead of a division per entry.
  for (std::size_t i = 0; i < n; ++i) {
    double* row = factor + i * n;
    for (std::size_t j = 0; j < i; ++j) {
      const double* pivot_row = factor + j * n;
      row[j] = (a[i * n + j] - Dot(row, pivot_row, j)) * inverse_diagonal[j];
    }
    const double pivot = a[i * n + i] - Dot(row, row, i);
    if (!(pivot > 0.0) || !std::isfinite(pivot)) return false;
    row[i] = std::sqrt(pivot);
    inverse_diagonal[i] = 1.0 / row[i];
  }
  return true;
}

// B := L^{-1} B (n x m, row-major), forward.
[[gnu::always_inline]] inline void SolveLowerIn(const double* factor,
                                                const double* inverse_diagonal,
                                                std::size_t n, double* rhs,
                                                std::size_t m) {
  for (std::size_t i = 0; i < n; ++i) {
    const double* l = factor + i * n;
    double* x = rhs + i * m;
    for (std::size_t k = 0; k < i; ++k) {
      SubtractScaled(x, rhs + k * m, l[k], m);
    }
    const double inverse = inverse_diagonal[i];
    for (std::size_t c = 0; c < m; ++c) x[c] *= inverse;
  }
}

// B := L^{-T} B, from the last row up: (L^T)_ik = L_ki.
[[gnu::always_inline]] inline void SolveUpperIn(const double* factor,
                                                const double* inverse_diagonal,
                                                std::size_t n, double* rhs,
                                                std::size_t m) {
  for (std::size_t i = n; i-- > 0;) {
    double* x = rhs + i * m;
    for (std::size_t k = i + 1; k < n; ++k) {
      SubtractScaled(x, rhs + k * m, factor[k * n + i], m);
    }
    const double inverse = inverse_diagonal[i];
    for (std::size_t c = 0; c < m; ++c) x[c] *= inverse;
  }
}

bool FactorPortable(const double* a, std::size_t n, double* factor,
                    double* inverse_diagonal) {
  return FactorInto(a, n, factor, inverse_diagonal);
}

STREAMREG_FOR_AVX2 bool FactorAvx2(const double* a, std::size_t n,
                                   double* factor, double* inverse_diagonal) {
  return FactorInto(a, n, factor, inverse_diagonal);
}

void SolvePortable(const double* factor, const double* inverse_diagonal,
                   std::size_t n, double* rhs, std::size_t m, bool upper) {
  SolveLowerIn(factor, inverse_diagonal, n, rhs, m);
  if (upper) SolveUpperIn(factor, inverse_diagonal, n, rhs, m);
}

STREAMREG_FOR_AVX2 void SolveAvx2(const double* factor,
                                  const double* inverse_diagonal, std::size_t n,
                                  double* rhs, std::size_t m, bool upper) {
  SolveLowerIn(factor, inverse_diagonal, n, rhs, m);
  if (upper) SolveUpperIn(factor, inverse_diagonal, n, rhs, m);
}

}  // namespace

bool SmallCholesky::Factor(std::span<const double> a, std::size_t n) {
  n_ = 0;
  factor_.resize(n * n);
  inverse_diagonal_.resize(n);
  const bool factored = RunsAvx2() ? FactorAvx2(a.data(), n, factor_.data(),
                                                inverse_diagonal_.data())
                                   : FactorPortable(a.data(), n, factor_.data(),
                                                    inverse_diagonal_.data());
  if (factored) n_ = n;
  return factored;
}

void SmallCholesky::SolveLower(std::span<double> rhs, std::size_t m) const {
  Substitute(rhs, m, /*upper=*/false);
}

void SmallCholesky::Solve(std::span<double> rhs, std::size_t m) const {
  Substitute(rhs, m, /*upper=*/true);
}

void SmallCholesky::Substitute(std::span<double> rhs, std::size_t m,
                               bool upper) const {
  if (RunsAvx2()) {
    SolveAvx2(factor_.data(), inverse_diagonal_.data(), n_, rhs.data(), m,
              upper);
  } else {
    SolvePortable(factor_.data(), inverse_diagonal_.data(), n_, rhs.data(), m,
                  upper);
  }
}

void SmallCholesky::LastRowOfSolution(std::span<const double> lower_solved,
                                      std::size_t m,
                                      std::span<double> out) const {
  const std::size_t last = n_ - 1;
  const double inverse = inverse_diagonal_[last];
  for (std::size_t c = 0; c < m; ++c) {
    out[c] = lower_solved[last * m + c] * inverse;
  }
}

}  // namespace streamreg
