#ifndef STREAMREG_CORE_REGRESSION_ONLINE_RIDGE_H_
#define STREAMREG_CORE_REGRESSION_ONLINE_RIDGE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/regression/affine_functions.h"

namespace streamreg {

// Ridge regression of m targets on d inputs, learned one sample at a time,
// with optional exponential forgetting: the linear base a model's
// regressor learns the residuals of (docs/estimators.md, "Linear base").
//
// After n samples, with weights w_i = forgetting^(n - i) summing to W, it is
// exactly the minimizer over (a, b) of
//   sum_i w_i |y_i - a - B^T x_i|^2
//     + (ridge + relative_ridge * W) * sum_j s_j^2 |B_j|^2,
// s_j^2 the weighted variance of input j: a ridge on standardized inputs
// (scikit-learn's Ridge(alpha = ridge + relative_ridge * n) on
// StandardScaler'd inputs when forgetting = 1), with an unpenalized
// intercept. `ridge` weighs like that many samples and fades as they come;
// `relative_ridge` grows with them, so a direction the inputs have barely
// moved in (its share of their correlation well under relative_ridge: a
// stream along a curve) keeps a slope near zero however many samples
// there are, instead of one fitted to its noise that extrapolates wildly. The
// weighted means and centred cross-products are updated in one pass (West 1979,
// with forgetting), and B is solved afresh after each sample (Cholesky of the d
// x d system: O(d^3 / 3 + d^2 m) per sample).
class OnlineRidge {
 public:
  OnlineRidge(std::size_t dim, std::size_t num_targets, double ridge,
              double forgetting, double relative_ridge = 0.0);

  void Add(std::span<const double> x, std::span<const double> y);

  std::size_t dim() const { return x_mean_.size(); }
  std::size_t num_targets() const { return y_mean_.size(); }
  // The sum of the weights (the count when forgetting = 1).
  double weight() const { return weight_; }

  // The fit at x, for every target (0 before the first sample; the targets'
  // mean while the inputs have not varied).
  void Predict(std::span<const double> x, std::span<double> out) const;
  // y - the fit at x.
  void Residual(std::span<const double> x, std::span<const double> y,
                std::span<double> out) const;
  // The fit is also a Gaussian model of (x, y): weighted means and
  // covariances Sigma = (centred sums) / weight. Its density's gradient
  // direction at x, -Sigma_x^{-1} (x - mu_x) (grad p(x) / p(x)), with
  // Sigma_x regularized as the slope's system is (so that B = Sigma_x^{-1}
  // Sigma_xy, the slope, is grad y under the same model): with the slope,
  // the two directions of GLML's metric (docs/estimators.md). Zero before
  // two samples; O(d^3) (a Cholesky of the d x d system).
  void DensityDirection(std::span<const double> x, std::span<double> out) const;
  // The root weighted mean squared residual of target t over the samples
  // seen (0 before two).
  double ResidualScale(std::size_t t) const;
  // B(j, t): the fit's slope of target t in input j.
  double slope(std::size_t j, std::size_t t) const {
    return slope_[t * dim() + j];
  }

  // The exact state, for snapshots; Load fails on other dimensions. The
  // relative ridge is the constructor's (a model's configuration keeps it).
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  void Solve();
  // fit_ from the means and B.
  void UpdateFit();

  double ridge_;
  double forgetting_;
  double relative_ridge_;
  double weight_ = 0.0;
  // Column-major matrices in plain vectors, so that the model's headers do
  // not carry Eigen: the weighted means, the weighted centred sums (inputs x
  // inputs, inputs x targets, each target's squares), B (d x m), and the
  // weighted sum of squared residuals per target.
  std::vector<double> x_mean_;
  std::vector<double> y_mean_;
  std::vector<double> xx_;
  std::vector<double> xy_;
  std::vector<double> yy_;
  std::vector<double> slope_;
  std::vector<double> residual_squares_;
  // The fit at x, intercept + B^T x with intercept = y_mean - B^T x_mean
  // (derived: not saved).
  AffineFunctions fit_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_ONLINE_RIDGE_H_
