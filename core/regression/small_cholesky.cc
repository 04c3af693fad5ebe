#include "core/regression/small_cholesky.h"

#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace streamreg {
namespace {

// sum_k a[k] b[k] over [0, count), in four interleaved partial sums (the
// loop is a latency chain otherwise; the order is fixed, so the result is
// the same on every call).
double Dot(const double* a, const double* b, std::size_t count) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t k = 0;
  for (; k + 4 <= count; k += 4) {
    s0 += a[k] * b[k];
    s1 += a[k + 1] * b[k + 1];
    s2 += a[k + 2] * b[k + 2];
    s3 += a[k + 3] * b[k + 3];
  }
  for (; k < count; ++k) s0 += a[k] * b[k];
  return (s0 + s1) + (s2 + s3);
}

// x[c] -= factor * solved[c] for c < m: a row of right-hand sides less a
// multiple of a solved one. On x86-64 two columns a register (SSE2): each
// column's product and subtraction are the scalar code's, so the results
// are the same to the bit, in about two thirds of the time at m = 7.
[[gnu::always_inline]] inline void SubtractScaled(
    double* __restrict x, const double* __restrict solved, double factor,
    std::size_t m) {
  std::size_t c = 0;
#if defined(__SSE2__)
  const __m128d scale = _mm_set1_pd(factor);
  for (; c + 2 <= m; c += 2) {
    _mm_storeu_pd(x + c,
                  _mm_sub_pd(_mm_loadu_pd(x + c),
                             _mm_mul_pd(scale, _mm_loadu_pd(solved + c))));
  }
#endif
  for (; c < m; ++c) x[c] -= factor * solved[c];
}

}  // namespace

bool SmallCholesky::Factor(std::span<const double> a, std::size_t n) {
  n_ = 0;
  factor_.resize(n * n);
  inverse_diagonal_.resize(n);
  // Row by row (Cholesky-Banachiewicz): L_ij = (A_ij - L_i. L_j.) / L_jj
  // over the first j columns, both rows contiguous; a multiplication by the
  // pivot's inverse, kept, instead of a division per entry.
  for (std::size_t i = 0; i < n; ++i) {
    double* row = factor_.data() + i * n;
    for (std::size_t j = 0; j < i; ++j) {
      const double* pivot_row = factor_.data() + j * n;
      row[j] = (a[i * n + j] - Dot(row, pivot_row, j)) * inverse_diagonal_[j];
    }
    const double pivot = a[i * n + i] - Dot(row, row, i);
    if (!(pivot > 0.0) || !std::isfinite(pivot)) return false;
    row[i] = std::sqrt(pivot);
    inverse_diagonal_[i] = 1.0 / row[i];
  }
  n_ = n;
  return true;
}

void SmallCholesky::SolveLower(std::span<double> rhs, std::size_t m) const {
  for (std::size_t i = 0; i < n_; ++i) {
    const double* l = factor_.data() + i * n_;
    double* x = rhs.data() + i * m;
    for (std::size_t k = 0; k < i; ++k) {
      SubtractScaled(x, rhs.data() + k * m, l[k], m);
    }
    const double inverse = inverse_diagonal_[i];
    for (std::size_t c = 0; c < m; ++c) x[c] *= inverse;
  }
}

void SmallCholesky::Solve(std::span<double> rhs, std::size_t m) const {
  SolveLower(rhs, m);
  // L^T X = W, from the last row up: (L^T)_ik = L_ki.
  for (std::size_t i = n_; i-- > 0;) {
    double* x = rhs.data() + i * m;
    for (std::size_t k = i + 1; k < n_; ++k) {
      SubtractScaled(x, rhs.data() + k * m, factor_[k * n_ + i], m);
    }
    const double inverse = inverse_diagonal_[i];
    for (std::size_t c = 0; c < m; ++c) x[c] *= inverse;
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
