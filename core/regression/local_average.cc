#include "core/regression/local_average.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace streamreg {
namespace {

// Weighted mean and spread, for the listed targets, of the first `count`
// neighbours with weights from `weight(j)`.
template <class Weight>
void WeightedAverage(const NeighborTargets& near, std::size_t count,
                     Weight&& weight, std::span<const std::size_t> targets,
                     LocalAverage* out) {
  const std::size_t m = near.num_targets();
  out->value.assign(m, 0.0);
  out->spread.assign(m, 0.0);
  double total = 0.0;
  std::size_t positive = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const double w = weight(j);
    if (!(w > 0.0)) continue;
    ++positive;
    total += w;
    const double* y = near.targets(j);
    for (std::size_t t : targets) out->value[t] += w * y[t];
  }
  out->neighbors = positive;
  if (positive == 0) return;
  for (std::size_t t : targets) out->value[t] /= total;
  for (std::size_t j = 0; j < count; ++j) {
    const double w = weight(j);
    if (!(w > 0.0)) continue;
    const double* y = near.targets(j);
    for (std::size_t t : targets) {
      const double deviation = y[t] - out->value[t];
      out->spread[t] += w * deviation * deviation;
    }
  }
  for (std::size_t t : targets) {
    out->spread[t] = std::sqrt(out->spread[t] / total);
  }
}

// `targets`, or all m when it is empty (`all` holds them then).
std::span<const std::size_t> TargetsOrAll(std::span<const std::size_t> targets,
                                          std::size_t m,
                                          std::vector<std::size_t>* all) {
  if (!targets.empty()) return targets;
  all->resize(m);
  std::iota(all->begin(), all->end(), std::size_t{0});
  return *all;
}

// Row g of `values` := mean of the first count targets, or the fallback.
void PrefixMean(const std::vector<double>& prefix, std::size_t count,
                std::size_t m, std::span<const double> fallback, double* row) {
  if (count == 0) {
    std::copy(fallback.begin(), fallback.end(), row);
    return;
  }
  const double* sums = prefix.data() + count * m;
  for (std::size_t t = 0; t < m; ++t) {
    row[t] = sums[t] / static_cast<double>(count);
  }
}

// prefix[(j + 1) m + t] = sum of target t over the first j + 1 neighbours.
std::vector<double> PrefixSums(const NeighborTargets& near, std::size_t count) {
  const std::size_t m = near.num_targets();
  std::vector<double> prefix((count + 1) * m, 0.0);
  for (std::size_t j = 0; j < count; ++j) {
    const double* y = near.targets(j);
    for (std::size_t t = 0; t < m; ++t) {
      prefix[(j + 1) * m + t] = prefix[j * m + t] + y[t];
    }
  }
  return prefix;
}

}  // namespace

std::size_t NeighborTargets::PrefixWithin(double h) const {
  if (radii_.empty()) {
    return static_cast<std::size_t>(
        std::lower_bound(distances_.begin(), distances_.end(), h) -
        distances_.begin());
  }
  // The first shell radius >= h bounds a prefix holding all within h.
  const std::size_t g =
      std::lower_bound(radii_.begin(), radii_.end(), h) - radii_.begin();
  return g == radii_.size() ? size() : shell_order_.CountWithin(g);
}

double NeighborTargets::MeanDistance(std::size_t count) const {
  count = std::min(count, distances_.size());
  if (count == 0) return std::numeric_limits<double>::infinity();
  return std::accumulate(distances_.begin(), distances_.begin() + count, 0.0) /
         static_cast<double>(count);
}

void KernelAverageAt(Kernel kernel, double h, const NeighborTargets& near,
                     LocalAverage* out, std::span<const std::size_t> targets) {
  std::vector<std::size_t> all;
  WeightedAverage(
      near, near.PrefixWithin(h),
      [&](std::size_t j) { return KernelWeight(kernel, near.distance(j) / h); },
      TargetsOrAll(targets, near.num_targets(), &all), out);
}

void NearestAverageAt(std::size_t k, const NeighborTargets& near,
                      LocalAverage* out, std::span<const std::size_t> targets) {
  std::vector<std::size_t> all;
  WeightedAverage(
      near, std::min(k, near.size()), [](std::size_t) { return 1.0; },
      TargetsOrAll(targets, near.num_targets(), &all), out);
}

void KernelAverageGrid(Kernel kernel, std::span<const double> grid,
                       const NeighborTargets& near,
                       std::span<const double> fallback,
                       std::span<double> values) {
  const std::size_t m = near.num_targets();
  if (kernel == Kernel::kBox) {
    const std::size_t widest =
        grid.empty() ? 0 : near.PrefixWithin(grid.back());
    const std::vector<double> prefix = PrefixSums(near, widest);
    for (std::size_t g = 0; g < grid.size(); ++g) {
      PrefixMean(prefix, near.PrefixWithin(grid[g]), m, fallback,
                 values.data() + g * m);
    }
    return;
  }
  for (std::size_t g = 0; g < grid.size(); ++g) {
    double* row = values.data() + g * m;
    const double h = grid[g];
    const std::size_t count = near.PrefixWithin(h);
    std::fill(row, row + m, 0.0);
    double total = 0.0;
    for (std::size_t j = 0; j < count; ++j) {
      const double w = KernelWeight(kernel, near.distance(j) / h);
      total += w;
      const double* y = near.targets(j);
      for (std::size_t t = 0; t < m; ++t) row[t] += w * y[t];
    }
    if (total > 0.0) {
      for (std::size_t t = 0; t < m; ++t) row[t] /= total;
    } else {
      std::copy(fallback.begin(), fallback.end(), row);
    }
  }
}

void NearestAverageGrid(std::span<const std::size_t> grid,
                        const NeighborTargets& near,
                        std::span<const double> fallback,
                        std::span<double> values) {
  const std::size_t m = near.num_targets();
  const std::size_t widest =
      grid.empty() ? 0 : std::min(grid.back(), near.size());
  const std::vector<double> prefix = PrefixSums(near, widest);
  for (std::size_t g = 0; g < grid.size(); ++g) {
    PrefixMean(prefix, std::min(grid[g], near.size()), m, fallback,
               values.data() + g * m);
  }
}

}  // namespace streamreg
