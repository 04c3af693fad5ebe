#ifndef STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_SUMS_H_
#define STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_SUMS_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/regression/random_feature_predictor.h"

namespace streamreg {

// The weighted sums a random-feature ridge is solved from (RandomFeatureRidge):
// with weights v_i = forgetting^(n - i) over the n samples added,
// G = sum_i v_i phi_i phi_i^T, B = sum_i v_i phi_i y_i^T, the targets'
// weighted squares and the total weight. Both the online ridge and a model's
// background rebuild (which accumulates them over its stored samples, once
// per candidate feature map) keep them.
//
// G takes the samples kBatch at a time: their features wait in a block,
// and a full block is added by one symmetric rank-kBatch update (F^2 / 2
// multiply-adds a sample, as a rank-1 update per sample costs, but at
// matrix-product speed: 7-15 times faster at F = 500-2,000). The block's
// boundaries fall at fixed counts, so that G's rounding depends only on the
// samples added, never on when it is read; Gram adds a partial block to a
// copy. B and the squares take each sample at once (F m + m).
class RandomFeatureSums {
 public:
  static constexpr std::size_t kBatch = 64;

  RandomFeatureSums(RandomFeaturePredictor map, double forgetting);

  void Add(std::span<const double> z, std::span<const double> y);
  // The same for features phi already computed by map().
  void AddFeatures(std::span<const double> phi, std::span<const double> y);

  const RandomFeaturePredictor& map() const { return map_; }
  std::size_t count() const { return count_; }
  double weight() const { return weight_; }
  double forgetting() const { return forgetting_; }
  // G over every sample added, into the lower triangle of `lower`
  // (column-major F x F; the strict upper triangle is left as it was).
  void Gram(std::span<double> lower) const;
  // Column-major F x m.
  std::span<const double> cross() const { return cross_; }
  std::span<const double> squares() const { return squares_; }

  // The exact sums, for snapshots (the map is the caller's to save); Load
  // fails on a malformed record.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);
  // Sums whose G, B, squares and weight are given, after `count` samples
  // (a ridge saved before the sums were kept, converted).
  static RandomFeatureSums FromTotals(RandomFeaturePredictor map,
                                      double forgetting, std::size_t count,
                                      double weight, std::vector<double> gram,
                                      std::vector<double> cross,
                                      std::vector<double> squares);

 private:
  // Adds the waiting block's first `columns` samples, weighted as of the
  // last of them, to `lower` scaled by forgetting^columns.
  void AddBlock(std::span<double> lower, std::size_t columns) const;

  RandomFeaturePredictor map_;
  double forgetting_;
  std::size_t count_ = 0;
  double weight_ = 0.0;
  // Column-major F x F: G over the samples before the waiting block (its
  // lower triangle).
  std::vector<double> gram_;
  std::vector<double> cross_;
  std::vector<double> squares_;
  // Column-major F x kBatch: the features of the last `waiting_` samples
  // (a block fills at every kBatch-th sample since the sums began).
  std::vector<double> block_;
  std::size_t waiting_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_RANDOM_FEATURE_SUMS_H_
