#include "common/normalized_error.h"

#include <algorithm>

namespace streamreg {

NormalizedError::NormalizedError(std::size_t num_targets)
    : mean_(num_targets),
      m2_(num_targets),
      squared_error_(num_targets),
      window_squared_error_(num_targets) {}

void NormalizedError::Add(std::span<const double> predicted,
                          std::span<const double> truth) {
  ++count_;
  ++window_count_;
  for (std::size_t t = 0; t < mean_.size(); ++t) {
    const double e = predicted[t] - truth[t];
    squared_error_[t] += e * e;
    window_squared_error_[t] += e * e;
    const double delta = truth[t] - mean_[t];
    mean_[t] += delta / static_cast<double>(count_);
    m2_[t] += delta * (truth[t] - mean_[t]);
  }
}

double NormalizedError::Variance(std::size_t t) const {
  return count_ == 0 ? 0.0 : m2_[t] / static_cast<double>(count_);
}

double NormalizedError::Nmse(std::size_t t) const {
  const double variance = Variance(t);
  return variance > 0
             ? squared_error_[t] / static_cast<double>(count_) / variance
             : 0.0;
}

double NormalizedError::MeanSquaredError(std::size_t t) const {
  return count_ == 0 ? 0.0 : squared_error_[t] / static_cast<double>(count_);
}

double NormalizedError::MeanNmse() const {
  if (mean_.empty()) return 0.0;
  double total = 0.0;
  for (std::size_t t = 0; t < mean_.size(); ++t) total += Nmse(t);
  return total / static_cast<double>(mean_.size());
}

void NormalizedError::StartWindow() {
  window_count_ = 0;
  std::fill(window_squared_error_.begin(), window_squared_error_.end(), 0.0);
}

double NormalizedError::WindowMeanNmse() const {
  if (mean_.empty() || window_count_ == 0) return 0.0;
  double total = 0.0;
  for (std::size_t t = 0; t < mean_.size(); ++t) {
    const double variance = Variance(t);
    if (variance > 0) {
      total += window_squared_error_[t] / static_cast<double>(window_count_) /
               variance;
    }
  }
  return total / static_cast<double>(mean_.size());
}

}  // namespace streamreg
