#include "core/metric/glml_search.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "core/index/neighbor_sort.h"
#include "core/index/point_validation.h"

namespace streamreg {

namespace {

absl::Status Validate(const CoverTree& tree, std::span<const double> query,
                      const GlmlMetric& metric) {
  if (metric.dim() != tree.dim()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GLML search: a metric of %d dimensions in a tree of %d", metric.dim(),
        tree.dim()));
  }
  return ValidatePoint(query, tree.dim(), "query");
}

}  // namespace

double GlmlDistance::operator()(std::uint64_t id) {
  const std::span<const double> coordinates = tree_.PointOf(id, point_.data());
  for (std::size_t i = 0; i < difference_.size(); ++i) {
    difference_[i] = coordinates[i] - query_[i];
  }
  return std::sqrt(metric_.SquaredDistance(difference_));
}

absl::Status GlmlKnn(const CoverTree& tree, std::span<const double> query,
                     const GlmlMetric& metric, std::size_t k,
                     std::vector<Neighbor>* out) {
  if (absl::Status valid = Validate(tree, query, metric); !valid.ok()) {
    return valid;
  }
  out->clear();
  if (tree.empty() || k == 0) return absl::OkStatus();
  KnnRules rules(k, out);
  SearchUnderGlml(tree, query, metric, rules);
  rules.Finish();
  return absl::OkStatus();
}

absl::Status GlmlRange(const CoverTree& tree, std::span<const double> query,
                       const GlmlMetric& metric, double radius,
                       std::vector<Neighbor>* out) {
  if (absl::Status valid = Validate(tree, query, metric); !valid.ok()) {
    return valid;
  }
  // The factor shrunk as RescoredRules does: rounding only widens it.
  const double factor = metric.LowerBoundFactor() * (1.0 - 1e-9);
  if (absl::Status found = tree.RangeUnordered(query, radius / factor, out);
      !found.ok()) {
    return found;
  }
  GlmlDistance distance(tree, query, metric);
  std::size_t kept = 0;
  for (const Neighbor& neighbor : *out) {
    const double rescored = distance(neighbor.id);
    if (rescored <= radius) (*out)[kept++] = {neighbor.id, rescored};
  }
  out->resize(kept);
  SortNeighbors(*out);
  return absl::OkStatus();
}

}  // namespace streamreg
