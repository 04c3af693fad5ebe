#include "core/metric/batch_gradients.h"

#include <algorithm>
#include <cassert>

namespace streamreg {

void EstimateGradientAt(const CoverTree& tree, std::span<const double> z,
                        const TargetLookup& targets, Kernel kernel, double h,
                        double t, GradientEstimator* estimator,
                        NeighborScratch* scratch, GradientEstimate* out) {
  estimator->Begin(z, kernel, h, t);
  const absl::Status status = tree.RangeUnordered(z, h + t, &scratch->found);
  assert(status.ok());
  (void)status;
  scratch->order.Apply({}, &scratch->found);  // no radii: by id
  scratch->point.resize(tree.dim());
  for (const Neighbor& neighbor : scratch->found) {
    estimator->Add(tree.PointOf(neighbor.id, scratch->point.data()).data(),
                   targets(neighbor.id));
  }
  estimator->Finish(out);
}

void AddBatchGradients(
    const CoverTree& tree, std::span<const std::uint64_t> ids,
    const TargetLookup& targets, Kernel kernel, double h, double t,
    GradientEstimatorKind kind, GradientStatistics* stats,
    const std::function<void(std::size_t, std::size_t)>& progress,
    std::stop_token stop) {
  GradientEstimator estimator(tree.dim(), stats->num_targets(), kind);
  GradientEstimate estimate;
  NeighborScratch scratch;
  std::vector<double> z(tree.dim());
  std::vector<double> mapped(tree.dim());  // PointOf's scratch
  const std::size_t every = std::max<std::size_t>(1, ids.size() / 100);
  for (std::size_t j = 0; j < ids.size(); ++j) {
    if (stop.stop_requested()) return;
    const std::span<const double> point = tree.PointOf(ids[j], mapped.data());
    z.assign(point.begin(), point.end());
    EstimateGradientAt(tree, z, targets, kernel, h, t, &estimator, &scratch,
                       &estimate);
    stats->Add(estimate);
    if (progress && (j + 1) % every == 0) progress(j + 1, ids.size());
  }
  if (progress) progress(ids.size(), ids.size());
}

}  // namespace streamreg
