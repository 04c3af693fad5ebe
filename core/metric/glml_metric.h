#ifndef STREAMREG_CORE_METRIC_GLML_METRIC_H_
#define STREAMREG_CORE_METRIC_GLML_METRIC_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/regression/online_ridge.h"

namespace streamreg {

// The per-query metric of Generative Local Metric Learning for kernel
// regression (Noh, Sugiyama, Kim, Park & Lee, NIPS 2017, Algorithm 1), in
// closed form. From a global Gaussian model of (x, y), at a query x:
//   grad y = Sigma_x^{-1} Sigma_xy,  grad p(x) = -p(x) Sigma_x^{-1} (x - mu_x),
// the rank-2 matrix B = grad y grad p^T + grad p grad y^T (eq. 24) has the
// eigenvectors and eigenvalues (eqs. 26-27)
//   u_{1,2} = grad p/|grad p| +- grad y/|grad y|,
//   lambda_{1,2} = (grad y . grad p +- |grad y| |grad p|) / (2 p(x)),
// lambda_1 >= 0 >= lambda_2, and the metric is |L^T (x - x')| with
//   L = [u1/|u1|  u2/|u2|  U_o] diag(sqrt(lambda_1 + g), sqrt(-lambda_2 + g),
//                                     sqrt(g), ..., sqrt(g)) / T
// (eq. 28, g the paper's gamma, U_o orthonormal, spanning the complement
// of u1 and u2), T = ((lambda_1 + g)(-lambda_2 + g) g^{d - 2})^{1/(2d)} so
// that det L = 1 (the constraint |A_NW| = 1 of eq. 23). p(x) cancels: grad
// p enters only through its direction and through lambda / p(x), so the
// density (which underflows in high dimension) is never computed.
//
// Since the columns of L's basis are orthonormal, the squared distance is
//   s0^2 |v|^2 + (s1^2 - s0^2)(e1 . v)^2 + (s2^2 - s0^2)(e2 . v)^2,
// e_k = u_k/|u_k|, with s1, s2, s0 the diagonal's entries: O(d) per
// distance, and never below s0 |v| (every eigenvalue of L L^T is s0^2).
class GlmlMetric {
 public:
  // The metric at a query from the two directions: grad y (Sigma_x^{-1}
  // Sigma_xy, d values) and the density's gradient direction
  // -Sigma_x^{-1} (x - mu_x) (d values; any positive multiple gives the
  // same metric). gamma_ratio: the paper's gamma as a fraction of
  // max(|lambda_1|, |lambda_2|) (its experiments use 1e-2). Where either
  // direction is zero (the query at the mean, or y flat) B is zero and the
  // metric is the Euclidean one.
  GlmlMetric(std::span<const double> grad_y,
             std::span<const double> density_direction, double gamma_ratio);

  std::size_t dim() const { return dim_; }
  // The eigenpairs of B / (2 p(x)) (eq. 27): lambda_1 >= 0 >= lambda_2 and
  // their unit eigenvectors (empty where B is zero).
  double lambda1() const { return lambda1_; }
  double lambda2() const { return lambda2_; }
  std::span<const double> e1() const { return e1_; }
  std::span<const double> e2() const { return e2_; }
  // L's diagonal: along e1, along e2, and the rest (each divided by T).
  double s1() const { return s1_; }
  double s2() const { return s2_; }
  double s0() const { return s0_; }
  bool euclidean() const { return euclidean_; }

  // |L^T v|^2 for a difference v = x - x'.
  double SquaredDistance(std::span<const double> v) const;
  // A factor f with |L^T v| >= f |v| for every v: s0 (the least singular
  // value of L), 1 when Euclidean.
  double LowerBoundFactor() const { return euclidean_ ? 1.0 : s0_; }

 private:
  std::size_t dim_;
  double lambda1_ = 0.0;
  double lambda2_ = 0.0;
  std::vector<double> e1_;
  std::vector<double> e2_;
  double s1_ = 1.0;
  double s2_ = 1.0;
  double s0_ = 1.0;
  bool euclidean_ = true;
};

// GLML's metric for target t at x from a global Gaussian model of (x, y)
// learned online: the online ridge's weighted means and covariances (its
// slope is grad y = Sigma_x^{-1} Sigma_xy, DensityDirection the direction
// of grad p(x)). The paper fits the Gaussian in one batch; here it follows
// the stream (with the ridge's forgetting, if any).
GlmlMetric GlmlMetricAt(const OnlineRidge& gaussian, std::span<const double> x,
                        std::size_t target, double gamma_ratio);

// The same in coordinates z = (x - c) / scale of the Gaussian's inputs (a
// model's standardized index), from the density's gradient direction at the
// query in raw inputs (OnlineRidge::DensityDirection, computed once for
// every target): both directions are gradients, so grad_z = scale * grad_x
// componentwise.
GlmlMetric GlmlMetricScaled(const OnlineRidge& gaussian,
                            std::span<const double> raw_density_direction,
                            std::span<const double> scale, std::size_t target,
                            double gamma_ratio);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_GLML_METRIC_H_
