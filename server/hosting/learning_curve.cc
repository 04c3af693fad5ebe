#include "server/hosting/learning_curve.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace streamreg {

void LearningCurve::Record(std::uint64_t learned, const ModelStats& stats) {
  MutexLock lock(&mutex_);
  if (!points_.empty() && learned <= points_.back().samples) return;
  if (points_.empty()) {
    // A restored model's first point: the step its count would have grown
    // to, had the curve been there from the start.
    step_ = std::max(kFirstStep, std::bit_ceil(learned / (kCapacity / 2)));
  }
  if (points_.size() == kCapacity) {
    // Keep the odd places: the newest point stays, the spacing doubles.
    std::vector<Point> kept;
    kept.reserve(kCapacity);
    for (std::size_t i = 1; i < points_.size(); i += 2) {
      kept.push_back(std::move(points_[i]));
    }
    points_ = std::move(kept);
    step_ *= 2;
  }
  points_.push_back({learned, stats.prequential_nmse, stats.honest_nmse,
                     stats.interval_scored, stats.interval_covered});
  next_due_.store((learned / step_ + 1) * step_, std::memory_order_relaxed);
}

std::vector<LearningCurve::Point> LearningCurve::Points() const {
  MutexLock lock(&mutex_);
  return points_;
}

std::uint64_t LearningCurve::step() const {
  MutexLock lock(&mutex_);
  return step_;
}

}  // namespace streamreg
