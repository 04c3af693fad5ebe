#include "core/regression/random_feature_predictor.h"

#include <cmath>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "core/regression/sin_cos.h"

namespace streamreg {
namespace {

using RowMajorConstMap =
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                   Eigen::RowMajor>>;

// A uniform double in (0, 1) from 53 random bits.
double OpenUniform(std::mt19937_64& bits) {
  return (static_cast<double>(bits() >> 11) + 0.5) * 0x1p-53;
}

// Standard normal draws by Box–Muller from std::mt19937_64, whose output
// the standard fixes (std::normal_distribution's is the library's own),
// divided by `lengthscale`.
std::vector<double> Frequencies(std::size_t count, std::uint64_t seed,
                                double lengthscale) {
  std::mt19937_64 bits(seed);
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(OpenUniform(bits)));
    const double angle = 2.0 * std::numbers::pi * OpenUniform(bits);
    out[i] = radius * std::cos(angle) / lengthscale;
    if (i + 1 < count) out[i + 1] = radius * std::sin(angle) / lengthscale;
  }
  return out;
}

}  // namespace

RandomFeaturePredictor::RandomFeaturePredictor(std::size_t dim,
                                               std::size_t num_targets,
                                               std::size_t num_frequencies,
                                               double lengthscale,
                                               std::uint64_t seed)
    : dim_(dim),
      num_targets_(num_targets),
      frequencies_(num_frequencies),
      frequency_(std::make_shared<const std::vector<double>>(
          Frequencies(num_frequencies * dim, seed, lengthscale))),
      weights_(num_features() * num_targets, 0.0) {}

void RandomFeaturePredictor::SetFrequencies(std::vector<double> frequencies) {
  frequency_ =
      std::make_shared<const std::vector<double>>(std::move(frequencies));
}

void RandomFeaturePredictor::Features(std::span<const double> z,
                                      std::span<double> out) const {
  out[0] = 1.0;
  for (std::size_t j = 0; j < dim_; ++j) out[1 + j] = z[j];
  if (frequencies_ == 0) return;
  const std::span<double> cosines = out.subspan(1 + dim_, frequencies_);
  const std::span<double> sines = out.subspan(1 + dim_ + frequencies_);
  // The angles go where their sines will (SinCos reads each first).
  Eigen::Map<Eigen::VectorXd>(sines.data(),
                              static_cast<Eigen::Index>(frequencies_))
      .noalias() = RowMajorConstMap(frequency_->data(),
                                    static_cast<Eigen::Index>(frequencies_),
                                    static_cast<Eigen::Index>(dim_)) *
                   Eigen::Map<const Eigen::VectorXd>(
                       z.data(), static_cast<Eigen::Index>(dim_));
  const double scale = 1.0 / std::sqrt(static_cast<double>(frequencies_));
  SinCos(sines, scale, sines, cosines);
}

void RandomFeaturePredictor::Predict(std::span<const double> z,
                                     std::span<double> out) const {
  thread_local std::vector<double> phi;
  phi.resize(num_features());
  Features(z, phi);
  PredictFromFeatures(phi, out);
}

void RandomFeaturePredictor::PredictFromFeatures(std::span<const double> phi,
                                                 std::span<double> out) const {
  const auto f = static_cast<Eigen::Index>(num_features());
  Eigen::Map<Eigen::VectorXd>(out.data(),
                              static_cast<Eigen::Index>(num_targets_))
      .noalias() =
      Eigen::Map<const Eigen::MatrixXd>(weights_.data(), f,
                                        static_cast<Eigen::Index>(num_targets_))
          .transpose() *
      Eigen::Map<const Eigen::VectorXd>(phi.data(), f);
}

void RandomFeaturePredictor::SetFactor(std::vector<double> factor) {
  factor_ = std::make_shared<const std::vector<double>>(std::move(factor));
}

double RandomFeaturePredictor::RelativeVarianceFromFeatures(
    std::span<const double> phi) const {
  if (!factor_) return 0.0;
  const auto f = static_cast<Eigen::Index>(num_features());
  thread_local Eigen::VectorXd solved;
  solved = Eigen::Map<const Eigen::VectorXd>(phi.data(), f);
  Eigen::Map<const Eigen::MatrixXd>(factor_->data(), f, f)
      .triangularView<Eigen::Lower>()
      .solveInPlace(solved);
  return solved.squaredNorm();
}

}  // namespace streamreg
