#include "core/regression/online_ridge.h"

#include <algorithm>
#include <cmath>

#include "Eigen/Cholesky"
#include "Eigen/Core"
#include "core/regression/small_cholesky.h"

namespace streamreg {
namespace {

using VectorMap = Eigen::Map<Eigen::VectorXd>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;
using MatrixMap = Eigen::Map<Eigen::MatrixXd>;
using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXd>;

// What the ridge adds to XX's diagonal: (ridge + relative_ridge W) times
// each input's weighted variance XX_jj / W; an input that has not varied
// gets 1, which keeps the system definite (its row of XX and XY is zero,
// so B_j = 0).
std::vector<double> DiagonalRidge(const std::vector<double>& xx, std::size_t d,
                                  double weight, double ridge,
                                  double relative_ridge) {
  const double alpha = ridge + relative_ridge * weight;
  std::vector<double> added(d);
  for (std::size_t j = 0; j < d; ++j) {
    const double variance = xx[j * d + j] / weight;
    added[j] = variance > 0.0 ? alpha * variance : 1.0;
  }
  return added;
}

// XX + DiagonalRidge (XX d x d, symmetric: column- and row-major alike).
std::vector<double> RegularizedSystem(const std::vector<double>& xx,
                                      std::span<const double> added) {
  std::vector<double> system = xx;
  for (std::size_t j = 0; j < added.size(); ++j) {
    system[j * added.size() + j] += added[j];
  }
  return system;
}

}  // namespace

OnlineRidge::OnlineRidge(std::size_t dim, std::size_t num_targets, double ridge,
                         double forgetting, double relative_ridge)
    : ridge_(ridge),
      forgetting_(forgetting),
      relative_ridge_(relative_ridge),
      x_mean_(dim, 0.0),
      y_mean_(num_targets, 0.0),
      xx_(dim * dim, 0.0),
      xy_(dim * num_targets, 0.0),
      yy_(num_targets, 0.0),
      slope_(dim * num_targets, 0.0),
      residual_squares_(num_targets, 0.0) {
  UpdateFit();
}

void OnlineRidge::Add(std::span<const double> x, std::span<const double> y) {
  const auto d = static_cast<Eigen::Index>(dim());
  const auto m = static_cast<Eigen::Index>(num_targets());
  VectorMap x_mean(x_mean_.data(), d);
  VectorMap y_mean(y_mean_.data(), m);
  MatrixMap xx(xx_.data(), d, d);
  MatrixMap xy(xy_.data(), d, m);
  VectorMap yy(yy_.data(), m);
  // W' = f W + 1; with dx = x - mean (before), the centred sums gain
  // (1 - 1/W') dx dy^T after fading (West's update with unit weight).
  weight_ = forgetting_ * weight_ + 1.0;
  const Eigen::VectorXd dx = ConstVectorMap(x.data(), d) - x_mean;
  const Eigen::VectorXd dy = ConstVectorMap(y.data(), m) - y_mean;
  const double gain = 1.0 - 1.0 / weight_;
  if (forgetting_ != 1.0) {
    xx *= forgetting_;
    xy *= forgetting_;
    yy *= forgetting_;
  }
  xx.noalias() += gain * dx * dx.transpose();
  xy.noalias() += gain * dx * dy.transpose();
  yy.array() += gain * dy.array().square();
  x_mean += dx / weight_;
  y_mean += dy / weight_;
  Solve();
  UpdateFit();
}

void OnlineRidge::UpdateFit() {
  const auto d = static_cast<Eigen::Index>(dim());
  const ConstVectorMap x_mean(x_mean_.data(), d);
  // Scratch reused across samples (each sample assigns once).
  thread_local std::vector<double> intercepts;
  intercepts.resize(num_targets());
  for (std::size_t t = 0; t < num_targets(); ++t) {
    intercepts[t] =
        y_mean_[t] - ConstVectorMap(slope_.data() + t * dim(), d).dot(x_mean);
  }
  fit_.Assign(intercepts, slope_);
}

void OnlineRidge::DensityDirection(std::span<const double> x,
                                   std::span<double> out) const {
  const auto d = static_cast<Eigen::Index>(dim());
  VectorMap direction(out.data(), d);
  direction.setZero();
  if (weight_ <= 1.0) return;
  const std::vector<double> system = RegularizedSystem(
      xx_, DiagonalRidge(xx_, dim(), weight_, ridge_, relative_ridge_));
  const Eigen::LLT<Eigen::MatrixXd> llt(ConstMatrixMap(system.data(), d, d));
  if (llt.info() != Eigen::Success) return;
  // -Sigma_x^{-1} (x - mu) = -W (XX + ...)^{-1} (x - mu).
  const Eigen::VectorXd centred =
      ConstVectorMap(x.data(), d) - ConstVectorMap(x_mean_.data(), d);
  direction = -weight_ * llt.solve(centred);
  if (!direction.allFinite()) direction.setZero();
}

void OnlineRidge::Solve() {
  const std::size_t d = dim();
  const std::size_t m = num_targets();
  // (XX + diag(added)) B = XY by SmallCholesky, which at d around 20 costs
  // a fraction of Eigen's LLT; B row-major (d x m) while solved.
  const std::vector<double> added =
      DiagonalRidge(xx_, d, weight_, ridge_, relative_ridge_);
  // Scratch reused across samples (each sample solves once).
  thread_local SmallCholesky cholesky;
  thread_local std::vector<double> solution;
  if (!cholesky.Factor(RegularizedSystem(xx_, added), d)) {
    return;  // keeps the last solution
  }
  solution.resize(d * m);
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t t = 0; t < m; ++t) solution[j * m + t] = xy_[t * d + j];
  }
  cholesky.Solve(solution, m);
  if (!std::all_of(solution.begin(), solution.end(),
                   [](double b) { return std::isfinite(b); })) {
    return;
  }
  // Residual sum of squares per target, yy - 2 b^T xy + b^T XX b, with
  // XX b = xy - added * b (the system solved): yy - b^T xy - sum_j added_j
  // b_j^2, in O(d) (the local linear fits' identity, LocalLinearEquations).
  for (std::size_t t = 0; t < m; ++t) {
    double explained = 0.0;
    double penalty = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      const double b = solution[j * m + t];
      slope_[t * d + j] = b;
      explained += b * xy_[t * d + j];
      penalty += added[j] * b * b;
    }
    residual_squares_[t] = std::max(0.0, yy_[t] - explained - penalty);
  }
}

