#include "core/regression/difficulty_scale.h"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace streamreg {
namespace {

// Matrices and vectors of at most kMaxFeatures rows, on the stack.
using SmallMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0,
                  DifficultyScale::kMaxFeatures, DifficultyScale::kMaxFeatures>;
using SmallVector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0,
                                  DifficultyScale::kMaxFeatures, 1>;

bool AllFinite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

bool AllMagnitudes(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return v >= 0.0 && std::isfinite(v); });
}

}  // namespace

DifficultyScale::DifficultyScale(std::size_t num_targets,
                                 std::size_t num_features, double horizon)
    : num_features_(std::clamp<std::size_t>(num_features, 1, kMaxFeatures)),
      horizon_(horizon),
      forgetting_(1.0 - 1.0 / horizon) {
  targets_.assign(num_targets, EmptyTarget());
}

DifficultyScale::Target DifficultyScale::EmptyTarget() const {
  Target target;
  target.sum_f.assign(num_features_, 0.0);
  target.sum_u.assign(num_features_, 0.0);
  target.sum_uu.assign(num_features_ * num_features_, 0.0);
  target.sum_uv.assign(num_features_, 0.0);
  target.slopes.assign(num_features_, 0.0);
  return target;
}

double DifficultyScale::LogFeature(const Target& target, std::size_t i,
                                   double f) {
  const double mean =
      target.weight > 0.0 ? target.sum_f[i] / target.weight : 0.0;
  return std::log(f + kOffset * mean);
}

double DifficultyScale::Relative(std::size_t t,
                                 std::span<const double> f) const {
  const Target& target = targets_[t];
  if (target.weight < kMinWeight) return 1.0;
  double exponent = 0.0;
  for (std::size_t i = 0; i < num_features_; ++i) {
    if (target.slopes[i] == 0.0) continue;  // whatever f_i is
    const double u = LogFeature(target, i, f[i]);
    if (std::isnan(u)) return 1.0;
    if (std::isinf(u)) return u > 0.0 ? kMaxRatio : 1.0 / kMaxRatio;
    exponent += target.slopes[i] * (u - target.sum_u[i] / target.weight);
  }
  return std::clamp(std::exp(exponent), 1.0 / kMaxRatio, kMaxRatio);
}

void DifficultyScale::Add(std::size_t t, std::span<const double> f,
                          double abs_residual, double scale) {
  if (!AllMagnitudes(f) || !std::isfinite(abs_residual) || !(scale > 0.0)) {
    return;
  }
  Target& target = targets_[t];
  const std::size_t p = num_features_;
  std::array<double, kMaxFeatures> u;
  for (std::size_t i = 0; i < p; ++i) u[i] = LogFeature(target, i, f[i]);
  // A zero magnitude before any positive one has no scale to take its log
  // on.
  if (!AllFinite(std::span(u).first(p))) return;
  const double v = std::log(abs_residual / scale + kResidualFloor);
  target.weight = forgetting_ * target.weight + 1.0;
  target.sum_v = forgetting_ * target.sum_v + v;
  for (std::size_t i = 0; i < p; ++i) {
    target.sum_f[i] = forgetting_ * target.sum_f[i] + f[i];
    target.sum_u[i] = forgetting_ * target.sum_u[i] + u[i];
    target.sum_uv[i] = forgetting_ * target.sum_uv[i] + u[i] * v;
    for (std::size_t j = 0; j < p; ++j) {
      target.sum_uu[i * p + j] =
          forgetting_ * target.sum_uu[i * p + j] + u[i] * u[j];
    }
  }
  FitSlopes(target);
}

