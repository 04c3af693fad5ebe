#include "core/metric/glml_metric.h"

#include <algorithm>
#include <cmath>

namespace streamreg {
namespace {

double Dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// v / |v|, or empty where |v| is not a usable length.
std::vector<double> UnitOrEmpty(std::vector<double> v) {
  const double norm = std::sqrt(Dot(v, v));
  if (!(norm > 1e-12) || !std::isfinite(norm)) return {};
  for (double& x : v) x /= norm;
  return v;
}

}  // namespace

GlmlMetric::GlmlMetric(std::span<const double> grad_y,
                       std::span<const double> density_direction,
                       double gamma_ratio)
    : dim_(grad_y.size()) {
  const std::size_t d = grad_y.size();
  const double norm_y = std::sqrt(Dot(grad_y, grad_y));
  const double norm_p = std::sqrt(Dot(density_direction, density_direction));
  if (d < 2 || !(norm_y > 0.0) || !(norm_p > 0.0) || !std::isfinite(norm_y) ||
      !std::isfinite(norm_p)) {
    return;  // B = 0: Euclidean
  }
  // Eq. (27) with grad p = p(x) times the direction: p(x) cancels.
  const double cross = Dot(grad_y, density_direction);
  lambda1_ = 0.5 * (cross + norm_y * norm_p);
  lambda2_ = 0.5 * (cross - norm_y * norm_p);
  // Eq. (26): u = a +- b with a, b the unit directions of grad p, grad y.
  std::vector<double> sum(d), difference(d);
  for (std::size_t i = 0; i < d; ++i) {
    const double a = density_direction[i] / norm_p;
    const double b = grad_y[i] / norm_y;
    sum[i] = a + b;
    difference[i] = a - b;
  }
  e1_ = UnitOrEmpty(std::move(sum));
  e2_ = UnitOrEmpty(std::move(difference));
  const double gamma =
      gamma_ratio * std::max(std::fabs(lambda1_), std::fabs(lambda2_));
  if (!(gamma > 0.0) || !std::isfinite(gamma)) {
    e1_.clear();
    e2_.clear();
    return;
  }
  // det L = 1: log T = (log(l1 + g) + log(-l2 + g) + (d - 2) log g) / 2d.
  const double log_t =
      (std::log(lambda1_ + gamma) + std::log(-lambda2_ + gamma) +
       static_cast<double>(d - 2) * std::log(gamma)) /
      (2.0 * static_cast<double>(d));
  const double inverse_t = std::exp(-log_t);
  s1_ = std::sqrt(lambda1_ + gamma) * inverse_t;
  s2_ = std::sqrt(-lambda2_ + gamma) * inverse_t;
  s0_ = std::sqrt(gamma) * inverse_t;
  euclidean_ = false;
}

double GlmlMetric::SquaredDistance(std::span<const double> v) const {
  const double squared = Dot(v, v);
  if (euclidean_) return squared;
  double distance = s0_ * s0_ * squared;
  if (!e1_.empty()) {
    const double along = Dot(e1_, v);
    distance += (s1_ * s1_ - s0_ * s0_) * along * along;
  }
  if (!e2_.empty()) {
    const double along = Dot(e2_, v);
    distance += (s2_ * s2_ - s0_ * s0_) * along * along;
  }
  return distance;
}

GlmlMetric GlmlMetricAt(const OnlineRidge& gaussian, std::span<const double> x,
                        std::size_t target, double gamma_ratio) {
  const std::size_t d = gaussian.dim();
  std::vector<double> grad_y(d), direction(d);
  for (std::size_t j = 0; j < d; ++j) grad_y[j] = gaussian.slope(j, target);
  gaussian.DensityDirection(x, direction);
  return GlmlMetric(grad_y, direction, gamma_ratio);
}

GlmlMetric GlmlMetricScaled(const OnlineRidge& gaussian,
                            std::span<const double> raw_density_direction,
                            std::span<const double> scale, std::size_t target,
                            double gamma_ratio) {
  const std::size_t d = gaussian.dim();
  std::vector<double> grad_y(d), direction(d);
  for (std::size_t j = 0; j < d; ++j) {
    grad_y[j] = scale[j] * gaussian.slope(j, target);
    direction[j] = scale[j] * raw_density_direction[j];
  }
  return GlmlMetric(grad_y, direction, gamma_ratio);
}

}  // namespace streamreg
