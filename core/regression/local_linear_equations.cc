#include "core/regression/local_linear_equations.h"

#include <algorithm>
#include <cmath>

#include "core/regression/normal_equation_rows.h"

namespace streamreg {

void LocalLinearEquations::Reset(std::size_t d, std::size_t m, bool residuals) {
  d_ = d;
  m_ = m;
  residuals_ = residuals;
  rows_ = 0;
  gram_.assign((d + 1) * (d + 1), 0.0);
  cross_.assign((d + 1) * m, 0.0);
  shift_.assign(m, 0.0);
  shifted_squares_.assign(m, 0.0);
}

void LocalLinearEquations::Add(const double* offsets, std::size_t offset_stride,
                               const double* targets, std::size_t target_stride,
                               std::size_t rows) {
  if (rows == 0) return;
  AddNormalEquationRows({.offsets = offsets,
                         .offset_stride = offset_stride,
                         .targets = targets,
                         .target_stride = target_stride,
                         .rows = rows},
                        d_, m_, gram_.data(), cross_.data());
  if (residuals_) AddSquares(targets, target_stride, rows);
  rows_ += rows;
}

void LocalLinearEquations::CopyLeading(const LocalLinearEquations& full,
                                       std::size_t coordinates) {
  const std::size_t r = std::min(coordinates, full.d_);
  Reset(r, full.m_, full.residuals_);
  rows_ = full.rows_;
  const std::size_t n = full.d_ + 1;
  // Row and column i < r are full's i; row and column r (the intercept's)
  // are full's d.
  const auto source = [&](std::size_t i) { return i < r ? i : full.d_; };
  for (std::size_t i = 0; i <= r; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      gram_[i * (r + 1) + j] = full.gram_[source(i) * n + source(j)];
    }
    std::copy_n(full.cross_.begin() + source(i) * m_, m_,
                cross_.begin() + i * m_);
  }
  shift_ = full.shift_;
  shifted_squares_ = full.shifted_squares_;
}

void LocalLinearEquations::AddSquares(const double* targets,
                                      std::size_t target_stride,
                                      std::size_t rows) {
  if (rows_ == 0) std::copy(targets, targets + m_, shift_.begin());
  for (std::size_t j = 0; j < rows; ++j) {
    const double* row = targets + j * target_stride;
    for (std::size_t t = 0; t < m_; ++t) {
      const double shifted = row[t] - shift_[t];
      shifted_squares_[t] += shifted * shifted;
    }
  }
}

bool LocalLinearEquations::Factor(double ridge) {
  ridge_ = ridge;
  system_ = gram_;
  for (std::size_t i = 0; i < d_; ++i) system_[i * (d_ + 1) + i] += ridge;
  return cholesky_.Factor(system_, d_ + 1);
}

void LocalLinearEquations::Intercepts(std::span<double> out) {
  solution_ = cross_;
  cholesky_.SolveLower(solution_, m_);
  cholesky_.LastRowOfSolution(solution_, m_, out);
}

std::span<const double> LocalLinearEquations::Solve() {
  solution_ = cross_;
  cholesky_.Solve(solution_, m_);
  return solution_;
}

bool LocalLinearEquations::FitTargets(std::span<const std::size_t> targets,
                                      std::span<double> intercepts,
                                      std::span<double> residual_squares) {
  if (!residuals_) return false;
  const std::size_t listed = targets.size();
  const std::size_t n = d_ + 1;
  solution_.resize(n * listed);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < listed; ++j) {
      solution_[i * listed + j] = cross_[i * m_ + targets[j]];
    }
  }
  cholesky_.Solve(solution_, listed);
  // With y_t less c_t (the first row's), C_t becomes C_t - c_t g with g
  // G's row d (the rows' coordinate sums and their count), and the
  // intercept a_t - c_t; the slopes and residuals stay the same.
  const double* sums = gram_.data() + d_ * n;
  bool finite = true;
  for (std::size_t j = 0; j < listed; ++j) {
    const std::size_t t = targets[j];
    const double c = shift_[t];
    double explained = 0.0;  // theta^T C of the shifted target
    double slopes = 0.0;     // |B|^2
    for (std::size_t i = 0; i < d_; ++i) {
      const double b = solution_[i * listed + j];
      explained += b * (cross_[i * m_ + t] - c * sums[i]);
      slopes += b * b;
    }
    const double a = solution_[d_ * listed + j];
    explained += (a - c) * (cross_[d_ * m_ + t] - c * sums[d_]);
    const double squares = shifted_squares_[t] - explained - ridge_ * slopes;
    finite = finite && std::isfinite(a) && std::isfinite(squares);
    intercepts[j] = a;
    residual_squares[j] = std::max(0.0, squares);  // rounding can go below
  }
  return finite;
}

}  // namespace streamreg
