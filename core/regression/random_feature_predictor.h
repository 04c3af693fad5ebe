#ifndef STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_PREDICTOR_H_
#define STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_PREDICTOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace streamreg {

// What a random-feature ridge predicts with (RandomFeatureRidge): its
// feature map and its weights, and optionally the Cholesky factor they
// were solved with, for the fit's variance. Small to copy (the frequencies
// and the factor are shared, the weights F x m), so that a model's readers
// can hold the predictor while its writer learns the next sample into the
// ridge, and take the new one in a swap.
class RandomFeaturePredictor {
 public:
  // D frequencies drawn from N(0, I) by `seed` (Box–Muller on
  // std::mt19937_64, the same on every machine), divided by `lengthscale`;
  // weights zero.
  RandomFeaturePredictor(std::size_t dim, std::size_t num_targets,
                         std::size_t num_frequencies, double lengthscale,
                         std::uint64_t seed);

  std::size_t dim() const { return dim_; }
  std::size_t num_targets() const { return num_targets_; }
  std::size_t num_frequencies() const { return frequencies_; }
  std::size_t num_features() const { return 1 + dim_ + 2 * frequencies_; }

  // phi(z) = [1, z, cos(w_i . z / l) / sqrt(D), sin(w_i . z / l) /
  // sqrt(D)] (num_features() values).
  void Features(std::span<const double> z, std::span<double> out) const;
  // W^T phi(z), every target.
  void Predict(std::span<const double> z, std::span<double> out) const;
  // W^T phi for features phi already computed (Features), every target.
  void PredictFromFeatures(std::span<const double> phi,
                           std::span<double> out) const;

  // The lower Cholesky factor L of the ridge's information matrix A = L L^T
  // (RandomFeatureRidge) these weights were solved with, F x F
  // column-major (its strict upper triangle zero), shared when copied;
  // empty unless set.
  std::span<const double> factor() const {
    return factor_ ? std::span<const double>(*factor_)
                   : std::span<const double>();
  }
  void SetFactor(std::vector<double> factor);
  // phi^T A^-1 phi = |L^-1 phi|^2 under that factor, for features phi: the
  // variance of these weights' fit at the point, in units of the noise
  // variance; one triangular solve, F^2 / 2. 0 without a factor.
  double RelativeVarianceFromFeatures(std::span<const double> phi) const;

  // W, column-major F x m (the ridge's to change).
  std::span<double> weights() { return weights_; }
  std::span<const double> weights() const { return weights_; }
  // The frequencies, D x d row-major (already divided by the lengthscale):
  // saved with a snapshot, so that a restored model needs no libm to agree.
  std::span<const double> frequencies() const { return *frequency_; }
  void SetFrequencies(std::vector<double> frequencies);

 private:
  std::size_t dim_;
  std::size_t num_targets_;
  std::size_t frequencies_;
  std::shared_ptr<const std::vector<double>> frequency_;
  std::vector<double> weights_;
  std::shared_ptr<const std::vector<double>> factor_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_PREDICTOR_H_
