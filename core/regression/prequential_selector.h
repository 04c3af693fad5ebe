#ifndef STREAMREG_CORE_REGRESSION_PREQUENTIAL_SELECTOR_H_
#define STREAMREG_CORE_REGRESSION_PREQUENTIAL_SELECTOR_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"

namespace streamreg {

// The forgetting factor applied to the count-th value of a stream:
// min(forgetting, 1 - 2/count), so that early in a stream the figure
// reflects about its recent half (predictions made from more data) rather
// than its poor beginnings.
double EffectiveForgetting(double forgetting, std::uint64_t count);

// Online model selection by prequential (test-then-train) error: before a
// sample is learned, candidate values of a hyper-parameter grid (a
// bandwidth or a k) predict it; each keeps an exponentially forgotten mean
// of its squared errors, per target:
//   E_g,t <- gamma E_g,t + (prediction_g,t - y_t)^2,  N_g <- gamma N_g + 1.
// The best value for a target is the one with the least mean E_g,t / N_g
// (the smaller grid index on ties). gamma = 1 is the plain prequential
// mean; gamma < 1 lets the choice follow a drifting stream (half-life
// ln 2 / (1 - gamma) evaluations).
//
// A sample may be predicted by only a prefix of the grid (the wide
// bandwidths are the expensive ones): each value's mean is over the samples
// it predicted, an unbiased estimate of the same prequential error while
// the stream is stationary.
class PrequentialSelector {
 public:
  PrequentialSelector(std::size_t grid_size, std::size_t num_targets,
                      double forgetting);

  // predictions: the first `evaluated` rows of grid_size x num_targets,
  // row-major; truth: num_targets.
  void Add(std::span<const double> predictions, std::span<const double> truth,
           std::size_t evaluated);

  std::size_t grid_size() const { return grid_size_; }
  // Forgotten mean squared error of grid value g on target t.
  double MeanSquaredError(std::size_t g, std::size_t t) const;
  // The grid index with the least error on target t (kept up to date by
  // Add: O(1)).
  std::size_t Best(std::size_t t) const { return best_[t]; }
  // The grid index with the least error summed over targets, each divided
  // by scales[t]^2 (so every target counts alike).
  std::size_t BestOverall(std::span<const double> scales) const;

  // The exact state, for snapshots; Load fails on another shape.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  // E_g,t / N_g, +inf for a value that has predicted nothing yet.
  double Mean(std::size_t g, std::size_t t) const;
  void UpdateBest();

  std::size_t grid_size_;
  std::size_t num_targets_;
  double forgetting_;
  std::vector<double> weights_;    // N_g
  std::vector<double> errors_;     // [g * num_targets + t], forgotten sums
  std::vector<std::size_t> best_;  // per target
  std::uint64_t added_ = 0;
};

// The live quality figure of a model: the prequential normalized mean
// squared error per target — the forgotten mean of (prediction - y)^2 over
// the predictions the model actually made before learning each sample,
// divided by the forgotten variance of y (same forgetting factor). 1 is as
// good as predicting the mean; 0 is perfect.
class PrequentialScore {
 public:
  PrequentialScore(std::size_t num_targets, double forgetting);

  void Add(std::span<const double> prediction, std::span<const double> truth);

  // NaN until two samples have been scored or while y has not varied.
  double Nmse(std::size_t t) const;
  double MeanSquaredError(std::size_t t) const;
  double weight() const { return weight_; }

  // The exact state, for snapshots; Load fails on another shape.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  double forgetting_;
  std::uint64_t added_ = 0;
  double weight_ = 0.0;
  std::vector<double> squared_errors_;
  std::vector<double> mean_;
  std::vector<double> deviations_;  // forgotten sum of squared deviations
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_PREQUENTIAL_SELECTOR_H_
