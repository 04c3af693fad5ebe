#include "core/metric/gradient_estimator.h"

#include <algorithm>
#include <cmath>

namespace streamreg {

void GradientEstimator::Begin(std::span<const double> x, Kernel kernel,
                              double h, double t) {
  kernel_ = kernel;
  inverse_h_squared_ = 1.0 / (h * h);
  t_ = t;
  x_.assign(x.begin(), x.end());
  difference_.resize(dim_);
  weight_.assign(2 * dim_, 0.0);
  sums_.assign(2 * dim_ * num_targets_, 0.0);
}

// Inlined into Add: it runs for every sample and ball.
[[gnu::always_inline]] inline void GradientEstimator::AddToBall(
    std::size_t ball, double u_squared, const double* targets) {
  if (!(u_squared < 1.0)) return;
  double* sums = sums_.data() + ball * num_targets_;
  if (kernel_ == Kernel::kBox) {
    weight_[ball] += 1.0;
    for (std::size_t k = 0; k < num_targets_; ++k) sums[k] += targets[k];
    return;
  }
  const double w = KernelWeightOfSquare(kernel_, u_squared);
  weight_[ball] += w;
  for (std::size_t k = 0; k < num_targets_; ++k) sums[k] += w * targets[k];
}

void GradientEstimator::Add(const double* point, const double* targets) {
  double squared = 0.0;
  double largest = 0.0;  // max_i |x_i - X_i|
  for (std::size_t i = 0; i < dim_; ++i) {
    difference_[i] = x_[i] - point[i];
    squared += difference_[i] * difference_[i];
    largest = std::max(largest, std::fabs(difference_[i]));
  }
  // |x + s t e_i - X|^2 = base + 2 s t (x_i - X_i): of the two balls of
  // coordinate i, the one shifted towards X (s = -sign(x_i - X_i)) is the
  // nearer; the farther can hold X only when base < h^2. Most samples of
  // B(x, h + t) lie in few of the 2d balls, or in none.
  const double base = squared + t_ * t_;
  const double two_t = 2.0 * t_;
  if (!((base - two_t * largest) * inverse_h_squared_ < 1.0)) return;
  const bool far_side_possible = base * inverse_h_squared_ < 1.0;
  for (std::size_t i = 0; i < dim_; ++i) {
    const double cross = two_t * difference_[i];
    const std::size_t near_side = cross > 0.0 ? 1 : 0;  // 0: +t, 1: -t
    AddToBall(2 * i + near_side, (base - std::fabs(cross)) * inverse_h_squared_,
              targets);
    if (far_side_possible) {
      AddToBall(2 * i + (1 - near_side),
                (base + std::fabs(cross)) * inverse_h_squared_, targets);
    }
  }
}

void GradientEstimator::Finish(GradientEstimate* out) const {
  out->dim = dim_;
  out->num_targets = num_targets_;
  out->delta.assign(dim_ * num_targets_, 0.0);
  out->counted.assign(dim_, 0);
  for (std::size_t i = 0; i < dim_; ++i) {
    const double plus_weight = weight_[2 * i];
    const double minus_weight = weight_[2 * i + 1];
    if (!(plus_weight > 0.0 && minus_weight > 0.0)) continue;
    out->counted[i] = 1;
    const double* plus = sums_.data() + 2 * i * num_targets_;
    const double* minus = plus + num_targets_;
    for (std::size_t k = 0; k < num_targets_; ++k) {
      out->delta[i * num_targets_ + k] =
          (plus[k] / plus_weight - minus[k] / minus_weight) / (2.0 * t_);
    }
  }
}

}  // namespace streamreg
