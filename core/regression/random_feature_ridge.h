#ifndef STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_RIDGE_H_
#define STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_RIDGE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/regression/random_feature_predictor.h"
#include "core/regression/random_feature_sums.h"

namespace streamreg {

// How a saved ridge holds what it learned: model states before version 12
// saved the square root of P that Potter's update kept; later ones the
// sums and the factor (RandomFeatureRidge).
enum class RidgeFormat { kSquareRoot, kSums };

// Ridge regression of m targets on random Fourier features of the inputs
// and on the inputs themselves, learned from a stream: the sparse-spectrum
// Gaussian process robotics runs online (I-SSGPR: Gijsberts & Metta,
// Neural Networks 2013; the features: Rahimi & Recht, NIPS 2007;
// Lázaro-Gredilla et al., JMLR 2010), with a linear part, so that it
// extrapolates a trend and bends where the data does (docs/estimators.md,
// "Random-feature ridge").
//
// The features of an input z (in the coordinates the caller gives: the
// model's metric), with F = 1 + d + 2D:
//   phi(z) = [1, z_1..z_d, cos(w_i . z / l) / sqrt(D), sin(w_i . z / l) /
//            sqrt(D) for i = 1..D],
// the w_i drawn from N(0, I) by `seed` (RandomFeaturePredictor), so that
// phi(z) . phi(z') over the last 2D approximates the Gaussian kernel
// exp(-|z - z'|^2 / (2 l^2)). After n samples, with weights
// v_i = forgetting^(n - i), the information matrix and the cross sums are
//   A = sum_i v_i phi_i phi_i^T + forgetting^n diag(r),
//   B = sum_i v_i phi_i y_i^T,
// r_j = intercept_ridge, linear_ridge or ridge by feature; Add keeps them
// (RandomFeatureSums: F^2 / 2 multiply-adds a sample, by blocks of
// samples at matrix-product speed), and Solve gives the weights
// W = A^-1 B — exactly the minimizer of
//   sum_i v_i |y_i - W^T phi(z_i)|^2 + forgetting^n sum_j r_j |W_j|^2 —
// by a Cholesky factorization A = L L^T (F^3 / 3). The weights in use are
// those of the last Solve: the caller chooses when (a model's
// random-feature base solves when its cached residuals are renewed, which
// is all its predictions use). The factor comes with them: the
// prediction variance relative to the noise's, phi^T A^-1 phi =
// |L^-1 phi|^2, costs a triangular solve (F^2 / 2).
class RandomFeatureRidge {
 public:
  struct Options {
    std::size_t num_frequencies = 64;  // D
    double lengthscale = 1.0;          // l
    double ridge = 0.1;                // on the 2D random features
    double linear_ridge = 1.0;         // on the d linear weights
    double intercept_ridge = 1e-6;     // on the intercept
    double forgetting = 1.0;
    std::uint64_t seed = 0;
  };

  RandomFeatureRidge(std::size_t dim, std::size_t num_targets, Options options);

  // The ridge over the samples `sums` holds, solved; its noise estimate
  // starts from the in-sample residuals. `options` must name the map the
  // sums were made with (whose frequencies it takes).
  static RandomFeatureRidge FromSums(const RandomFeatureSums& sums,
                                     Options options);

  void Add(std::span<const double> z, std::span<const double> y);
  // The same for z's features phi, already computed (Features).
  void AddFeatures(std::span<const double> phi, std::span<const double> y);
  // The weights (and their factor) over every sample added (none to do if
  // none was added since the last). False, and the weights as they were,
  // if A is not numerically positive definite (a vanishing ridge under
  // forgetting).
  bool Solve();

  std::size_t dim() const { return predictor_.dim(); }
  std::size_t num_targets() const { return predictor_.num_targets(); }
  std::size_t num_features() const { return predictor_.num_features(); }
  const Options& options() const { return options_; }
  // The samples' total weight (their count when forgetting = 1), and the
  // count when the weights in use were solved.
  double weight() const { return sums_.weight(); }
  std::size_t count() const { return sums_.count(); }
  std::size_t solved_at() const { return solved_at_; }

  // The fit at z under the weights of the last Solve, every target (0
  // before the first).
  void Predict(std::span<const double> z, std::span<double> out) const {
    predictor_.Predict(z, out);
  }
  // The feature map, the weights and their factor (what predicting, with
  // the variance or without, needs); a copy shares the map and the factor.
  const RandomFeaturePredictor& predictor() const { return predictor_; }
  // phi(z)^T A^-1 phi(z) under A as of the last Solve: the variance of the
  // fit at z in units of the noise variance (the posterior variance of a
  // Bayesian linear regression with this ridge as its prior); O(F^2).
  double RelativeVariance(std::span<const double> z) const;
  // Target t's noise variance as the samples estimate it: the mean square
  // of the errors of the weights in use on each sample before it was
  // added, over the samples since the Solve before last (so at least one
  // whole interval between solves). Those weights had not seen the
  // sample, so it is the noise's variance plus the fit's own error at new
  // inputs: an upper estimate, which the fit's part leaves as the samples
  // outnumber the features. 0 before the first sample.
  double NoiseVariance(std::size_t t) const;

  // The features of z (F of them), in the order above.
  void Features(std::span<const double> z, std::span<double> out) const {
    predictor_.Features(z, out);
  }

  // The exact state, for snapshots; Load fails on other dimensions or
  // options. A state in the square-root format is converted: A = P^-1,
  // B = A W, the weights and their factor as of the last sample.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in, RidgeFormat format = RidgeFormat::kSums);
  // A saved ridge with the options it was saved with (nothing for a
  // malformed one).
  static std::optional<RandomFeatureRidge> Read(
      ByteReader& in, RidgeFormat format = RidgeFormat::kSums);

  // The Cholesky factor of A = (S S^T)^-1 for a square root S of P
  // (column-major F x F): what the square-root format's S becomes.
  static std::vector<double> FactorFromRoot(std::span<const double> root,
                                            std::size_t num_features);

 private:
  // Load's part after the dimensions and options.
  bool LoadState(ByteReader& in, RidgeFormat format);
  bool LoadSquareRootState(ByteReader& in);
  // r_j for feature j.
  double RidgeOf(std::size_t feature) const;
  // L over no sample: diag(sqrt(r)).
  std::vector<double> InitialFactor() const;

  Options options_;
  RandomFeatureSums sums_;
  // The frequencies, and W and L as of the last Solve.
  RandomFeaturePredictor predictor_;
  std::size_t solved_at_ = 0;
  // Per target, the squared errors (see NoiseVariance) since the last
  // Solve and in the interval before it, and their counts.
  std::vector<double> noise_now_;
  std::vector<double> noise_before_;
  double noise_count_now_ = 0.0;
  double noise_count_before_ = 0.0;
  std::vector<double> phi_;  // scratch
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_RIDGE_H_