void OnlineRidge::Predict(std::span<const double> x,
                          std::span<double> out) const {
  // Every target at once, a target a vector lane: it runs once per
  // neighbour of every prediction with a base.
  fit_.Evaluate(x, out);
}

void OnlineRidge::Residual(std::span<const double> x, std::span<const double> y,
                           std::span<double> out) const {
  Predict(x, out);
  for (std::size_t t = 0; t < out.size(); ++t) out[t] = y[t] - out[t];
}

double OnlineRidge::ResidualScale(std::size_t t) const {
  if (weight_ <= 1.0) return 0.0;
  return std::sqrt(residual_squares_[t] / weight_);
}

void OnlineRidge::Save(ByteWriter& out) const {
  out.U64(dim());
  out.U64(num_targets());
  out.Double(ridge_);
  out.Double(forgetting_);
  out.Double(weight_);
  for (const std::vector<double>* part :
       {&x_mean_, &y_mean_, &xx_, &xy_, &yy_, &slope_, &residual_squares_}) {
    out.RawDoubles(*part);
  }
}

bool OnlineRidge::Load(ByteReader& in) {
  if (in.U64() != dim() || in.U64() != num_targets()) return false;
  ridge_ = in.Double();
  forgetting_ = in.Double();
  weight_ = in.Double();
  for (std::vector<double>* part :
       {&x_mean_, &y_mean_, &xx_, &xy_, &yy_, &slope_, &residual_squares_}) {
    in.RawDoubles(*part);
  }
  if (!in.ok()) return false;
  UpdateFit();
  return true;
}

}  // namespace streamreg
