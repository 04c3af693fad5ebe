#include "core/metric/gradient_estimator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/base/enum_names.h"

namespace streamreg {
namespace {

// The target row width: targets and the weight's 1, to a multiple of 4.
std::size_t RowWidth(std::size_t num_targets) {
  return (num_targets + 1 + 3) / 4 * 4;
}

// Two doubles, added and multiplied lane by lane (SSE2 on any x86-64; GCC
// and Clang lower it elsewhere).
using DoublePair = double __attribute__((vector_size(16)));

// plus := sum_j plus_weights[j] rows[j], minus likewise, j = 0, 1, ... in
// order (rows of kWidth); the accumulators stay in registers.
template <std::size_t kWidth>
void WeightedRowSums(std::size_t count, const double* rows,
                     const double* plus_weights, const double* minus_weights,
                     double* plus, double* minus) {
  constexpr std::size_t kPairs = kWidth / 2;
  DoublePair p[kPairs] = {};
  DoublePair q[kPairs] = {};
  for (std::size_t j = 0; j < count; ++j) {
    const double* row = rows + j * kWidth;
    const DoublePair a = {plus_weights[j], plus_weights[j]};
    const DoublePair b = {minus_weights[j], minus_weights[j]};
#pragma GCC unroll 8
    for (std::size_t k = 0; k < kPairs; ++k) {
      DoublePair y;
      std::memcpy(&y, row + 2 * k, sizeof(y));
      p[k] += a * y;
      q[k] += b * y;
    }
  }
  std::memcpy(plus, p, sizeof(p));
  std::memcpy(minus, q, sizeof(q));
}

// The same for any width (the sums in `plus` and `minus`): in registers
// for up to 7 targets (width 8), in memory beyond.
void WeightedRowSums(std::size_t width, std::size_t count, const double* rows,
                     const double* plus_weights, const double* minus_weights,
                     double* plus, double* minus) {
  if (width == 4) {
    return WeightedRowSums<4>(count, rows, plus_weights, minus_weights, plus,
                              minus);
  }
  if (width == 8) {
    return WeightedRowSums<8>(count, rows, plus_weights, minus_weights, plus,
                              minus);
  }
  std::fill_n(plus, width, 0.0);
  std::fill_n(minus, width, 0.0);
  for (std::size_t j = 0; j < count; ++j) {
    const double* row = rows + j * width;
    for (std::size_t k = 0; k < width; ++k) {
      plus[k] += plus_weights[j] * row[k];
      minus[k] += minus_weights[j] * row[k];
    }
  }
}

}  // namespace

absl::string_view GradientEstimatorKindName(GradientEstimatorKind kind) {
  switch (kind) {
    case GradientEstimatorKind::kFiniteDifferences:
      return "finite_differences";
    case GradientEstimatorKind::kLocalLinear:
      return "local_linear";
  }
  return "unknown";
}

absl::StatusOr<GradientEstimatorKind> ParseGradientEstimatorKind(
    absl::string_view name) {
  return ParseEnumName("gradient_estimator", name,
                       {GradientEstimatorKind::kFiniteDifferences,
                        GradientEstimatorKind::kLocalLinear},
                       &GradientEstimatorKindName);
}

GradientEstimator::GradientEstimator(std::size_t dim, std::size_t num_targets,
                                     GradientEstimatorKind kind,
                                     double slope_ridge)
    : dim_(dim),
      num_targets_(num_targets),
      kind_(kind),
      slope_ridge_(slope_ridge),
      row_width_(RowWidth(num_targets)) {}

void GradientEstimator::Begin(std::span<const double> x, Kernel kernel,
                              double h, double t) {
  kernel_ = kernel;
  inverse_h_squared_ = 1.0 / (h * h);
  t_ = t;
  reach_ = h + t;
  x_.assign(x.begin(), x.end());
  differences_.clear();
  bases_.clear();
  rows_.clear();
}

void GradientEstimator::Add(const double* point, const double* targets) {
  const std::size_t at = differences_.size();
  differences_.resize(at + dim_);
  double* difference = differences_.data() + at;
  double squared = 0.0;
  double largest = 0.0;  // max_i |x_i - X_i|
  for (std::size_t i = 0; i < dim_; ++i) {
    difference[i] = x_[i] - point[i];
    squared += difference[i] * difference[i];
    largest = std::max(largest, std::fabs(difference[i]));
  }
  // |x + s t e_i - X|^2 = base + 2 s t (x_i - X_i): the ball shifted towards
  // X is the nearer; if even the nearest of all 2d balls cannot hold X, the
  // sample adds nothing.
  const double base = squared + t_ * t_;
  // A plane is fitted to every sample within h + t.
  const bool kept = kind_ == GradientEstimatorKind::kFiniteDifferences
                        ? (base - 2.0 * t_ * largest) * inverse_h_squared_ < 1.0
                        : squared < reach_ * reach_;
  if (!kept) {
    differences_.resize(at);
    return;
  }
  bases_.push_back(base);
  rows_.insert(rows_.end(), targets, targets + num_targets_);
  rows_.push_back(1.0);
  rows_.resize(rows_.size() + row_width_ - num_targets_ - 1, 0.0);
}

// u^2 = |x +- t e_i - X|^2 / h^2 = (base +- 2 t (x_i - X_i)) / h^2 for
// side +t and side -t; a sample beyond the ball gets weight 0.
template <Kernel kKernel>
void GradientEstimator::BallWeights(std::size_t i) {
  const double two_t = 2.0 * t_;
  const std::size_t count = bases_.size();
  for (std::size_t j = 0; j < count; ++j) {
    const double cross = two_t * differences_[j * dim_ + i];
    plus_weights_[j] =
        KernelWeightOfSquare(kKernel, (bases_[j] + cross) * inverse_h_squared_);
    minus_weights_[j] =
        KernelWeightOfSquare(kKernel, (bases_[j] - cross) * inverse_h_squared_);
  }
}

void GradientEstimator::BallWeights(std::size_t i) {
  switch (kernel_) {
    case Kernel::kBox:
      return BallWeights<Kernel::kBox>(i);
    case Kernel::kTriangular:
      return BallWeights<Kernel::kTriangular>(i);
    case Kernel::kEpanechnikov:
      return BallWeights<Kernel::kEpanechnikov>(i);
    case Kernel::kTruncatedGaussian:
      return BallWeights<Kernel::kTruncatedGaussian>(i);
  }
}

void GradientEstimator::Finish(GradientEstimate* out) {
  out->dim = dim_;
  out->num_targets = num_targets_;
  out->delta.assign(dim_ * num_targets_, 0.0);
  out->counted.assign(dim_, 0);
  switch (kind_) {
    case GradientEstimatorKind::kFiniteDifferences:
      return FinishFiniteDifferences(out);
    case GradientEstimatorKind::kLocalLinear:
      return FinishLocalLinear(out);
  }
}

void GradientEstimator::FinishLocalLinear(GradientEstimate* out) {
  const std::size_t count = bases_.size();
  if (count < 2) return;
  // The plane is fitted to the differences x - X, so its slopes are minus
  // the gradient's (the ridge is symmetric in the sign).
  system_.Reset(dim_, num_targets_);
  system_.Add(differences_.data(), dim_, rows_.data(), row_width_, count);
  if (!system_.Factor(slope_ridge_)) return;
  const std::span<const double> fit = system_.Solve();
  if (!std::all_of(fit.begin(), fit.end(),
                   [](double v) { return std::isfinite(v); })) {
    return;
  }
  for (std::size_t i = 0; i < dim_; ++i) {
    out->counted[i] = 1;
    for (std::size_t k = 0; k < num_targets_; ++k) {
      out->delta[i * num_targets_ + k] = -fit[i * num_targets_ + k];
    }
  }
}

void GradientEstimator::FinishFiniteDifferences(GradientEstimate* out) {
  const std::size_t count = bases_.size();
  plus_weights_.resize(count);
  minus_weights_.resize(count);
  sums_.resize(2 * dim_ * row_width_);
  for (std::size_t i = 0; i < dim_; ++i) {
    BallWeights(i);
    double* plus = sums_.data() + 2 * i * row_width_;
    WeightedRowSums(row_width_, count, rows_.data(), plus_weights_.data(),
                    minus_weights_.data(), plus, plus + row_width_);
  }
  for (std::size_t i = 0; i < dim_; ++i) {
    const double* plus = sums_.data() + 2 * i * row_width_;
    const double* minus = plus + row_width_;
    const double plus_weight = plus[num_targets_];
    const double minus_weight = minus[num_targets_];
    if (!(plus_weight > 0.0 && minus_weight > 0.0)) continue;
    out->counted[i] = 1;
    for (std::size_t k = 0; k < num_targets_; ++k) {
      out->delta[i * num_targets_ + k] =
          (plus[k] / plus_weight - minus[k] / minus_weight) / (2.0 * t_);
    }
  }
}

}  // namespace streamreg
