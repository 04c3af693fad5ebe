#include "client/cli/ahead_answers.h"

#include <algorithm>

#include "client/lib/client.h"

namespace streamreg {

AheadAnswers::AheadAnswers(std::size_t num_targets,
                           std::uint64_t coverage_window,
                           std::uint64_t error_window)
    : error_(num_targets),
      coverage_(num_targets, coverage_window),
      error_window_(std::max<std::uint64_t>(1, error_window)) {}

void AheadAnswers::Arrived(
    std::uint64_t first_tick,
    const google::protobuf::RepeatedPtrField<v1::Prediction>& predictions) {
  for (int i = 0; i < predictions.size(); ++i) {
    const std::uint64_t tick = first_tick + static_cast<std::uint64_t>(i);
    if (tick < first_) continue;  // due already: it went without
    while (first_ + kept_.size() <= tick) kept_.emplace_back();
    kept_[tick - first_] = predictions[i];
  }
}

void AheadAnswers::Due(std::uint64_t tick, std::span<const double> y) {
  while (first_ < tick && !kept_.empty()) {  // ticks never scored
    kept_.pop_front();
    ++first_;
  }
  first_ = std::max(first_, tick);
  ++due_;
  if (!kept_.empty()) {
    if (const std::optional<v1::Prediction>& kept = kept_.front()) {
      ++in_time_;
      error_.Add(PredictedValues(*kept), y);
      coverage_.Add(*kept, y);
    }
    kept_.pop_front();
  }
  first_ = tick + 1;
  if (due_ % error_window_ == 0) {
    by_window_.push_back(error_.WindowMeanNmse());
    error_.StartWindow();
  }
}

}  // namespace streamreg
