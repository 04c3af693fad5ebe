#ifndef STREAMREG_CORE_METRIC_GLML_SEARCH_H_
#define STREAMREG_CORE_METRIC_GLML_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/index/neighbor.h"
#include "core/index/search_rules.h"
#include "core/metric/glml_metric.h"

namespace streamreg {

// A stored point's distance to a query under GLML's metric at the query (the
// tree's own coordinates being the space the metric is expressed in).
class GlmlDistance {
 public:
  GlmlDistance(const CoverTree& tree, std::span<const double> query,
               const GlmlMetric& metric)
      : tree_(tree),
        query_(query),
        metric_(metric),
        point_(tree.dim()),
        difference_(tree.dim()) {}

  double operator()(std::uint64_t id);

 private:
  const CoverTree& tree_;
  std::span<const double> query_;
  const GlmlMetric& metric_;
  std::vector<double> point_;
  std::vector<double> difference_;
};

// Runs `rules` — any search rules, given distances under GLML's metric at
// `query` — in one traversal of `tree` (RescoredRules): exact, since the
// metric's distances are at least its least singular value times the
// tree's. The query and metric must fit the tree (GlmlKnn checks).
template <SearchRules Rules>
void SearchUnderGlml(const CoverTree& tree, std::span<const double> query,
                     const GlmlMetric& metric, Rules& rules) {
  GlmlDistance distance(tree, query, metric);
  RescoredRules rescored(rules, distance, metric.LowerBoundFactor());
  tree.Search(query.data(), rescored);
}

// The k nearest points of `tree` to `query` under GLML's metric at the
// query (the tree's own coordinates being the space the metric is
// expressed in), exactly: one traversal of the tree whose bound is the
// k-th metric distance over the metric's least singular value
// (SearchUnderGlml), each visited point near enough rescored under the
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
