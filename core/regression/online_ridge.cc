#include "core/regression/online_ridge.h"

#include <algorithm>
#include <cmath>

#include "Eigen/Cholesky"
#include "Eigen/Core"

namespace streamreg {
namespace {

using VectorMap = Eigen::Map<Eigen::VectorXd>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;
using MatrixMap = Eigen::Map<Eigen::MatrixXd>;
using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXd>;

// XX + (ridge + relative_ridge W) diag(XX) / W (XX d x d, column-major);
// an input that has not varied gets a unit diagonal, which keeps the system
// definite (its row of XX and XY is zero, so B_j = 0).
Eigen::MatrixXd RegularizedSystem(const std::vector<double>& xx, std::size_t d,
                                  double weight, double ridge,
                                  double relative_ridge) {
  const auto size = static_cast<Eigen::Index>(d);
  Eigen::MatrixXd system = ConstMatrixMap(xx.data(), size, size);
  const double alpha = ridge + relative_ridge * weight;
  for (Eigen::Index j = 0; j < size; ++j) {
    const double variance = system(j, j) / weight;
    system(j, j) += variance > 0.0 ? alpha * variance : 1.0;
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
      residual_squares_(num_targets, 0.0),
      intercept_(num_targets, 0.0) {}

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
  UpdateIntercepts();
}

void OnlineRidge::UpdateIntercepts() {
  const auto d = static_cast<Eigen::Index>(dim());
  const ConstVectorMap x_mean(x_mean_.data(), d);
  for (std::size_t t = 0; t < num_targets(); ++t) {
    intercept_[t] =
        y_mean_[t] - ConstVectorMap(slope_.data() + t * dim(), d).dot(x_mean);
  }
}

void OnlineRidge::DensityDirection(std::span<const double> x,
                                   std::span<double> out) const {
  const auto d = static_cast<Eigen::Index>(dim());
  VectorMap direction(out.data(), d);
  direction.setZero();
  if (weight_ <= 1.0) return;
  const Eigen::LLT<Eigen::MatrixXd> llt(
      RegularizedSystem(xx_, dim(), weight_, ridge_, relative_ridge_));
  if (llt.info() != Eigen::Success) return;
  // -Sigma_x^{-1} (x - mu) = -W (XX + ...)^{-1} (x - mu).
  const Eigen::VectorXd centred =
      ConstVectorMap(x.data(), d) - ConstVectorMap(x_mean_.data(), d);
  direction = -weight_ * llt.solve(centred);
  if (!direction.allFinite()) direction.setZero();
}

void OnlineRidge::Solve() {
  const auto d = static_cast<Eigen::Index>(dim());
  const auto m = static_cast<Eigen::Index>(num_targets());
  const ConstMatrixMap xx(xx_.data(), d, d);
  const ConstMatrixMap xy(xy_.data(), d, m);
  // (XX + (ridge + relative_ridge W) diag(XX) / W) B = XY.
  const Eigen::LLT<Eigen::MatrixXd> llt(
      RegularizedSystem(xx_, dim(), weight_, ridge_, relative_ridge_));
  if (llt.info() != Eigen::Success) return;  // keeps the last solution
  const Eigen::MatrixXd slope = llt.solve(xy);
  if (!slope.allFinite()) return;
  MatrixMap(slope_.data(), d, m) = slope;
  // Residual sum of squares per target: yy - 2 b^T xy + b^T XX b.
  const Eigen::MatrixXd xx_slope = xx * slope;
  for (Eigen::Index t = 0; t < m; ++t) {
    residual_squares_[t] =
        std::max(0.0, yy_[t] - 2.0 * slope.col(t).dot(xy.col(t)) +
                          slope.col(t).dot(xx_slope.col(t)));
  }
}

void OnlineRidge::Predict(std::span<const double> x,
                          std::span<double> out) const {
  // Per target a dot product over a contiguous column of B, vectorized: it
  // runs once per neighbour of every prediction with a base.
  const auto d = static_cast<Eigen::Index>(dim());
  const ConstVectorMap point(x.data(), d);
  for (std::size_t t = 0; t < num_targets(); ++t) {
    out[t] =
        intercept_[t] + ConstVectorMap(slope_.data() + t * dim(), d).dot(point);
  }
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
  UpdateIntercepts();
  return true;
}

}  // namespace streamreg
