#include "client/cli/interval_coverage.h"

#include <algorithm>
#include <limits>

namespace streamreg {

IntervalCoverage::IntervalCoverage(std::size_t num_targets,
                                   std::uint64_t window)
    : window_(std::max<std::uint64_t>(1, window)),
      covered_(num_targets, 0),
      covered_in_window_(num_targets, 0) {}

void IntervalCoverage::Add(const v1::Prediction& prediction,
                           std::span<const double> truth) {
  Add({prediction.lower().data(),
       static_cast<std::size_t>(prediction.lower_size())},
      {prediction.upper().data(),
       static_cast<std::size_t>(prediction.upper_size())},
      truth);
}

void IntervalCoverage::Add(std::span<const double> lower,
                           std::span<const double> upper,
                           std::span<const double> truth) {
  const std::size_t targets = covered_.size();
  if (lower.size() != targets || upper.size() != targets ||
      truth.size() != targets) {
    return;
  }
  for (std::size_t t = 0; t < targets; ++t) {
    const bool within = lower[t] <= truth[t] && truth[t] <= upper[t];
    covered_[t] += within;
    covered_in_window_[t] += within;
  }
  ++counted_;
  if (++counted_in_window_ == window_) {
    std::vector<double> coverage(targets);
    for (std::size_t t = 0; t < targets; ++t) {
      coverage[t] = static_cast<double>(covered_in_window_[t]) /
                    static_cast<double>(window_);
    }
    windows_.push_back(std::move(coverage));
    std::fill(covered_in_window_.begin(), covered_in_window_.end(), 0);
    counted_in_window_ = 0;
  }
}

std::vector<double> IntervalCoverage::Coverage() const {
  std::vector<double> out(covered_.size(),
                          std::numeric_limits<double>::quiet_NaN());
  if (counted_ == 0) return out;
  for (std::size_t t = 0; t < covered_.size(); ++t) {
    out[t] = static_cast<double>(covered_[t]) / static_cast<double>(counted_);
  }
  return out;
}

}  // namespace streamreg
