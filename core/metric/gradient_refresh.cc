#include "core/metric/gradient_refresh.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/index/cover_tree.h"
#include "core/metric/batch_gradients.h"

namespace streamreg {

std::vector<std::uint64_t> GradientRefresh::EvaluatedSlots(const Job& job) {
  const std::size_t n = job.num_slots;
  const std::size_t stride = job.max_points == 0 || n <= job.max_points
                                 ? 1
                                 : (n + job.max_points - 1) / job.max_points;
  std::vector<std::uint64_t> slots;
  slots.reserve((n + stride - 1) / stride);
  for (std::size_t slot = 0; slot < n; slot += stride) slots.push_back(slot);
  return slots;
}

GradientStatistics GradientRefresh::Run(const Job& job, const Rows& rows,
                                        const Progress& progress,
                                        std::stop_token stop) {
  const std::size_t d = job.standardization.dim();
  const std::size_t m = job.num_targets;
  const std::size_t n = job.num_slots;
  std::vector<std::uint64_t> ids(n);
  for (std::size_t slot = 0; slot < n; ++slot) ids[slot] = slot;
  const std::vector<std::uint64_t> evaluated = EvaluatedSlots(job);
  GradientStatistics stats(d, m, job.outer_products);
  auto add = [&](const CoverTree& tree, const TargetLookup& targets) {
    AddBatchGradients(tree, evaluated, targets, job.kernel, job.bandwidth,
                      job.step, job.estimator, &stats, progress, stop);
    // A stride's sums stand for all n samples (GW eq. 2's mean over a
    // sample of the points: the same mean, estimated).
    if (evaluated.size() < n) {
      stats.Scale(static_cast<double>(n) /
                  static_cast<double>(evaluated.size()));
    }
  };
  if (rows.pointers != nullptr) {
    std::vector<const double*> x, y;
    x.reserve(n);
    y.reserve(n);
    rows.pointers(0, n, &x, &y);
    absl::StatusOr<CoverTree> tree =
        CoverTree::BuildReferencing(job.standardization.diagonal_map(), x, ids,
                                    CoverTree::InsertionOrder::kShuffled, stop);
    if (!tree.ok()) return stats;  // abandoned
    add(*tree, [&](std::uint64_t slot) { return y[slot]; });
    return stats;
  }
  std::vector<double> coordinates, targets;
  ReadMappedRows(n, rows.copy, job.standardization, &coordinates, &targets);
  absl::StatusOr<CoverTree> tree = CoverTree::Build(
      d, coordinates, ids, CoverTree::InsertionOrder::kShuffled, stop);
  if (!tree.ok()) return stats;  // abandoned
  add(*tree, [&](std::uint64_t slot) { return targets.data() + slot * m; });
  return stats;
}

void GradientRefresh::Start(Job job, Rows rows) {
  job_ = job;
  task_.Start("gradient-fit", [job = std::move(job),
                               rows = std::move(rows)](std::stop_token stop) {
    return Run(job, rows, {}, std::move(stop));
  });
}

void GradientRefresh::Resume(GradientStatistics result) {
  job_.reset();
  task_.Resume(std::move(result));
}

GradientStatistics GradientRefresh::Finish() {
  job_.reset();
  return task_.Finish();
}

void GradientRefresh::SaveJob(const Job& job, ByteWriter& out) {
  job.standardization.Save(out);
  out.U8(static_cast<std::uint8_t>(job.kernel));
  out.Double(job.bandwidth);
  out.Double(job.step);
  out.U64(job.num_targets);
  out.U8(job.outer_products ? 1 : 0);
  out.U64(job.num_slots);
}

bool GradientRefresh::LoadJob(ByteReader& in, std::size_t dim, Job* job) {
  std::optional<MetricTransform> standardization =
      MetricTransform::Load(in, dim);
  if (!standardization) return false;
  *job = Job{*std::move(standardization)};
  const std::uint8_t kernel = in.U8();
  if (kernel > static_cast<std::uint8_t>(Kernel::kTruncatedGaussian)) {
    return false;
  }
  job->kernel = static_cast<Kernel>(kernel);
  job->bandwidth = in.Double();
  job->step = in.Double();
  job->num_targets = in.U64();
  job->outer_products = in.U8() != 0;
  job->num_slots = in.U64();
  return in.ok();
}

}  // namespace streamreg
