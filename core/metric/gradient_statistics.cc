#include "core/metric/gradient_statistics.h"

#include <algorithm>
#include <cmath>

namespace streamreg {

GradientStatistics::GradientStatistics(std::size_t dim, std::size_t num_targets,
                                       bool outer_products)
    : dim_(dim),
      num_targets_(num_targets),
      counted_(dim, 0.0),
      abs_sums_(dim * num_targets, 0.0),
      outer_(outer_products ? dim * dim * num_targets : 0, 0.0) {}

void GradientStatistics::Add(const GradientEstimate& estimate,
                             double forgetting) {
  if (forgetting != 1.0) {
    count_ *= forgetting;
    for (double& v : counted_) v *= forgetting;
    for (double& v : abs_sums_) v *= forgetting;
    for (double& v : outer_) v *= forgetting;
  }
  count_ += 1.0;
  const std::size_t m = num_targets_;
  for (std::size_t i = 0; i < dim_; ++i) {
    if (!estimate.counted[i]) continue;
    counted_[i] += 1.0;
    for (std::size_t t = 0; t < m; ++t) {
      abs_sums_[t * dim_ + i] += std::abs(estimate.delta[i * m + t]);
    }
  }
  if (outer_.empty()) return;
  for (std::size_t t = 0; t < m; ++t) {
    double* outer = outer_.data() + t * dim_ * dim_;
    for (std::size_t i = 0; i < dim_; ++i) {
      const double gi = estimate.delta[i * m + t];
      if (gi == 0.0) continue;
      double* row = outer + i * dim_;
      for (std::size_t j = 0; j < dim_; ++j) {
        row[j] += gi * estimate.delta[j * m + t];
      }
    }
  }
}

void GradientStatistics::Merge(const GradientStatistics& other) {
  count_ += other.count_;
  for (std::size_t i = 0; i < counted_.size(); ++i) {
    counted_[i] += other.counted_[i];
  }
  for (std::size_t k = 0; k < abs_sums_.size(); ++k) {
    abs_sums_[k] += other.abs_sums_[k];
  }
  for (std::size_t k = 0; k < outer_.size() && k < other.outer_.size(); ++k) {
    outer_[k] += other.outer_[k];
  }
}

void GradientStatistics::Scale(double factor) {
  count_ *= factor;
  for (double& counted : counted_) counted *= factor;
  for (double& sum : abs_sums_) sum *= factor;
  for (double& sum : outer_) sum *= factor;
}

void GradientStatistics::Clear() {
  count_ = 0.0;
  std::fill(counted_.begin(), counted_.end(), 0.0);
  std::fill(abs_sums_.begin(), abs_sums_.end(), 0.0);
  std::fill(outer_.begin(), outer_.end(), 0.0);
}

std::vector<double> GradientStatistics::GradientWeights(
    std::size_t target) const {
  std::vector<double> weights(dim_, 0.0);
  if (count_ <= 0.0) return weights;
  for (std::size_t i = 0; i < dim_; ++i) {
    weights[i] = abs_sums_[target * dim_ + i] / count_;
  }
  return weights;
}

std::vector<double> GradientStatistics::Egop(std::size_t target) const {
  std::vector<double> egop(dim_ * dim_, 0.0);
  if (count_ <= 0.0 || outer_.empty()) return egop;
  const double* outer = outer_.data() + target * dim_ * dim_;
  for (std::size_t k = 0; k < dim_ * dim_; ++k) egop[k] = outer[k] / count_;
  return egop;
}

}  // namespace streamreg

namespace streamreg {

void GradientStatistics::Save(ByteWriter& out) const {
  out.Double(count_);
  out.Doubles(counted_);
  out.Doubles(abs_sums_);
  out.Doubles(outer_);
}

bool GradientStatistics::Load(ByteReader& in) {
  count_ = in.Double();
  return in.DoublesOfSize(&counted_) && in.DoublesOfSize(&abs_sums_) &&
         in.DoublesOfSize(&outer_);
}

}  // namespace streamreg
