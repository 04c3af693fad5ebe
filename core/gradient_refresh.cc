#include "core/gradient_refresh.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <utility>

#include "core/batch_gradients.h"
#include "core/cover_tree.h"

namespace streamreg {
namespace {

// Rows copied per call to CopyRows (the owner's lock is held per call).
constexpr std::size_t kCopyChunk = 4096;

}  // namespace

GradientRefresh::~GradientRefresh() {
  if (worker_.joinable()) worker_.join();
}

GradientStatistics GradientRefresh::Run(const Job& job,
                                        const CopyRows& copy_rows,
                                        const Progress& progress) {
  const std::size_t d = job.standardization.dim();
  const std::size_t m = job.num_targets;
  const std::size_t n = job.num_slots;
  std::vector<double> coordinates(n * d), targets(n * m);
  std::vector<double> x, y;
  for (std::size_t begin = 0; begin < n; begin += kCopyChunk) {
    const std::size_t end = std::min(n, begin + kCopyChunk);
    copy_rows(begin, end, &x, &y);
    for (std::size_t slot = begin; slot < end; ++slot) {
      job.standardization.Apply(
          std::span<const double>(x.data() + (slot - begin) * d, d),
          std::span<double>(coordinates.data() + slot * d, d));
    }
    std::copy(y.begin(), y.end(), targets.begin() + begin * m);
  }
  std::vector<std::uint64_t> ids(n);
  for (std::size_t slot = 0; slot < n; ++slot) ids[slot] = slot;
  absl::StatusOr<CoverTree> tree = CoverTree::Build(d, coordinates, ids);
  assert(tree.ok());
  GradientStatistics stats(d, m, job.outer_products);
  AddBatchGradients(
      *tree, ids, [&](std::uint64_t slot) { return targets.data() + slot * m; },
      job.kernel, job.bandwidth, job.step, &stats, progress);
  return stats;
}

void GradientRefresh::Start(Job job, CopyRows copy_rows) {
  if (worker_.joinable()) worker_.join();
  running_ = true;
  worker_ = std::thread(
      [this, job = std::move(job), copy_rows = std::move(copy_rows)] {
        result_.emplace(Run(job, copy_rows));
      });
}

GradientStatistics GradientRefresh::Finish() {
  assert(worker_.joinable());
  worker_.join();
  running_ = false;
  GradientStatistics stats = std::move(*result_);
  result_.reset();
  return stats;
}

}  // namespace streamreg
