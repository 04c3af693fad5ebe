#include "core/regression/prequential_selector.h"

#include <algorithm>
#include <limits>

namespace streamreg {

double EffectiveForgetting(double forgetting, std::uint64_t count) {
  // Remember at most about the last half of the stream: 1 - 2/count.
  const double half = 1.0 - 2.0 / static_cast<double>(count);
  return std::max(0.0, std::min(forgetting, half));
}

PrequentialSelector::PrequentialSelector(std::size_t grid_size,
                                         std::size_t num_targets,
                                         double forgetting)
    : grid_size_(grid_size),
      num_targets_(num_targets),
      forgetting_(forgetting),
      weights_(grid_size, 0.0),
      errors_(grid_size * num_targets, 0.0),
      best_(num_targets, 0) {}

void PrequentialSelector::Add(std::span<const double> predictions,
                              std::span<const double> truth,
                              std::size_t evaluated) {
  ++added_;
  const double forgetting = EffectiveForgetting(forgetting_, added_);
  for (std::size_t g = 0; g < evaluated; ++g) {
    weights_[g] = forgetting * weights_[g] + 1.0;
    for (std::size_t t = 0; t < num_targets_; ++t) {
      const double error = predictions[g * num_targets_ + t] - truth[t];
      double& sum = errors_[g * num_targets_ + t];
      sum = forgetting * sum + error * error;
    }
  }
  UpdateBest();
}

double PrequentialSelector::Mean(std::size_t g, std::size_t t) const {
  if (weights_[g] == 0.0) return std::numeric_limits<double>::infinity();
  return errors_[g * num_targets_ + t] / weights_[g];
}

double PrequentialSelector::MeanSquaredError(std::size_t g,
                                             std::size_t t) const {
  if (weights_[g] == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return Mean(g, t);
}

void PrequentialSelector::UpdateBest() {
  for (std::size_t t = 0; t < num_targets_; ++t) {
    std::size_t best = 0;
    for (std::size_t g = 1; g < grid_size_; ++g) {
      if (Mean(g, t) < Mean(best, t)) best = g;
    }
    best_[t] = best;
  }
}

std::size_t PrequentialSelector::BestOverall(
    std::span<const double> scales) const {
  std::size_t best = 0;
  double best_error = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < grid_size_; ++g) {
    double error = 0.0;
    for (std::size_t t = 0; t < num_targets_; ++t) {
      error += Mean(g, t) / (scales[t] * scales[t]);
    }
    if (error < best_error) {
      best_error = error;
      best = g;
    }
  }
  return best;
}

PrequentialScore::PrequentialScore(std::size_t num_targets, double forgetting)
    : forgetting_(forgetting),
      squared_errors_(num_targets, 0.0),
      mean_(num_targets, 0.0),
      deviations_(num_targets, 0.0) {}

void PrequentialScore::Add(std::span<const double> prediction,
                           std::span<const double> truth) {
  ++added_;
  const double forgetting = EffectiveForgetting(forgetting_, added_);
  weight_ = forgetting * weight_ + 1.0;
  for (std::size_t t = 0; t < mean_.size(); ++t) {
    const double error = prediction[t] - truth[t];
    squared_errors_[t] = forgetting * squared_errors_[t] + error * error;
    // West's weighted incremental mean and variance.
    const double before = truth[t] - mean_[t];
    mean_[t] += before / weight_;
    deviations_[t] =
        forgetting * deviations_[t] + before * (truth[t] - mean_[t]);
  }
}

double PrequentialScore::MeanSquaredError(std::size_t t) const {
  if (weight_ == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return squared_errors_[t] / weight_;
}

double PrequentialScore::Nmse(std::size_t t) const {
  if (!(deviations_[t] > 0.0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return squared_errors_[t] / deviations_[t];
}

}  // namespace streamreg

namespace streamreg {

void PrequentialSelector::Save(ByteWriter& out) const {
  out.U64(added_);
  out.Doubles(weights_);
  out.Doubles(errors_);
  for (std::size_t best : best_) out.U64(best);
}

bool PrequentialSelector::Load(ByteReader& in) {
  added_ = in.U64();
  if (!in.DoublesOfSize(&weights_) || !in.DoublesOfSize(&errors_)) {
    return false;
  }
  for (std::size_t& best : best_) {
    best = in.U64();
    if (best >= grid_size_) return false;
  }
  return in.ok();
}

void PrequentialScore::Save(ByteWriter& out) const {
  out.U64(added_);
  out.Double(weight_);
  out.Doubles(squared_errors_);
  out.Doubles(mean_);
  out.Doubles(deviations_);
}

bool PrequentialScore::Load(ByteReader& in) {
  added_ = in.U64();
  weight_ = in.Double();
  return in.DoublesOfSize(&squared_errors_) && in.DoublesOfSize(&mean_) &&
         in.DoublesOfSize(&deviations_);
}

}  // namespace streamreg
