#ifndef STREAMREG_CORE_METRIC_GLML_SEARCH_H_
#define STREAMREG_CORE_METRIC_GLML_SEARCH_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/index/neighbor.h"
#include "core/metric/glml_metric.h"

namespace streamreg {

// The k nearest points of `tree` to `query` under GLML's metric at the
// query (the tree's own coordinates being the space the metric is
// expressed in), exactly: one traversal of the tree whose bound is the
// k-th metric distance over the metric's least singular value
// (RescoredKnnRules), each visited point near enough rescored under the
// metric. Sorted by (metric distance, id); fewer if the tree holds fewer.
// InvalidArgument for a metric of another dimension than the tree's, or a
// query that is not a valid point of it (ValidatePoint).
absl::Status GlmlKnn(const CoverTree& tree, std::span<const double> query,
                     const GlmlMetric& metric, std::size_t k,
                     std::vector<Neighbor>* out);

// Every point of `tree` within metric distance `radius` of `query`
// (inclusive) under GLML's metric at the query: the Euclidean ball of
// radius / (least singular value) holds them all, and each point in it is
// rescored. Sorted by (metric distance, id). Errors as GlmlKnn.
absl::Status GlmlRange(const CoverTree& tree, std::span<const double> query,
                       const GlmlMetric& metric, double radius,
                       std::vector<Neighbor>* out);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_GLML_SEARCH_H_
