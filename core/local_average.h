#ifndef STREAMREG_CORE_LOCAL_AVERAGE_H_
#define STREAMREG_CORE_LOCAL_AVERAGE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/kernel.h"
#include "core/neighbor.h"

namespace streamreg {

// The targets of a query's neighbours, gathered next to their distances:
// the input of every local-averaging regressor. Neighbours are sorted by
// (distance, id), as the index returns them.
class NeighborTargets {
 public:
  explicit NeighborTargets(std::size_t num_targets) : m_(num_targets) {}

  // Copies the neighbours and, for each, the m targets `lookup(id)` returns.
  template <class Lookup>
  void Gather(std::span<const Neighbor> sorted, Lookup&& lookup) {
    distances_.resize(sorted.size());
    targets_.resize(sorted.size() * m_);
    for (std::size_t j = 0; j < sorted.size(); ++j) {
      distances_[j] = sorted[j].distance;
      const double* y = lookup(sorted[j].id);
      for (std::size_t t = 0; t < m_; ++t) targets_[j * m_ + t] = y[t];
    }
  }

  std::size_t size() const { return distances_.size(); }
  std::size_t num_targets() const { return m_; }
  double distance(std::size_t j) const { return distances_[j]; }
  const double* targets(std::size_t j) const {
    return targets_.data() + j * m_;
  }
  // How many neighbours lie strictly closer than h (those with K > 0).
  std::size_t CountWithin(double h) const;

 private:
  std::size_t m_;
  std::vector<double> distances_;
  std::vector<double> targets_;
};

// A local average for all m targets: value, spread (the weighted standard
// deviation of the neighbours' targets around the value) and the number of
// neighbours with positive weight. neighbors == 0 means no sample fell
// within the bandwidth; value and spread are then the caller's fallback.
struct LocalAverage {
  std::vector<double> value;
  std::vector<double> spread;
  std::size_t neighbors = 0;
};

// Nadaraya–Watson estimate at bandwidth h (Kpotufe & Boularias 2012, eq. 1):
// sum_i K(rho(x, X_i)/h) Y_i / sum_i K(rho(x, X_i)/h). Leaves `out` with
// neighbors == 0 (and values untouched) when no sample is within h.
void KernelAverageAt(Kernel kernel, double h, const NeighborTargets& near,
                     LocalAverage* out);

// Mean of the k nearest neighbours' targets (fewer if fewer are stored).
void NearestAverageAt(std::size_t k, const NeighborTargets& near,
                      LocalAverage* out);

// Values only, for every bandwidth of an ascending grid at once: row g of
// `values` (grid.size() x m) is KernelAverageAt(grid[g]), or `fallback` where
// no sample lies within grid[g]. The box kernel costs one pass (prefix sums);
// the others one pass per bandwidth over the neighbours within it.
void KernelAverageGrid(Kernel kernel, std::span<const double> grid,
                       const NeighborTargets& near,
                       std::span<const double> fallback,
                       std::span<double> values);

// Values for every k of an ascending grid at once (prefix sums); `fallback`
// when nothing is stored.
void NearestAverageGrid(std::span<const std::size_t> grid,
                        const NeighborTargets& near,
                        std::span<const double> fallback,
                        std::span<double> values);

}  // namespace streamreg

#endif  // STREAMREG_CORE_LOCAL_AVERAGE_H_
