#include "core/regression/random_feature_ridge.h"

#include <cmath>

#include "Eigen/Cholesky"
#include "Eigen/Core"

namespace streamreg {
namespace {

using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;
using MatrixMap = Eigen::Map<Eigen::MatrixXd>;
using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXd>;

}  // namespace

RandomFeatureRidge::RandomFeatureRidge(std::size_t dim, std::size_t num_targets,
                                       Options options)
    : options_(options),
      predictor_(dim, num_targets, options.num_frequencies, options.lengthscale,
                 options.seed),
      root_(predictor_.num_features() * predictor_.num_features(), 0.0),
      noise_sums_(num_targets, 0.0) {
  // P before any sample: diag(1 / r), so S = diag(1 / sqrt(r)).
  const std::size_t f = num_features();
  for (std::size_t j = 0; j < f; ++j) {
    const double ridge = j == 0     ? options.intercept_ridge
                         : j <= dim ? options.linear_ridge
                                    : options.ridge;
    root_[j * f + j] = 1.0 / std::sqrt(ridge);
  }
}

RandomFeatureRidge RandomFeatureRidge::FromSums(const RandomFeatureSums& sums,
                                                Options options) {
  const RandomFeaturePredictor& map = sums.map();
  RandomFeatureRidge ridge(map.dim(), map.num_targets(), options);
  ridge.predictor_.SetFrequencies(
      {map.frequencies().begin(), map.frequencies().end()});
  const std::size_t f_size = ridge.num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(map.num_targets());
  const Eigen::MatrixXd gram =
      ConstMatrixMap(sums.gram().data(), f, f).selfadjointView<Eigen::Lower>();
  const ConstMatrixMap cross(sums.cross().data(), f, m);
  // The penalty, faded as Add fades it: its S starts at diag(1 / sqrt(r)).
  const double fade =
      std::pow(options.forgetting, static_cast<double>(sums.count()));
  Eigen::MatrixXd system = gram;
  for (Eigen::Index j = 0; j < f; ++j) {
    const double root = ridge.root_[static_cast<std::size_t>(j) * f_size +
                                    static_cast<std::size_t>(j)];
    system(j, j) += fade / (root * root);
  }
  const Eigen::LLT<Eigen::MatrixXd> factor(system);
  MatrixMap weights(ridge.predictor_.weights().data(), f, m);
  weights = factor.solve(cross);
  // P = (L L^T)^-1 = S S^T with S = L^-T.
  MatrixMap(ridge.root_.data(), f, f) =
      factor.matrixU().solve(Eigen::MatrixXd::Identity(f, f));
  ridge.weight_ = sums.weight();
  for (Eigen::Index t = 0; t < m; ++t) {
    const auto w = weights.col(t);
    ridge.noise_sums_[static_cast<std::size_t>(t)] =
        sums.squares()[static_cast<std::size_t>(t)] -
        2.0 * w.dot(cross.col(t)) + w.dot(gram * w);
  }
  return ridge;
}

void RandomFeatureRidge::Add(std::span<const double> z,
                             std::span<const double> y) {
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(num_targets());
  Eigen::VectorXd phi(f);
  Features(z, {phi.data(), f_size});
  MatrixMap root(root_.data(), f, f);
  MatrixMap weights(predictor_.weights().data(), f, m);
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
  for (std::size_t t = 0; t < num_targets(); ++t) {
    const double e = error[static_cast<Eigen::Index>(t)];
    noise_sums_[t] = forgetting * noise_sums_[t] + e * e / a;
  }
}

double RandomFeatureRidge::RelativeVariance(std::span<const double> z) const {
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  Eigen::VectorXd phi(f);
  Features(z, {phi.data(), f_size});
  return (ConstMatrixMap(root_.data(), f, f).transpose() * phi).squaredNorm();
}

RandomFeaturePredictor RandomFeatureRidge::PredictorWithRoot() const {
  RandomFeaturePredictor copy = predictor_;
  copy.SetRoot(root_);
  return copy;
}

double RandomFeatureRidge::NoiseVariance(std::size_t t) const {
  return weight_ > 0.0 ? noise_sums_[t] / weight_ : 0.0;
}

void RandomFeatureRidge::Save(ByteWriter& out) const {
  out.U64(dim());
  out.U64(num_targets());
  out.U64(options_.num_frequencies);
  out.Double(options_.lengthscale);
  out.Double(options_.ridge);
  out.Double(options_.linear_ridge);
  out.Double(options_.intercept_ridge);
  out.Double(options_.forgetting);
  out.U64(options_.seed);
  out.Double(weight_);
  out.RawDoubles(predictor_.frequencies());
  out.RawDoubles(root_);
  out.RawDoubles(predictor_.weights());
  out.RawDoubles(noise_sums_);
}

bool RandomFeatureRidge::Load(ByteReader& in) {
  const bool same =
      in.U64() == dim() && in.U64() == num_targets() &&
      in.U64() == options_.num_frequencies &&
      in.Double() == options_.lengthscale && in.Double() == options_.ridge &&
      in.Double() == options_.linear_ridge &&
      in.Double() == options_.intercept_ridge &&
      in.Double() == options_.forgetting && in.U64() == options_.seed;
  return same && LoadState(in);
}

std::optional<RandomFeatureRidge> RandomFeatureRidge::Read(ByteReader& in) {
  const std::uint64_t dim = in.U64();
  const std::uint64_t num_targets = in.U64();
  Options options;
  options.num_frequencies = in.U64();
  options.lengthscale = in.Double();
  options.ridge = in.Double();
  options.linear_ridge = in.Double();
  options.intercept_ridge = in.Double();
  options.forgetting = in.Double();
  options.seed = in.U64();
  // Sizes a damaged record could make absurd are refused before any
  // allocation (the state is (1 + d + 2D)^2 doubles).
  constexpr std::uint64_t kMaxFeatures = 1 << 14;
  if (!in.ok() || num_targets == 0 || dim > kMaxFeatures ||
      options.num_frequencies > kMaxFeatures ||
      1 + dim + 2 * options.num_frequencies > kMaxFeatures ||
      num_targets > kMaxFeatures || !(options.lengthscale > 0.0)) {
    return std::nullopt;
  }
  RandomFeatureRidge ridge(dim, num_targets, options);
  if (!ridge.LoadState(in)) return std::nullopt;
  return ridge;
}

bool RandomFeatureRidge::LoadState(ByteReader& in) {
  weight_ = in.Double();
  std::vector<double> frequencies(predictor_.frequencies().size());
  in.RawDoubles(frequencies);
  predictor_.SetFrequencies(std::move(frequencies));
  in.RawDoubles(root_);
  in.RawDoubles(predictor_.weights());
  in.RawDoubles(noise_sums_);
  return in.ok();
}

}  // namespace streamreg
