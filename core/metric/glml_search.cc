#include "core/metric/glml_search.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "core/index/point_validation.h"
#include "core/index/search_rules.h"

namespace streamreg {

absl::Status GlmlKnn(const CoverTree& tree, std::span<const double> query,
                     const GlmlMetric& metric, std::size_t k,
                     std::vector<Neighbor>* out) {
  if (metric.dim() != tree.dim()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GLML search: a metric of %d dimensions in a tree of %d", metric.dim(),
        tree.dim()));
  }
  if (absl::Status valid = ValidatePoint(query, tree.dim(), "query");
      !valid.ok()) {
    return valid;
  }
  out->clear();
  if (tree.empty() || k == 0) return absl::OkStatus();
  std::vector<double> point(tree.dim());
  std::vector<double> difference(tree.dim());
  const auto distance = [&](std::uint64_t id) {
    const std::span<const double> coordinates = tree.PointOf(id, point.data());
    for (std::size_t i = 0; i < difference.size(); ++i) {
      difference[i] = coordinates[i] - query[i];
    }
    return std::sqrt(metric.SquaredDistance(difference));
  };
  RescoredKnnRules rules(k, out, distance, metric.LowerBoundFactor());
  tree.Search(query.data(), rules);
  rules.Finish();
  return absl::OkStatus();
}

}  // namespace streamreg
