#include "core/regression/local_linear.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "Eigen/Cholesky"
#include "Eigen/Core"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;

// The normal equations of the fit over a growing prefix of the neighbours,
// with the design rows (1, z_j - z): the lower triangle of sum_j v_j v_j^T
// and sum_j v_j y_j^T. Reused from query to query (thread_local).
class NormalEquations {
 public:
  void Reset(std::size_t d, std::size_t m) {
    gram_.setZero(d + 1, d + 1);
    cross_.setZero(d + 1, m);
    count_ = 0;
  }

  // Adds neighbours [count(), end).
  void Extend(const NeighborTargets& near, std::size_t end) {
    const std::size_t d = near.dim();
    const std::size_t m = near.num_targets();
    const std::size_t rows = end - count_;
    if (rows == 0) return;
    const ConstRowMap offsets(near.offsets(count_), rows, d);
    const ConstRowMap targets(near.targets(count_), rows, m);
    gram_(0, 0) += static_cast<double>(rows);
    gram_.block(1, 0, d, 1) += offsets.colwise().sum().transpose();
    gram_.block(1, 1, d, d)
        .selfadjointView<Eigen::Lower>()
        .rankUpdate(offsets.transpose());
    cross_.row(0) += targets.colwise().sum();
    cross_.bottomRows(d).noalias() += offsets.transpose() * targets;
    count_ = end;
  }

  // Solves (gram + ridge diag(0, 1, ..., 1)) theta = cross: theta's row 0
  // is the intercept a per target, rows 1.. the slope b. False if the
  // system is not positive definite (ridge 0 and too few neighbours).
  bool Solve(double ridge, Eigen::MatrixXd* theta) {
    system_ = gram_;
    system_.diagonal().tail(system_.rows() - 1).array() += ridge;
    llt_.compute(system_);
    if (llt_.info() != Eigen::Success) return false;
    *theta = llt_.solve(cross_);
    return theta->allFinite();
  }

  std::size_t count() const { return count_; }

 private:
  Eigen::MatrixXd gram_;  // lower triangle used
  Eigen::MatrixXd cross_;
  Eigen::MatrixXd system_;
  Eigen::LLT<Eigen::MatrixXd, Eigen::Lower> llt_;
  std::size_t count_ = 0;
};

struct Workspace {
  NormalEquations equations;
  Eigen::MatrixXd theta;
};

Workspace& ThreadWorkspace() {
  thread_local Workspace workspace;
  return workspace;
}

// The mean of the first `count` neighbours' target t (the fit of a system
// that is not positive definite: intercept only).
double PrefixMean(const NeighborTargets& near, std::size_t count,
                  std::size_t t) {
  double sum = 0.0;
  for (std::size_t j = 0; j < count; ++j) sum += near.targets(j)[t];
  return sum / static_cast<double>(count);
}

}  // namespace

void LocalLinearAt(std::size_t k, double ridge, const NeighborTargets& near,
                   LocalAverage* out, std::span<const std::size_t> targets) {
  const std::size_t m = near.num_targets();
  const std::size_t d = near.dim();
  out->value.assign(m, 0.0);
  out->spread.assign(m, 0.0);
  const std::size_t count = std::min(k, near.size());
  out->neighbors = count;
  if (count == 0) return;
  std::vector<std::size_t> all;
  if (targets.empty()) {
    all.resize(m);
    std::iota(all.begin(), all.end(), std::size_t{0});
    targets = all;
  }
  Workspace& work = ThreadWorkspace();
  work.equations.Reset(d, m);
  work.equations.Extend(near, count);
  if (!work.equations.Solve(ridge, &work.theta)) {
    work.theta.setZero(d + 1, m);
    for (std::size_t t : targets) work.theta(0, t) = PrefixMean(near, count, t);
  }
  for (std::size_t t : targets) {
    const double a = work.theta(0, t);
    double squares = 0.0;
    for (std::size_t j = 0; j < count; ++j) {
      const double* offset = near.offsets(j);
      double fitted = a;
      for (std::size_t i = 0; i < d; ++i) {
        fitted += work.theta(i + 1, t) * offset[i];
      }
      const double residual = near.targets(j)[t] - fitted;
      squares += residual * residual;
    }
    out->value[t] = a;
    out->spread[t] = std::sqrt(squares / static_cast<double>(count));
  }
}

void LocalLinearGrid(std::span<const std::size_t> grid, double ridge,
                     const NeighborTargets& near,
                     std::span<const double> fallback,
                     std::span<double> values) {
  const std::size_t m = near.num_targets();
  Workspace& work = ThreadWorkspace();
  work.equations.Reset(near.dim(), m);
  for (std::size_t g = 0; g < grid.size(); ++g) {
    double* row = values.data() + g * m;
    const std::size_t count = std::min(grid[g], near.size());
    if (count == 0) {
      std::copy(fallback.begin(), fallback.end(), row);
      continue;
    }
    work.equations.Extend(near, count);
    if (work.equations.Solve(ridge, &work.theta)) {
      for (std::size_t t = 0; t < m; ++t) row[t] = work.theta(0, t);
    } else {
      for (std::size_t t = 0; t < m; ++t) row[t] = PrefixMean(near, count, t);
    }
  }
}

}  // namespace streamreg
