#ifndef STREAMREG_CORE_METRIC_GRADIENT_ESTIMATOR_H_
#define STREAMREG_CORE_METRIC_GRADIENT_ESTIMATOR_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/regression/kernel.h"
#include "core/regression/local_linear_equations.h"

namespace streamreg {

// The finite-difference gradient estimate of both papers at one point x
// (Kpotufe & Boularias 2012 §3, Trivedi et al. 2014 §3.1):
//   Delta_{t,i} f_{n,h}(x) = (f_{n,h}(x + t e_i) - f_{n,h}(x - t e_i)) / 2t
// for every coordinate i and every target, with f_{n,h} the kernel
// estimate (GW eq. 1) in standardized Euclidean coordinates, counted only
// under the event A_{n,i}(x): both balls B(x +- t e_i, h) contain samples
// (the practical form of A_{n,i} both papers use in their experiments).
struct GradientEstimate {
  std::size_t dim = 0;
  std::size_t num_targets = 0;
  // delta[i * num_targets + t]: Delta_{t,i} for target t (0 where !counted).
  std::vector<double> delta;
  // counted[i] = 1{A_{n,i}(x)}.
  std::vector<char> counted;
};

// Which gradient estimate a GradientEstimator makes (docs/estimators.md,
// "Gradient estimate"):
//  - kFiniteDifferences: both papers' Delta_{t,i} f_{n,h} above, counted
//    under A_{n,i};
//  - kLocalLinear: the slope b of the least-squares plane
//    (a, b) = argmin sum_j (Y_j - a - b^T (X_j - x))^2 + lambda |b|^2
//    over the samples within h + t of x (the samples the finite differences
//    draw on), every coordinate counted once two samples are there; the
//    outer product of these slopes is Xia et al.'s OPG estimate of the
//    EGOP, which Trivedi et al. §3 allow ("any gradient estimator").
enum class GradientEstimatorKind { kFiniteDifferences, kLocalLinear };

// finite_differences, local_linear.
absl::string_view GradientEstimatorKindName(GradientEstimatorKind kind);
absl::StatusOr<GradientEstimatorKind> ParseGradientEstimatorKind(
    absl::string_view name);

// The ridge lambda of kLocalLinear on the slope, in standardized
// coordinates: the local linear regressor's default.
inline constexpr double kGradientSlopeRidge = 1.0;

// Computes GradientEstimate at x from the samples near it. All balls
// B(x +- t e_i, h) lie inside B(x, h + t), so one range search of radius
// h + t around x finds every sample any of the 2d estimates uses; each
// sample's squared distance to a shifted point then costs O(1):
//   |x + s t e_i - X|^2 = |x - X|^2 + 2 s t (x_i - X_i) + t^2.
// That is 2d kernel estimates for the price of one search.
//
// The sums are formed coordinate by coordinate over all the samples added
// (Finish), not sample by sample: the kernel weights of one coordinate's
// two balls are computed for every sample in one branch-free pass, then
// each ball's weighted sum of the samples' target rows (padded to a multiple
// of four, with a 1 for the total weight) runs with its accumulators in
// registers. Every sum still adds its terms in the order the samples came,
// so the estimate is the same, bit for bit, as adding each sample to each
// ball in turn (a zero weight adds an exact zero).
//
// kLocalLinear keeps the same samples and solves the (d + 1)^2 normal
// equations by Cholesky in Finish, for all targets at once.
class GradientEstimator {
 public:
  GradientEstimator(
      std::size_t dim, std::size_t num_targets,
      GradientEstimatorKind kind = GradientEstimatorKind::kFiniteDifferences,
      double slope_ridge = kGradientSlopeRidge);

  // Starts an estimate at x with bandwidth h and step t.
  void Begin(std::span<const double> x, Kernel kernel, double h, double t);
  // Adds one sample (coordinates and targets) within h + t of x. Samples
  // farther away are allowed and contribute nothing.
  void Add(const double* point, const double* targets);
  // Finishes the estimate begun last.
  void Finish(GradientEstimate* out);

 private:
  // The kernel weights of coordinate i's two balls for every sample kept.
  template <Kernel kKernel>
  void BallWeights(std::size_t i);
  void BallWeights(std::size_t i);
  void FinishFiniteDifferences(GradientEstimate* out);
  void FinishLocalLinear(GradientEstimate* out);

  std::size_t dim_;
  std::size_t num_targets_;
  GradientEstimatorKind kind_;
  double slope_ridge_;
  // Targets, the 1 of the weight, zero padding: a multiple of 4.
  std::size_t row_width_;
  Kernel kernel_ = Kernel::kBox;
  double inverse_h_squared_ = 1.0;
  double t_ = 0.0;
  double reach_ = 0.0;  // h + t
  std::vector<double> x_;
  // Per sample kept (one that some ball may hold), in the order added:
  // x - X (dim_ each), |x - X|^2 + t^2, and the target row.
  std::vector<double> differences_;
  std::vector<double> bases_;
  std::vector<double> rows_;
  // One coordinate's ball weights per sample: side +t and side -t.
  std::vector<double> plus_weights_;
  std::vector<double> minus_weights_;
  // sums_[(2 i + side) * row_width_ + k], side 0 = +t, 1 = -t; entry
  // num_targets_ of a ball's row is its total weight.
  std::vector<double> sums_;
  // The local linear fit of FinishLocalLinear.
  LocalLinearEquations system_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_GRADIENT_ESTIMATOR_H_