void DifficultyScale::FitSlopes(Target& target) const {
  const std::size_t p = num_features_;
  std::fill(target.slopes.begin(), target.slopes.end(), 0.0);
  if (target.weight < kMinWeight) return;
  // The forgotten covariances of the features, and of them with v.
  const double w = target.weight;
  SmallMatrix covariance(p, p);
  SmallVector cross(p);
  for (std::size_t i = 0; i < p; ++i) {
    const double mean_i = target.sum_u[i] / w;
    cross(i) = target.sum_uv[i] / w - mean_i * target.sum_v / w;
    for (std::size_t j = 0; j < p; ++j) {
      covariance(i, j) =
          target.sum_uu[i * p + j] / w - mean_i * target.sum_u[j] / w;
    }
  }
  const double ridge = kRelativeRidge * std::max(covariance.trace() / p, 0.0) +
                       std::numeric_limits<double>::min();
  // A feature that has not varied (one the model does not have) keeps
  // slope 0: only the others are fitted.
  std::array<Eigen::Index, kMaxFeatures> varied;
  std::size_t num_varied = 0;
  for (std::size_t i = 0; i < p; ++i) {
    if (covariance(i, i) > ridge) varied[num_varied++] = i;
  }
  // Non-negative least squares by trying every subset of free slopes (a
  // handful): the feasible solution of least objective b'Cb - 2c'b.
  double best = 0.0;  // the objective at b = 0
  for (std::size_t free = 1; free < (std::size_t{1} << num_varied); ++free) {
    std::array<Eigen::Index, kMaxFeatures> indexes;
    Eigen::Index n = 0;
    for (std::size_t i = 0; i < num_varied; ++i) {
      if (free >> i & 1) indexes[n++] = varied[i];
    }
    SmallMatrix c(n, n);
    SmallVector r(n);
    for (Eigen::Index a = 0; a < n; ++a) {
      r(a) = cross(indexes[a]);
      for (Eigen::Index b = 0; b < n; ++b) {
        c(a, b) = covariance(indexes[a], indexes[b]);
      }
      c(a, a) += ridge;
    }
    const Eigen::LDLT<SmallMatrix> factor(c);
    if (factor.info() != Eigen::Success) continue;
    const SmallVector b = factor.solve(r);
    if (!b.allFinite() || (b.array() < 0.0).any()) continue;
    const double objective = b.dot(c * b) - 2.0 * r.dot(b);
    if (objective < best) {
      best = objective;
      std::fill(target.slopes.begin(), target.slopes.end(), 0.0);
      for (Eigen::Index a = 0; a < n; ++a) target.slopes[indexes[a]] = b(a);
    }
  }
}

void DifficultyScale::Save(ByteWriter& out) const {
  out.U64(targets_.size());
  out.U64(num_features_);
  out.Double(horizon_);
  for (const Target& target : targets_) {
    out.Double(target.weight);
    out.Double(target.sum_v);
    out.Doubles(target.sum_f);
    out.Doubles(target.sum_u);
    out.Doubles(target.sum_uu);
    out.Doubles(target.sum_uv);
  }
}

std::optional<DifficultyScale> DifficultyScale::Load(ByteReader& in,
                                                     std::size_t num_targets,
                                                     std::size_t num_features) {
  if (in.U64() != num_targets || in.U64() != num_features) return std::nullopt;
  const double horizon = in.Double();
  if (!in.ok() || !(horizon >= 1.0) || !std::isfinite(horizon)) {
    return std::nullopt;
  }
  DifficultyScale out(num_targets, num_features, horizon);
  for (Target& target : out.targets_) {
    target.weight = in.Double();
    target.sum_v = in.Double();
    target.sum_f = in.Doubles();
    target.sum_u = in.Doubles();
    target.sum_uu = in.Doubles();
    target.sum_uv = in.Doubles();
    if (!in.ok() || !(target.weight >= 0.0) || !std::isfinite(target.weight) ||
        !std::isfinite(target.sum_v) || target.sum_f.size() != num_features ||
        !AllMagnitudes(target.sum_f) || target.sum_u.size() != num_features ||
        target.sum_uu.size() != num_features * num_features ||
        target.sum_uv.size() != num_features || !AllFinite(target.sum_u) ||
        !AllFinite(target.sum_uu) || !AllFinite(target.sum_uv)) {
      return std::nullopt;
    }
    out.FitSlopes(target);
  }
  return out;
}

}  // namespace streamreg
