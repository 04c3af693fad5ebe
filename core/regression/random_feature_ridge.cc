#include "core/regression/random_feature_ridge.h"

#include <cmath>
#include <numbers>
#include <random>

#include "Eigen/Core"

namespace streamreg {
namespace {

using VectorMap = Eigen::Map<Eigen::VectorXd>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;
using MatrixMap = Eigen::Map<Eigen::MatrixXd>;
using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXd>;
using RowMajorConstMap =
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                   Eigen::RowMajor>>;

// A uniform double in (0, 1) from 53 random bits.
double OpenUniform(std::mt19937_64& bits) {
  return (static_cast<double>(bits() >> 11) + 0.5) * 0x1p-53;
}

// Standard normal draws by Box–Muller from std::mt19937_64, whose output
// the standard fixes (std::normal_distribution's is the library's own).
std::vector<double> StandardNormals(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 bits(seed);
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(OpenUniform(bits)));
    const double angle = 2.0 * std::numbers::pi * OpenUniform(bits);
    out[i] = radius * std::cos(angle);
    if (i + 1 < count) out[i + 1] = radius * std::sin(angle);
  }
  return out;
}

}  // namespace

RandomFeatureRidge::RandomFeatureRidge(std::size_t dim, std::size_t num_targets,
                                       Options options)
    : dim_(dim),
      num_targets_(num_targets),
      frequencies_(options.num_frequencies),
      options_(options),
      frequency_(StandardNormals(frequencies_ * dim, options.seed)),
      root_(num_features() * num_features(), 0.0),
      weights_(num_features() * num_targets, 0.0),
      noise_sums_(num_targets, 0.0) {
  for (double& w : frequency_) w /= options.lengthscale;
  // P before any sample: diag(1 / r), so S = diag(1 / sqrt(r)).
  const std::size_t f = num_features();
  for (std::size_t j = 0; j < f; ++j) {
    const double ridge = j == 0         ? options.intercept_ridge
                         : j < 1 + dim_ ? options.linear_ridge
                                        : options.ridge;
    root_[j * f + j] = 1.0 / std::sqrt(ridge);
  }
}

void RandomFeatureRidge::Features(std::span<const double> z,
                                  std::span<double> out) const {
  const auto d = static_cast<Eigen::Index>(dim_);
  const auto count = static_cast<Eigen::Index>(frequencies_);
  out[0] = 1.0;
  for (std::size_t j = 0; j < dim_; ++j) out[1 + j] = z[j];
  if (frequencies_ == 0) return;
  const Eigen::VectorXd angles = RowMajorConstMap(frequency_.data(), count, d) *
                                 ConstVectorMap(z.data(), d);
  const double scale = 1.0 / std::sqrt(static_cast<double>(frequencies_));
  double* cosines = out.data() + 1 + dim_;
  double* sines = cosines + frequencies_;
  for (std::size_t i = 0; i < frequencies_; ++i) {
    const auto index = static_cast<Eigen::Index>(i);
    cosines[i] = scale * std::cos(angles[index]);
    sines[i] = scale * std::sin(angles[index]);
  }
}

void RandomFeatureRidge::Add(std::span<const double> z,
                             std::span<const double> y) {
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(num_targets_);
  Eigen::VectorXd phi(f);
  Features(z, {phi.data(), f_size});
  MatrixMap root(root_.data(), f, f);
  MatrixMap weights(weights_.data(), f, m);
  const double forgetting = options_.forgetting;
  // P / forgetting: the old information fades (S / sqrt(forgetting)).
  if (forgetting != 1.0) root *= 1.0 / std::sqrt(forgetting);
  // Potter's update: with u = S^T phi and a = 1 + |u|^2, P' = P - P phi
  // phi^T P / a = S (I - u u^T / a) S^T = S' S'^T for S' = S - g (S u)
  // u^T / a, g = 1 / (1 + 1 / sqrt(a)); the gain P' phi = S u / a.
  const Eigen::VectorXd u = root.transpose() * phi;
  const double a = 1.0 + u.squaredNorm();
  const Eigen::VectorXd gain = root * u / a;
  const double g = 1.0 / (1.0 + 1.0 / std::sqrt(a));
  root.noalias() -= (g * gain) * u.transpose();
  // The prequential errors, then W' = W + gain e^T.
  const Eigen::VectorXd error =
      ConstVectorMap(y.data(), m) - weights.transpose() * phi;
  weights.noalias() += gain * error.transpose();
  weight_ = forgetting * weight_ + 1.0;
  for (std::size_t t = 0; t < num_targets_; ++t) {
    const double e = error[static_cast<Eigen::Index>(t)];
    noise_sums_[t] = forgetting * noise_sums_[t] + e * e / a;
  }
}

void RandomFeatureRidge::Predict(std::span<const double> z,
                                 std::span<double> out) const {
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(num_targets_);
  Eigen::VectorXd phi(f);
  Features(z, {phi.data(), f_size});
  VectorMap(out.data(), m).noalias() =
      ConstMatrixMap(weights_.data(), f, m).transpose() * phi;
}

double RandomFeatureRidge::RelativeVariance(std::span<const double> z) const {
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  Eigen::VectorXd phi(f);
  Features(z, {phi.data(), f_size});
  return (ConstMatrixMap(root_.data(), f, f).transpose() * phi).squaredNorm();
}

double RandomFeatureRidge::NoiseVariance(std::size_t t) const {
  return weight_ > 0.0 ? noise_sums_[t] / weight_ : 0.0;
}

void RandomFeatureRidge::Save(ByteWriter& out) const {
  out.U64(dim_);
  out.U64(num_targets_);
  out.U64(frequencies_);
  out.Double(options_.lengthscale);
  out.Double(options_.ridge);
  out.Double(options_.linear_ridge);
  out.Double(options_.intercept_ridge);
  out.Double(options_.forgetting);
  out.U64(options_.seed);
  out.Double(weight_);
  out.RawDoubles(frequency_);
  out.RawDoubles(root_);
  out.RawDoubles(weights_);
  out.RawDoubles(noise_sums_);
}

bool RandomFeatureRidge::Load(ByteReader& in) {
  const bool same =
      in.U64() == dim_ && in.U64() == num_targets_ &&
      in.U64() == frequencies_ && in.Double() == options_.lengthscale &&
      in.Double() == options_.ridge && in.Double() == options_.linear_ridge &&
      in.Double() == options_.intercept_ridge &&
      in.Double() == options_.forgetting && in.U64() == options_.seed;
  if (!same) return false;
  weight_ = in.Double();
  in.RawDoubles(frequency_);
  in.RawDoubles(root_);
  in.RawDoubles(weights_);
  in.RawDoubles(noise_sums_);
  return in.ok();
}

}  // namespace streamreg
