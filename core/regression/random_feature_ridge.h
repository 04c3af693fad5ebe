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

// Ridge regression of m targets on random Fourier features of the inputs
// and on the inputs themselves, learned one sample at a time by exact
// recursive least squares: the sparse-spectrum Gaussian process robotics
// runs online (I-SSGPR: Gijsberts & Metta, Neural Networks 2013; the
// features: Rahimi & Recht, NIPS 2007; Lázaro-Gredilla et al., JMLR 2010),
// with a linear part, so that it extrapolates a trend and bends where the
// data does (docs/estimators.md, "Random-feature ridge").
//
// The features of an input z (in the coordinates the caller gives: the
// model's metric), with F = 1 + d + 2D:
//   phi(z) = [1, z_1..z_d, cos(w_i . z / l) / sqrt(D), sin(w_i . z / l) /
//            sqrt(D) for i = 1..D],
// the w_i drawn from N(0, I) by `seed` (RandomFeaturePredictor), so that
// phi(z) . phi(z') over the last 2D approximates the Gaussian kernel
// exp(-|z - z'|^2 / (2 l^2)). After n samples, with weights
// v_i = forgetting^(n - i), the weights W (F x m) are exactly the
// minimizer of
//   sum_i v_i |y_i - W^T phi(z_i)|^2 + forgetting^n sum_j r_j |W_j|^2,
// r_j = intercept_ridge, linear_ridge or ridge by feature. It is kept by
// Potter's square-root RLS: P = (sum_i v_i phi_i phi_i^T + forgetting^n
// diag(r))^-1 = S S^T, updated by a rank-1 step per sample (3 F^2
// multiply-adds), never inverted or solved; the prediction variance
// relative to the noise's, phi^T P phi = |S^T phi|^2, comes with it.
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

  // The ridge over the samples `sums` holds, solved in one batch: the
  // minimizer Add reaches over them in order, to rounding (a Cholesky
  // factor of the system gives S, O(F^3)); its noise estimate starts from
  // the in-sample residuals. `options` must name the map the sums were
  // made with (whose frequencies it takes).
  static RandomFeatureRidge FromSums(const RandomFeatureSums& sums,
                                     Options options);

  void Add(std::span<const double> z, std::span<const double> y);

  std::size_t dim() const { return predictor_.dim(); }
  std::size_t num_targets() const { return predictor_.num_targets(); }
  std::size_t num_features() const { return predictor_.num_features(); }
  const Options& options() const { return options_; }
  // The samples' total weight (their count when forgetting = 1).
  double weight() const { return weight_; }

  // The fit at z, for every target (0 before the first sample).
  void Predict(std::span<const double> z, std::span<double> out) const {
    predictor_.Predict(z, out);
  }
  // The feature map and the weights alone (what predicting needs).
  const RandomFeaturePredictor& predictor() const { return predictor_; }
  // A copy of them with a copy of the square root of P (O(F^2)): what
  // predicting with the fit's variance needs.
  RandomFeaturePredictor PredictorWithRoot() const;
  // phi(z)^T P phi(z): the variance of the fit at z in units of the noise
  // variance (the posterior variance of a Bayesian linear regression
  // with this ridge as its prior); O(F^2).
  double RelativeVariance(std::span<const double> z) const;
  // Target t's noise variance as the samples estimate it: the weighted
  // mean of e^2 / (1 + phi^T P phi) over the prequential errors e (each
  // sample's error before it was learned, whose variance is the noise's
  // times that factor); 0 before the first sample.
  double NoiseVariance(std::size_t t) const;

  // The features of z (F of them), in the order above.
  void Features(std::span<const double> z, std::span<double> out) const {
    predictor_.Features(z, out);
  }

  // The exact state, for snapshots; Load fails on other dimensions or
  // options.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);
  // A saved ridge with the options it was saved with (nothing for a
  // malformed one).
  static std::optional<RandomFeatureRidge> Read(ByteReader& in);

 private:
  // Load's part after the dimensions and options.
  bool LoadState(ByteReader& in);

  Options options_;
  // The frequencies and W.
  RandomFeaturePredictor predictor_;
  double weight_ = 0.0;
  // Column-major F x F: the square root of P.
  std::vector<double> root_;
  // Per target: the weighted sum of e^2 / (1 + phi^T P phi).
  std::vector<double> noise_sums_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_RIDGE_H_
