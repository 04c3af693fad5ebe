#ifndef STREAMREG_TESTS_SUPPORT_LOCAL_LINEAR_REFERENCE_H_
#define STREAMREG_TESTS_SUPPORT_LOCAL_LINEAR_REFERENCE_H_

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "Eigen/Dense"

namespace streamreg {

// The local linear fit at offset 0 written from its definition, by a route
// independent of the normal equations the regressor solves: the
// least-squares solution of the augmented system
//   [1 offsets; 0 sqrt(ridge) I] theta = [y; 0]
// by Householder QR. value = the intercept, spread = the root mean squared
// residual over the k samples.
struct LocalLinearReference {
  double value;
  double spread;
};

// The augmented system of LocalLinearByQr and its solution theta =
// (intercept, slope).
struct LocalLinearSystem {
  Eigen::MatrixXd a;
  Eigen::VectorXd b;
  Eigen::VectorXd theta;
};

inline LocalLinearSystem LocalLinearSystemByQr(
    const std::vector<std::vector<double>>& offsets,
    const std::vector<double>& y, double ridge) {
  const std::size_t k = y.size();
  const std::size_t d = offsets.empty() ? 0 : offsets[0].size();
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(k + d, d + 1);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(k + d);
  for (std::size_t j = 0; j < k; ++j) {
    a(j, 0) = 1.0;
    for (std::size_t i = 0; i < d; ++i) a(j, i + 1) = offsets[j][i];
    b(j) = y[j];
  }
  for (std::size_t i = 0; i < d; ++i) a(k + i, i + 1) = std::sqrt(ridge);
  Eigen::VectorXd theta = a.householderQr().solve(b);
  return {std::move(a), std::move(b), std::move(theta)};
}

inline LocalLinearReference LocalLinearByQr(
    const std::vector<std::vector<double>>& offsets,
    const std::vector<double>& y, double ridge) {
  const LocalLinearSystem system = LocalLinearSystemByQr(offsets, y, ridge);
  const Eigen::VectorXd residual =
      (system.a * system.theta - system.b).head(y.size());
  return {system.theta(0),
          std::sqrt(residual.squaredNorm() / static_cast<double>(y.size()))};
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_LOCAL_LINEAR_REFERENCE_H_
