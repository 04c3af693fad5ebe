#ifndef STREAMREG_CORE_INDEX_DIAGONAL_MAP_H_
#define STREAMREG_CORE_INDEX_DIAGONAL_MAP_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace streamreg {

// The coordinate map z_i = (x_i - center_i) * factor_i: a standardization
// followed by a diagonal metric. A cover tree that references rows kept by
// someone else (NodePoints) maps each row this way whenever it measures a
// distance, so it computes exactly the coordinates a MetricTransform's
// Apply stores (the same expression, evaluated the same way).
class DiagonalMap {
 public:
  DiagonalMap() = default;
  DiagonalMap(std::vector<double> center, std::vector<double> factor)
      : center_(std::move(center)), factor_(std::move(factor)) {}

  std::size_t dim() const { return center_.size(); }
  const double* center() const { return center_.data(); }
  const double* factor() const { return factor_.data(); }
  // The one expression of the map, for a coordinate: every image of a row
  // (Apply, the distance functions of euclidean_distance.h) is made by it.
  static double Map(double x, double center, double factor) {
    return (x - center) * factor;
  }
  // Coordinate i of x's image.
  double Map(const double* x, std::size_t i) const {
    return Map(x[i], center_[i], factor_[i]);
  }
  void Apply(const double* x, double* z) const {
    for (std::size_t i = 0; i < center_.size(); ++i) z[i] = Map(x, i);
  }

 private:
  std::vector<double> center_;
  std::vector<double> factor_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_DIAGONAL_MAP_H_
