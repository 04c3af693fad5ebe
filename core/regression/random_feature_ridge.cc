#include "core/regression/random_feature_ridge.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "Eigen/Cholesky"
#include "Eigen/Core"
#include "core/regression/lower_triangle.h"

namespace streamreg {
namespace {

using MatrixMap = Eigen::Map<Eigen::MatrixXd>;
using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXd>;

}  // namespace

RandomFeatureRidge::RandomFeatureRidge(std::size_t dim, std::size_t num_targets,
                                       Options options)
    : options_(options),
      sums_(RandomFeaturePredictor(dim, num_targets, options.num_frequencies,
                                   options.lengthscale, options.seed),
            options.forgetting),
      predictor_(sums_.map()),
      noise_now_(num_targets, 0.0),
      noise_before_(num_targets, 0.0),
      phi_(predictor_.num_features()) {
  predictor_.SetFactor(InitialFactor());
}

std::vector<double> RandomFeatureRidge::InitialFactor() const {
  // Solved over no sample: W = 0 and A = diag(r), so L = diag(sqrt(r)).
  const std::size_t f = num_features();
  std::vector<double> factor(f * f, 0.0);
  for (std::size_t j = 0; j < f; ++j) factor[j * f + j] = std::sqrt(RidgeOf(j));
  return factor;
}

double RandomFeatureRidge::RidgeOf(std::size_t feature) const {
  return feature == 0       ? options_.intercept_ridge
         : feature <= dim() ? options_.linear_ridge
                            : options_.ridge;
}

RandomFeatureRidge RandomFeatureRidge::FromSums(const RandomFeatureSums& sums,
                                                Options options) {
  const RandomFeaturePredictor& map = sums.map();
  RandomFeatureRidge ridge(map.dim(), map.num_targets(), options);
  ridge.sums_ = sums;
  // The map's frequencies, the weights and factor over no sample, then
  // over the sums' samples.
  ridge.predictor_ = sums.map();
  ridge.predictor_.SetFactor(ridge.InitialFactor());
  std::fill(ridge.predictor_.weights().begin(),
            ridge.predictor_.weights().end(), 0.0);
  ridge.Solve();
  // The noise from the in-sample residuals: sum_i v_i |y_i - W^T phi_i|^2
  // = squares - 2 W^T B + W^T G W, per target.
  const std::size_t f_size = ridge.num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  std::vector<double> lower(f_size * f_size, 0.0);
  sums.Gram(lower);
  const Eigen::MatrixXd gram =
      ConstMatrixMap(lower.data(), f, f).selfadjointView<Eigen::Lower>();
  const ConstMatrixMap cross(sums.cross().data(), f,
                             static_cast<Eigen::Index>(map.num_targets()));
  const ConstMatrixMap weights(ridge.predictor_.weights().data(), f,
                               cross.cols());
  for (Eigen::Index t = 0; t < cross.cols(); ++t) {
    const auto w = weights.col(t);
    ridge.noise_before_[static_cast<std::size_t>(t)] =
        sums.squares()[static_cast<std::size_t>(t)] -
        2.0 * w.dot(cross.col(t)) + w.dot(gram * w);
  }
  ridge.noise_count_before_ = sums.weight();
  return ridge;
}

void RandomFeatureRidge::Add(std::span<const double> z,
                             std::span<const double> y) {
  Features(z, phi_);
  AddFeatures(phi_, y);
}

void RandomFeatureRidge::AddFeatures(std::span<const double> phi,
                                     std::span<const double> y) {
  // The error of the weights in use, which have not seen the sample.
  thread_local std::vector<double> fit;
  fit.resize(num_targets());
  predictor_.PredictFromFeatures(phi, fit);
  for (std::size_t t = 0; t < num_targets(); ++t) {
    const double error = y[t] - fit[t];
    noise_now_[t] += error * error;
  }
  noise_count_now_ += 1.0;
  sums_.AddFeatures(phi, y);
}

bool RandomFeatureRidge::Solve() {
  // Nothing learned since: the weights in use are those already.
  if (sums_.count() == solved_at_) return true;
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(num_targets());
  // A in a matrix of its own, factored in place into L.
  std::vector<double> factor(f_size * f_size, 0.0);
  sums_.Gram(factor);
  // The penalty, faded with the samples.
  const double fade =
      std::pow(options_.forgetting, static_cast<double>(sums_.count()));
  for (std::size_t j = 0; j < f_size; ++j) {
    factor[j * f_size + j] += fade * RidgeOf(j);
  }
  MatrixMap system(factor.data(), f, f);
  const Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> cholesky(system);
  if (cholesky.info() != Eigen::Success) return false;
  system.triangularView<Eigen::StrictlyUpper>().setZero();
  MatrixMap(predictor_.weights().data(), f, m) =
      cholesky.solve(ConstMatrixMap(sums_.cross().data(), f, m));
  predictor_.SetFactor(std::move(factor));
  solved_at_ = sums_.count();
  noise_before_ = noise_now_;
  noise_count_before_ = noise_count_now_;
  std::fill(noise_now_.begin(), noise_now_.end(), 0.0);
  noise_count_now_ = 0.0;
  return true;
}

double RandomFeatureRidge::RelativeVariance(std::span<const double> z) const {
  thread_local std::vector<double> phi;
  phi.resize(num_features());
  Features(z, phi);
  return predictor_.RelativeVarianceFromFeatures(phi);
}

double RandomFeatureRidge::NoiseVariance(std::size_t t) const {
  const double count = noise_count_now_ + noise_count_before_;
  return count > 0.0 ? (noise_now_[t] + noise_before_[t]) / count : 0.0;
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
  out.RawDoubles(predictor_.frequencies());
  sums_.Save(out);
  out.RawDoubles(predictor_.weights());
  SaveLowerTriangle(predictor_.factor(), num_features(), out);
  out.U64(solved_at_);
  out.RawDoubles(noise_now_);
  out.RawDoubles(noise_before_);
  out.Double(noise_count_now_);
  out.Double(noise_count_before_);
}

bool RandomFeatureRidge::Load(ByteReader& in, RidgeFormat format) {
  const bool same =
      in.U64() == dim() && in.U64() == num_targets() &&
      in.U64() == options_.num_frequencies &&
      in.Double() == options_.lengthscale && in.Double() == options_.ridge &&
      in.Double() == options_.linear_ridge &&
      in.Double() == options_.intercept_ridge &&
      in.Double() == options_.forgetting && in.U64() == options_.seed;
  return same && LoadState(in, format);
}

std::optional<RandomFeatureRidge> RandomFeatureRidge::Read(ByteReader& in,
                                                           RidgeFormat format) {
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
  const std::uint64_t f = 1 + dim + 2 * options.num_frequencies;
  if (f * (f + 1) / 2 > in.remaining() / sizeof(double)) return std::nullopt;
  RandomFeatureRidge ridge(dim, num_targets, options);
  if (!ridge.LoadState(in, format)) return std::nullopt;
  return ridge;
}

bool RandomFeatureRidge::LoadState(ByteReader& in, RidgeFormat format) {
  if (format == RidgeFormat::kSquareRoot) return LoadSquareRootState(in);
  std::vector<double> frequencies(predictor_.frequencies().size());
  in.RawDoubles(frequencies);
  RandomFeaturePredictor map = sums_.map();
  map.SetFrequencies(std::move(frequencies));
  sums_ = RandomFeatureSums(map, options_.forgetting);
  predictor_ = std::move(map);
  const std::size_t f = num_features();
  std::vector<double> factor(f * f);
  if (!sums_.Load(in)) return false;
  in.RawDoubles(predictor_.weights());
  if (!in.ok() || !LoadLowerTriangle(in, f, factor)) return false;
  predictor_.SetFactor(std::move(factor));
  solved_at_ = in.U64();
  in.RawDoubles(noise_now_);
  in.RawDoubles(noise_before_);
  noise_count_now_ = in.Double();
  noise_count_before_ = in.Double();
  return in.ok() && solved_at_ <= sums_.count();
}

bool RandomFeatureRidge::LoadSquareRootState(ByteReader& in) {
  // weight, frequencies, S (F x F), W, the sums of e^2 / (1 + phi^T P phi).
  const std::size_t f_size = num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(num_targets());
  const double weight = in.Double();
  std::vector<double> frequencies(predictor_.frequencies().size());
  in.RawDoubles(frequencies);
  std::vector<double> root(f_size * f_size);
  in.RawDoubles(root);
  std::vector<double> weights(f_size * num_targets());
  in.RawDoubles(weights);
  std::vector<double> noise(num_targets());
  in.RawDoubles(noise);
  if (!in.ok() || !(weight >= 0.0)) return false;
  // The count and the penalty's fade from the weight: n, or with
  // forgetting f, (1 - f^n) / (1 - f).
  const double forgetting = options_.forgetting;
  const double fade = forgetting == 1.0 ? 1.0 : 1.0 - weight * (1 - forgetting);
  if (!(fade > 0.0 && fade <= 1.0)) return false;
  const std::size_t count = static_cast<std::size_t>(std::llround(
      forgetting == 1.0 ? weight : std::log(fade) / std::log(forgetting)));
  std::vector<double> factor = FactorFromRoot(root, f_size);
  if (factor.empty()) return false;
  const ConstMatrixMap lower(factor.data(), f, f);
  // A = L L^T; G = A - fade diag(r); B = A W.
  std::vector<double> gram(f_size * f_size);
  MatrixMap information(gram.data(), f, f);
  information.noalias() = lower * lower.transpose();
  std::vector<double> cross(f_size * num_targets());
  MatrixMap(cross.data(), f, m).noalias() =
      information * ConstMatrixMap(weights.data(), f, m);
  for (std::size_t j = 0; j < f_size; ++j) {
    gram[j * f_size + j] -= fade * RidgeOf(j);
  }
  RandomFeaturePredictor map = sums_.map();
  map.SetFrequencies(std::move(frequencies));
  // The targets' squares were not kept; nothing after a load reads them.
  sums_ = RandomFeatureSums::FromTotals(
      map, forgetting, count, weight, std::move(gram), std::move(cross),
      std::vector<double>(num_targets(), 0.0));
  predictor_ = std::move(map);
  std::copy(weights.begin(), weights.end(), predictor_.weights().begin());
  predictor_.SetFactor(std::move(factor));
  solved_at_ = count;
  noise_now_.assign(num_targets(), 0.0);
  noise_before_ = std::move(noise);
  noise_count_now_ = 0.0;
  noise_count_before_ = weight;
  return true;
}

std::vector<double> RandomFeatureRidge::FactorFromRoot(
    std::span<const double> root, std::size_t num_features) {
  const auto f = static_cast<Eigen::Index>(num_features);
  const ConstMatrixMap s(root.data(), f, f);
  // A = (S S^T)^-1, factored.
  const Eigen::LLT<Eigen::MatrixXd> p(s * s.transpose());
  if (p.info() != Eigen::Success) return {};
  const Eigen::LLT<Eigen::MatrixXd> a(p.solve(Eigen::MatrixXd::Identity(f, f)));
  if (a.info() != Eigen::Success) return {};
  std::vector<double> factor(num_features * num_features);
  MatrixMap(factor.data(), f, f) = a.matrixL();
  return factor;
}

}  // namespace streamreg
