#ifndef STREAMREG_CORE_METRIC_METRIC_TRANSFORM_H_
#define STREAMREG_CORE_METRIC_METRIC_TRANSFORM_H_

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/base/running_moments.h"
#include "core/index/diagonal_map.h"

namespace streamreg {

// The linear map from raw inputs to the coordinates an index stores:
//   z = L · ((x - center) / scale)
// — standardization followed by the learned metric. Euclidean distance
// between mapped points is the metric's distance between raw points:
// identity L (standardized Euclidean), diagonal L = diag(sqrt(W)) (gradient
// weights, Kpotufe & Boularias 2012, rho(x,x')^2 = sum_i W_i (x_i - x'_i)^2)
// or dense L = D^{1/2} V^T (EGOP, Trivedi et al. 2014 §2).
class MetricTransform {
 public:
  // Standardized Euclidean coordinates.
  static MetricTransform Standardizing(std::vector<double> center,
                                       std::vector<double> scale);
  // Standardized by running moments: their mean, and their standard
  // deviation where known and not zero (1 otherwise).
  static MetricTransform Standardizing(const RunningMoments& moments);
  // L = diag(weights).
  static MetricTransform Diagonal(std::vector<double> center,
                                  std::vector<double> scale,
                                  std::vector<double> weights);
  // L = matrix, dim x dim, row-major.
  static MetricTransform Dense(std::vector<double> center,
                               std::vector<double> scale,
                               std::vector<double> matrix);

  std::size_t dim() const { return center_.size(); }
  bool is_dense() const { return !matrix_.empty(); }
  std::span<const double> center() const { return center_; }
  std::span<const double> scale() const { return scale_; }
  // Diagonal of L (all ones for Standardizing); empty when dense.
  std::span<const double> weights() const { return weights_; }
  // Row-major L when dense; empty otherwise.
  std::span<const double> matrix() const { return matrix_; }
  // A diagonal transform as the map z_i = (x_i - center_i) * factor_i,
  // factor_i = weight_i / scale_i: what Apply computes. Only when
  // !is_dense().
  const DiagonalMap& diagonal_map() const { return diagonal_; }

  // out = L ((x - center) / scale); out has dim() entries. A diagonal L is
  // applied as (x - center) * (weight / scale), exactly as diagonal_map().
  void Apply(std::span<const double> x, std::span<double> out) const;
  std::vector<double> Apply(std::span<const double> x) const;

  // How far `other` moved the distances this transform defines: the
  // relative Frobenius change ||G' - G|| / ||G|| of the Gram matrix
  // G = A^T A, A = L diag(1/scale). Invariant to rotations of L (EGOP
  // eigenvectors have arbitrary signs) and to the centre (a translation
  // changes no distance).
  double RelativeChange(const MetricTransform& other) const;
  // The same map, exactly (every center, scale, weight and entry of L).
  bool SameAs(const MetricTransform& other) const;

  // The exact transform, for snapshots; Load yields nothing for a
  // malformed or other-dimensional one.
  void Save(ByteWriter& out) const;
  static std::optional<MetricTransform> Load(ByteReader& in, std::size_t dim);

 private:
  MetricTransform(std::vector<double> center, std::vector<double> scale,
                  std::vector<double> weights, std::vector<double> matrix);
  std::vector<double> Gram() const;

  std::vector<double> center_;
  std::vector<double> scale_;
  std::vector<double> weights_;
  std::vector<double> matrix_;
  DiagonalMap diagonal_;  // when not dense
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_METRIC_TRANSFORM_H_
