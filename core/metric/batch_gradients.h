#ifndef STREAMREG_CORE_METRIC_BATCH_GRADIENTS_H_
#define STREAMREG_CORE_METRIC_BATCH_GRADIENTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stop_token>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/index/neighbor.h"
#include "core/index/shell_order.h"
#include "core/metric/gradient_estimator.h"
#include "core/metric/gradient_statistics.h"
#include "core/regression/kernel.h"

namespace streamreg {

// Returns the m targets of the sample stored under an index id.
using TargetLookup = std::function<const double*(std::uint64_t id)>;

// Scratch space of EstimateGradientAt, reused from call to call.
struct NeighborScratch {
  std::vector<Neighbor> found;
  ShellOrder order;
  std::vector<double> point;  // a neighbour's coordinates (CoverTree::PointOf)
};

// The gradient estimate at z (coordinates of `tree`, standardized
// Euclidean) from every sample the tree holds: one range search of radius
// h + t, then GradientEstimator. Samples are added in id order, so the
// result does not depend on the tree's shape.
void EstimateGradientAt(const CoverTree& tree, std::span<const double> z,
                        const TargetLookup& targets, Kernel kernel, double h,
                        double t, GradientEstimator* estimator,
                        NeighborScratch* scratch, GradientEstimate* out);

// The papers' batch estimator (GW eq. 2; Trivedi et al. §3.1): the
// gradient estimate (of `kind`) at every sample `ids` names, each from all
// the samples in `tree` (itself included), added to `stats` in the order of
// `ids`.
// `progress(done, total)` is called now and then when given. Stops early,
// with part of the sums, once `stop` is requested (an abandoned refresh).
void AddBatchGradients(
    const CoverTree& tree, std::span<const std::uint64_t> ids,
    const TargetLookup& targets, Kernel kernel, double h, double t,
    GradientEstimatorKind kind, GradientStatistics* stats,
    const std::function<void(std::size_t, std::size_t)>& progress = {},
    std::stop_token stop = {});

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_BATCH_GRADIENTS_H_
