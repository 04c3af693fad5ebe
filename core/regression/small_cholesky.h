#ifndef STREAMREG_CORE_REGRESSION_SMALL_CHOLESKY_H_
#define STREAMREG_CORE_REGRESSION_SMALL_CHOLESKY_H_

#include <cstddef>
#include <span>
#include <vector>

namespace streamreg {

// The Cholesky factorization A = L L^T of a small symmetric positive
// definite matrix, and solves with it: the (d + 1) x (d + 1) normal
// equations of the local linear fits, solved once per neighbour count on
// every learned sample. At these sizes (d around 20) Eigen's blocked
// triangular solves cost several times the arithmetic; plain loops over
// row-major arrays, whose inner loops run along contiguous rows of the
// right-hand sides, do not. Matrices are row-major; only A's lower
// triangle is read. Reusable: Factor may be called again with any n.
class SmallCholesky {
 public:
  // Factors the n x n matrix `a` (row-major, lower triangle read). False,
  // and nothing to solve with, if a pivot is not positive (A is not
  // positive definite, or not finite).
  bool Factor(std::span<const double> a, std::size_t n);

  // Overwrites the n x m row-major `rhs` B with L^{-1} B.
  void SolveLower(std::span<double> rhs, std::size_t m) const;

  // Overwrites the n x m row-major `rhs` B with A^{-1} B.
  void Solve(std::span<double> rhs, std::size_t m) const;

  // The last row of A^{-1} B (m values) from W = L^{-1} B: the last
  // unknown of every column needs only the forward substitution, since
  // L^T is upper triangular (x_{n-1} = w_{n-1} / L_{n-1,n-1}).
  void LastRowOfSolution(std::span<const double> lower_solved, std::size_t m,
                         std::span<double> out) const;

  std::size_t size() const { return n_; }

 private:
  // L^{-1} B, then L^{-T} of it if `upper`.
  void Substitute(std::span<double> rhs, std::size_t m, bool upper) const;

  std::size_t n_ = 0;
  std::vector<double> factor_;            // L, row-major n x n (lower triangle)
  std::vector<double> inverse_diagonal_;  // 1 / L_ii
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_SMALL_CHOLESKY_H_
