#include "core/metric/metric_transform.h"

#include <cassert>
#include <cmath>
#include <utility>

namespace streamreg {

MetricTransform::MetricTransform(std::vector<double> center,
                                 std::vector<double> scale,
                                 std::vector<double> weights,
                                 std::vector<double> matrix)
    : center_(std::move(center)),
      scale_(std::move(scale)),
      weights_(std::move(weights)),
      matrix_(std::move(matrix)) {
  assert(center_.size() == scale_.size());
  if (!is_dense()) {
    std::vector<double> factors(center_.size());
    for (std::size_t i = 0; i < factors.size(); ++i) {
      factors[i] = weights_[i] / scale_[i];
    }
    diagonal_ = DiagonalMap(center_, std::move(factors));
  }
}

MetricTransform MetricTransform::Standardizing(std::vector<double> center,
                                               std::vector<double> scale) {
  std::vector<double> ones(center.size(), 1.0);
  return MetricTransform(std::move(center), std::move(scale), std::move(ones),
                         {});
}

MetricTransform MetricTransform::Standardizing(const RunningMoments& moments) {
  std::vector<double> scale(moments.dim());
  for (std::size_t i = 0; i < scale.size(); ++i) {
    scale[i] = moments.ScaleOrOne(i);
  }
  return Standardizing({moments.mean().begin(), moments.mean().end()},
                       std::move(scale));
}

MetricTransform MetricTransform::Diagonal(std::vector<double> center,
                                          std::vector<double> scale,
                                          std::vector<double> weights) {
  assert(weights.size() == center.size());
  return MetricTransform(std::move(center), std::move(scale),
                         std::move(weights), {});
}

MetricTransform MetricTransform::Dense(std::vector<double> center,
                                       std::vector<double> scale,
                                       std::vector<double> matrix) {
  assert(matrix.size() == center.size() * center.size());
  return MetricTransform(std::move(center), std::move(scale), {},
                         std::move(matrix));
}

void MetricTransform::Apply(std::span<const double> x,
                            std::span<double> out) const {
  const std::size_t d = dim();
  if (!is_dense()) {
    diagonal_.Apply(x.data(), out.data());
    return;
  }
  // Standardize into `out` first would alias; use a small local buffer.
  thread_local std::vector<double> standardized;
  standardized.resize(d);
  for (std::size_t i = 0; i < d; ++i) {
    standardized[i] = (x[i] - center_[i]) / scale_[i];
  }
  for (std::size_t r = 0; r < d; ++r) {
    const double* row = matrix_.data() + r * d;
    double sum = 0.0;
    for (std::size_t i = 0; i < d; ++i) sum += row[i] * standardized[i];
    out[r] = sum;
  }
}

std::vector<double> MetricTransform::Apply(std::span<const double> x) const {
  std::vector<double> out(dim());
  Apply(x, out);
  return out;
}

std::vector<double> MetricTransform::Gram() const {
  const std::size_t d = dim();
  std::vector<double> gram(d * d, 0.0);
  if (!is_dense()) {
    for (std::size_t i = 0; i < d; ++i) {
      const double a = weights_[i] / scale_[i];
      gram[i * d + i] = a * a;
    }
    return gram;
  }
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      double sum = 0.0;
      for (std::size_t r = 0; r < d; ++r) {
        sum += matrix_[r * d + i] * matrix_[r * d + j];
      }
      gram[i * d + j] = sum / (scale_[i] * scale_[j]);
    }
  }
  return gram;
}

bool MetricTransform::SameAs(const MetricTransform& other) const {
  return center_ == other.center_ && scale_ == other.scale_ &&
         weights_ == other.weights_ && matrix_ == other.matrix_;
}

double MetricTransform::RelativeChange(const MetricTransform& other) const {
  const std::vector<double> mine = Gram();
  const std::vector<double> theirs = other.Gram();
  double difference = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    difference += (theirs[i] - mine[i]) * (theirs[i] - mine[i]);
    norm += mine[i] * mine[i];
  }
  if (norm == 0.0) return difference == 0.0 ? 0.0 : HUGE_VAL;
  return std::sqrt(difference / norm);
}

}  // namespace streamreg

namespace streamreg {

void MetricTransform::Save(ByteWriter& out) const {
  out.Doubles(center_);
  out.Doubles(scale_);
  out.Doubles(weights_);
  out.Doubles(matrix_);
}

std::optional<MetricTransform> MetricTransform::Load(ByteReader& in,
                                                     std::size_t dim) {
  std::vector<double> center = in.Doubles();
  std::vector<double> scale = in.Doubles();
  std::vector<double> weights = in.Doubles();
  std::vector<double> matrix = in.Doubles();
  const bool shaped =
      center.size() == dim && scale.size() == dim &&
      (weights.empty() ? matrix.size() == dim * dim
                       : weights.size() == dim && matrix.empty());
  if (!in.ok() || !shaped) return std::nullopt;
  return MetricTransform(std::move(center), std::move(scale),
                         std::move(weights), std::move(matrix));
}

}  // namespace streamreg
