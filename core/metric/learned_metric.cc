#include "core/metric/learned_metric.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/enum_names.h"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::vector<double> SharedWeights(const GradientStatistics& stats,
                                  std::span<const double> target_scales) {
  std::vector<double> weights(stats.dim(), 0.0);
  for (std::size_t t = 0; t < stats.num_targets(); ++t) {
    const std::vector<double> own = stats.GradientWeights(t);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      weights[i] += own[i] / target_scales[t];
    }
  }
  return weights;
}

std::vector<double> SharedEgop(const GradientStatistics& stats,
                               std::span<const double> target_scales) {
  const std::size_t d = stats.dim();
  std::vector<double> matrix(d * d, 0.0);
  for (std::size_t t = 0; t < stats.num_targets(); ++t) {
    const std::vector<double> own = stats.Egop(t);
    const double variance = target_scales[t] * target_scales[t];
    for (std::size_t k = 0; k < matrix.size(); ++k) {
      matrix[k] += own[k] / variance;
    }
  }
  return matrix;
}

}  // namespace

void DecomposeMatrix(std::size_t d, LearnedMetric* metric) {
  const RowMatrix matrix =
      Eigen::Map<const RowMatrix>(metric->matrix.data(), d, d);
  Eigen::SelfAdjointEigenSolver<RowMatrix> solver(matrix);
  // Eigen sorts ascending; report descending.
  metric->eigenvalues.assign(d, 0.0);
  metric->eigenvectors.assign(d * d, 0.0);
  for (std::size_t r = 0; r < d; ++r) {
    const std::size_t source = d - 1 - r;
    metric->eigenvalues[r] = std::max(0.0, solver.eigenvalues()(source));
    for (std::size_t i = 0; i < d; ++i) {
      metric->eigenvectors[i * d + r] = solver.eigenvectors()(i, source);
    }
  }
}

absl::string_view MetricKindName(MetricKind kind) {
  switch (kind) {
    case MetricKind::kEuclidean:
      return "euclidean";
    case MetricKind::kGradientWeights:
      return "gw";
    case MetricKind::kEgop:
      return "egop";
    case MetricKind::kAuto:
      return "auto";
    case MetricKind::kMlkr:
      return "mlkr";
    case MetricKind::kGlml:
      return "glml";
  }
  return "unknown";
}

absl::StatusOr<MetricKind> ParseMetricKind(absl::string_view name) {
  return ParseEnumName(
      "metric", name,
      {MetricKind::kEuclidean, MetricKind::kGradientWeights, MetricKind::kEgop,
       MetricKind::kAuto, MetricKind::kMlkr, MetricKind::kGlml},
      &MetricKindName);
}

std::vector<MetricKind> CandidateMetrics(MetricKind kind) {
  if (kind != MetricKind::kAuto) return {kind};
  return {MetricKind::kEuclidean, MetricKind::kGradientWeights,
          MetricKind::kEgop, MetricKind::kMlkr, MetricKind::kGlml};
}

LearnedMetric EstimateMetric(MetricKind kind, const GradientStatistics& stats,
                             std::size_t target,
                             std::span<const double> target_scales,
                             bool with_spectrum) {
  const std::size_t d = stats.dim();
  LearnedMetric metric;
  metric.kind = kind;
  switch (kind) {
    case MetricKind::kEuclidean:
    case MetricKind::kAuto:  // never estimated as such (CandidateMetrics)
    case MetricKind::kGlml:  // per query (GlmlMetric); its index's are these
      metric.weights.assign(d, 1.0);
      return metric;
    case MetricKind::kMlkr:  // the gradients say nothing of it (MlkrMap)
      metric.weights.assign(d, 0.0);
      return metric;
    case MetricKind::kGradientWeights:
      metric.weights = target == kAllTargets
                           ? SharedWeights(stats, target_scales)
                           : stats.GradientWeights(target);
      return metric;
    case MetricKind::kEgop:
      metric.matrix = target == kAllTargets ? SharedEgop(stats, target_scales)
                                            : stats.Egop(target);
      metric.weights.resize(d);
      for (std::size_t i = 0; i < d; ++i) {
        metric.weights[i] = metric.matrix[i * d + i];
      }
      if (with_spectrum) DecomposeMatrix(d, &metric);
      return metric;
  }
  return metric;
}

MetricTransform TransformFor(const LearnedMetric& metric,
                             std::vector<double> center,
                             std::vector<double> scale, double ridge) {
  const std::size_t d = center.size();
  const double total =
      std::accumulate(metric.weights.begin(), metric.weights.end(), 0.0);
  const bool learned = metric.kind == MetricKind::kGradientWeights ||
                       metric.kind == MetricKind::kEgop ||
                       metric.kind == MetricKind::kMlkr;
  if (!learned || !(total > 0.0) || !std::isfinite(total)) {
    return MetricTransform::Standardizing(std::move(center), std::move(scale));
  }
  const double mean = total / static_cast<double>(d);
  if (metric.kind == MetricKind::kGradientWeights) {
    std::vector<double> roots(d);
    for (std::size_t i = 0; i < d; ++i) {
      roots[i] = std::sqrt(metric.weights[i] / mean);
    }
    return MetricTransform::Diagonal(std::move(center), std::move(scale),
                                     std::move(roots));
  }
  // EGOP and MLKR: the trace of M is the sum of its diagonal (= total).
  LearnedMetric normalized;
  normalized.matrix.resize(d * d);
  for (std::size_t k = 0; k < d * d; ++k) {
    normalized.matrix[k] = metric.matrix[k] / mean;
  }
  for (std::size_t i = 0; i < d; ++i) normalized.matrix[i * d + i] += ridge;
  DecomposeMatrix(d, &normalized);
  // Rescale so that trace L^T L = sum of eigenvalues = d.
  const double eigen_total = std::accumulate(normalized.eigenvalues.begin(),
                                             normalized.eigenvalues.end(), 0.0);
  const double rescale = static_cast<double>(d) / eigen_total;
  std::vector<double> matrix(d * d);
  for (std::size_t r = 0; r < d; ++r) {
    const double root = std::sqrt(normalized.eigenvalues[r] * rescale);
    for (std::size_t i = 0; i < d; ++i) {
      matrix[r * d + i] = root * normalized.eigenvectors[i * d + r];
    }
  }
  return MetricTransform::Dense(std::move(center), std::move(scale),
                                std::move(matrix));
}

}  // namespace streamreg
