#ifndef STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_SUMS_H_
#define STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_SUMS_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/regression/random_feature_predictor.h"

namespace streamreg {

// The weighted sums a random-feature ridge is solved from in one batch
// (RandomFeatureRidge::FromSums): with weights v_i = forgetting^(n - i)
// over the samples added, G = sum_i v_i phi_i phi_i^T, B = sum_i v_i phi_i
// y_i^T, the targets' weighted squares and the total weight — what a
// model's background rebuild accumulates over its stored samples, once per
// candidate feature map, to choose the map and the ridge on held-out
// samples before it builds the ridge it keeps. Adding a sample costs
// F^2 / 2 + F m multiply-adds.
class RandomFeatureSums {
 public:
  RandomFeatureSums(RandomFeaturePredictor map, double forgetting);

  void Add(std::span<const double> z, std::span<const double> y);

  const RandomFeaturePredictor& map() const { return map_; }
  std::size_t count() const { return count_; }
  double weight() const { return weight_; }
  double forgetting() const { return forgetting_; }
  // Column-major F x F; only its lower triangle is kept.
  std::span<const double> gram() const { return gram_; }
  // Column-major F x m.
  std::span<const double> cross() const { return cross_; }
  std::span<const double> squares() const { return squares_; }

 private:
  RandomFeaturePredictor map_;
  double forgetting_;
  std::size_t count_ = 0;
  double weight_ = 0.0;
  std::vector<double> gram_;
  std::vector<double> cross_;
  std::vector<double> squares_;
  std::vector<double> phi_;  // scratch
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_SUMS_H_
