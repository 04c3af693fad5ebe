#include "core/gradient_estimator.h"

#include <algorithm>

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

void GradientEstimator::Add(const double* point, const double* targets) {
  double squared = 0.0;
  for (std::size_t i = 0; i < dim_; ++i) {
    difference_[i] = x_[i] - point[i];
    squared += difference_[i] * difference_[i];
  }
  const double base = squared + t_ * t_;
  for (std::size_t i = 0; i < dim_; ++i) {
    const double cross = 2.0 * t_ * difference_[i];
    for (std::size_t side = 0; side < 2; ++side) {
      const double shifted = side == 0 ? base + cross : base - cross;
      const double u_squared = shifted * inverse_h_squared_;
      if (!(u_squared < 1.0)) continue;
      const double w = KernelWeightOfSquare(kernel_, u_squared);
      const std::size_t slot = 2 * i + side;
      weight_[slot] += w;
      double* sums = sums_.data() + slot * num_targets_;
      for (std::size_t k = 0; k < num_targets_; ++k) sums[k] += w * targets[k];
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
