#ifndef STREAMREG_CORE_METRIC_LEARNED_METRIC_H_
#define STREAMREG_CORE_METRIC_LEARNED_METRIC_H_

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/metric/gradient_statistics.h"
#include "core/metric/metric_transform.h"

namespace streamreg {

// kAuto is a model's choice, not a metric: per target, whichever of the
// candidates has the least honest error (CandidateMetrics). The order is
// that of the snapshots' encoding: new kinds go last.
enum class MetricKind {
  kEuclidean,
  kGradientWeights,
  kEgop,
  kAuto,
  kMlkr,
  kGlml,
};

// euclidean, gw, egop, auto, mlkr, glml.
absl::string_view MetricKindName(MetricKind kind);
absl::StatusOr<MetricKind> ParseMetricKind(absl::string_view name);

// The metrics a model of `kind` may keep an index in: for kAuto Euclidean,
// GW, EGOP, MLKR and GLML, in that order (ModelConfig::Candidates says which
// a model does); else `kind` alone.
std::vector<MetricKind> CandidateMetrics(MetricKind kind);
// Whether a model of `kind` estimates gradients (GW, EGOP, kAuto): MLKR
// learns its map from the samples themselves.
inline bool EstimatesGradients(MetricKind kind) {
  return kind == MetricKind::kGradientWeights || kind == MetricKind::kEgop ||
         kind == MetricKind::kAuto;
}
// Whether the gradient sums must keep outer products (EGOP or kAuto).
inline bool KeepsOuterProducts(MetricKind kind) {
  return kind == MetricKind::kEgop || kind == MetricKind::kAuto;
}

// One learned metric in the papers' terms, in standardized coordinates:
//  - gradient weights: weights[i] = W_i (Kpotufe & Boularias eq. 2);
//  - EGOP: matrix = E_n G_n(X) (Trivedi et al. §3.1), its spectral
//    decomposition V D V^T (eigenvalues descending, eigenvectors[i * d + r]
//    = component i of eigenvector r), and weights = its diagonal;
//  - MLKR: the map A (rank x d, map[r * d + i]) of Weinberger & Tesauro's
//    Metric Learning for Kernel Regression, matrix = A^T A (the squared
//    distance (x - x')^T A^T A (x - x')), its spectral decomposition, and
//    weights = its diagonal (each input's weight);
//  - GLML (Noh et al., Generative Local Metric Learning for Kernel
//    Regression): a metric per query, from a global Gaussian of (x, y)
//    (GlmlMetric); its index searches standardized Euclidean coordinates
//    (weights all 1), and `gradient` holds each target's gradient under the
//    Gaussian, Sigma_x^{-1} Sigma_xy in standardized inputs (gradient[t * d
//    + i]), the direction its metrics stretch along;
//  - Euclidean: weights all 1.
// A shared metric of several targets combines the standardized per-target
// estimates: sum_t W_t / sd(y_t), or sum_t EGOP_t / var(y_t) (the EGOP of
// the standardized targets), so each target counts alike whatever its units.
struct LearnedMetric {
  MetricKind kind = MetricKind::kEuclidean;
  std::vector<double> weights;
  std::vector<double> matrix;
  std::vector<double> eigenvalues;
  std::vector<double> eigenvectors;
  std::size_t rank = 0;  // MLKR: the rows of `map`
  std::vector<double> map;
  std::vector<double> gradient;  // GLML: per target, d values
};

// Selects which targets a metric is learned from.
inline constexpr std::size_t kAllTargets =
    std::numeric_limits<std::size_t>::max();

// The metric of `kind` (not kAuto or kMlkr: MlkrMap::Metric) for `target`, or
// shared over all targets when target == kAllTargets (target_scales[t] =
// standard deviation of target t). Without `with_spectrum` the EGOP's
// eigen-decomposition is left out (what TransformFor needs is the matrix; it
// decomposes the normalized one).
LearnedMetric EstimateMetric(MetricKind kind, const GradientStatistics& stats,
                             std::size_t target,
                             std::span<const double> target_scales,
                             bool with_spectrum = true);

// Fills metric->eigenvalues (descending, clamped at 0) and eigenvectors
// from its symmetric d x d matrix.
void DecomposeMatrix(std::size_t d, LearnedMetric* metric);

// The index coordinates of a metric, after standardizing by center/scale:
//  - GW: L = diag(sqrt(W_i / mean W));
//  - EGOP and MLKR: M' = M / (trace M / d) + ridge I = V D V^T,
//    L = D^{1/2} V^T (for MLKR, with ridge 0, the rotation of A normalized:
//    the same distances up to scale, zero rows beyond a low rank).
// Both are normalized to mean squared scale 1 (trace L^T L = d), so the
// bandwidths of a model mean the same in every metric (and before any
// gradient is known, when the metric is Euclidean). A metric with no
// information yet (all zero) maps to standardized Euclidean coordinates.
MetricTransform TransformFor(const LearnedMetric& metric,
                             std::vector<double> center,
                             std::vector<double> scale, double ridge);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_LEARNED_METRIC_H_
