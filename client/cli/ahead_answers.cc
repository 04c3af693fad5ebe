#include "client/cli/ahead_answers.h"

#include <algorithm>

namespace streamreg {

AheadAnswers::AheadAnswers(std::size_t num_targets,
                           std::uint64_t coverage_window,
                           std::uint64_t error_window)
    : error_(num_targets),
      coverage_(num_targets, coverage_window),
      error_window_(std::max<std::uint64_t>(1, error_window)) {}

void AheadAnswers::Due(const RealtimeReading& reading,
                       std::span<const double> predicted,
                       std::span<const double> lower,
                       std::span<const double> upper,
                       std::span<const double> y) {
  ++due_;
  if (reading.predicted()) {
    ++in_time_;
    error_.Add(predicted, y);
    coverage_.Add(lower, upper, y);
  }
  if (due_ % error_window_ == 0) {
    by_window_.push_back(error_.WindowMeanNmse());
    error_.StartWindow();
  }
}

}  // namespace streamreg
