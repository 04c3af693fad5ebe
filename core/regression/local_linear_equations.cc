#include "core/regression/local_linear_equations.h"

#include "Eigen/Core"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMap = Eigen::Map<RowMatrix>;
using StridedRows = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

Eigen::Index Index(std::size_t n) { return static_cast<Eigen::Index>(n); }

}  // namespace

void LocalLinearEquations::Reset(std::size_t d, std::size_t m) {
  d_ = d;
  m_ = m;
  rows_ = 0;
  gram_.assign((d + 1) * (d + 1), 0.0);
  cross_.assign((d + 1) * m, 0.0);
}

void LocalLinearEquations::Add(const double* offsets, std::size_t offset_stride,
                               const double* targets, std::size_t target_stride,
                               std::size_t rows) {
  if (rows == 0) return;
  const Eigen::Index d = Index(d_);
  const StridedRows v(offsets, Index(rows), d,
                      Eigen::OuterStride<>(Index(offset_stride)));
  const StridedRows y(targets, Index(rows), Index(m_),
                      Eigen::OuterStride<>(Index(target_stride)));
  RowMap gram(gram_.data(), d + 1, d + 1);
  RowMap cross(cross_.data(), d + 1, Index(m_));
  gram.topLeftCorner(d, d).selfadjointView<Eigen::Lower>().rankUpdate(
      v.transpose());
  gram.row(d).head(d) += v.colwise().sum();
  gram(d, d) += static_cast<double>(rows);
  cross.topRows(d).noalias() += v.transpose() * y;
  cross.row(d) += y.colwise().sum();
  rows_ += rows;
}

bool LocalLinearEquations::Factor(double ridge) {
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

}  // namespace streamreg
