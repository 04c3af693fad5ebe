#include "core/regression/random_feature_sums.h"

#include <utility>

#include "Eigen/Core"

namespace streamreg {

RandomFeatureSums::RandomFeatureSums(RandomFeaturePredictor map,
                                     double forgetting)
    : map_(std::move(map)),
      forgetting_(forgetting),
      gram_(map_.num_features() * map_.num_features(), 0.0),
      cross_(map_.num_features() * map_.num_targets(), 0.0),
      squares_(map_.num_targets(), 0.0),
      phi_(map_.num_features()) {}

void RandomFeatureSums::Add(std::span<const double> z,
                            std::span<const double> y) {
  const auto f = static_cast<Eigen::Index>(map_.num_features());
  const auto m = static_cast<Eigen::Index>(map_.num_targets());
  map_.Features(z, phi_);
  Eigen::Map<Eigen::MatrixXd> gram(gram_.data(), f, f);
  Eigen::Map<Eigen::MatrixXd> cross(cross_.data(), f, m);
  Eigen::Map<Eigen::VectorXd> squares(squares_.data(), m);
  if (forgetting_ != 1.0) {
    gram.triangularView<Eigen::Lower>() *= forgetting_;
    cross *= forgetting_;
    squares *= forgetting_;
  }
  const Eigen::Map<const Eigen::VectorXd> phi(phi_.data(), f);
  const Eigen::Map<const Eigen::VectorXd> targets(y.data(), m);
  gram.selfadjointView<Eigen::Lower>().rankUpdate(phi);
  cross.noalias() += phi * targets.transpose();
  squares.array() += targets.array().square();
  weight_ = forgetting_ * weight_ + 1.0;
  ++count_;
}

}  // namespace streamreg
