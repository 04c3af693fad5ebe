#ifndef STREAMREG_CORE_REGRESSION_LOCAL_AVERAGE_H_
#define STREAMREG_CORE_REGRESSION_LOCAL_AVERAGE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/index/neighbor.h"
#include "core/index/shell_order.h"
#include "core/regression/kernel.h"

namespace streamreg {

// The targets of a query's neighbours, gathered next to their distances:
// the input of every local-averaging regressor. The neighbours come either
// sorted by (distance, id) (as k-NN searches return them) or in ShellOrder
// for a bandwidth grid; in both, the neighbours within any of the grid's
// bandwidths are a prefix of the list, in an order that does not depend on
// the index.
class NeighborTargets {
 public:
  explicit NeighborTargets(std::size_t num_targets) : m_(num_targets) {}

  // Copies the neighbours, sorted by (distance, id), and for each the m
  // targets `lookup(id)` returns.
  template <class Lookup>
  void Gather(std::span<const Neighbor> sorted, Lookup&& lookup) {
    radii_ = {};
    dim_ = 0;
    Copy(sorted, lookup);
  }

  // Gather, and also each neighbour's offset from the query, point_of(id) -
  // query (query.size() coordinates each, point_of(id) returning as many):
  // the input of the local linear regressor.
  template <class Lookup, class PointOf>
  void GatherWithOffsets(std::span<const Neighbor> sorted,
                         std::span<const double> query, Lookup&& lookup,
                         PointOf&& point_of) {
    Gather(sorted, lookup);
    dim_ = query.size();
    offsets_.resize(sorted.size() * dim_);
    for (std::size_t j = 0; j < sorted.size(); ++j) {
      SetOffset(j, point_of(sorted[j].id), query);
    }
  }

  // Gather, or GatherWithOffsets if `shared` holds offsets, of another
  // list of neighbours of the same `query` as `shared`'s: a neighbour
  // `shared` holds (its list `shared_sorted`, as it was gathered) is
  // copied from it, not looked up again. Both lists sorted by (distance, id):
  // the learner's k nearest and k nearest older samples, which share all but
  // the recent ones, so each shared neighbour's targets (the base's residuals)
  // and offsets are computed once.
  template <class Lookup, class PointOf>
  void GatherSharing(std::span<const Neighbor> sorted,
                     const NeighborTargets& shared,
                     std::span<const Neighbor> shared_sorted,
                     std::span<const double> query, Lookup&& lookup,
                     PointOf&& point_of) {
    radii_ = {};
    dim_ = shared.dim_;
    distances_.resize(sorted.size());
    targets_.resize(sorted.size() * m_);
    offsets_.resize(sorted.size() * dim_);
    std::size_t p = 0;
    for (std::size_t j = 0; j < sorted.size(); ++j) {
      const Neighbor& neighbor = sorted[j];
      distances_[j] = neighbor.distance;
      while (p < shared_sorted.size() &&
             NeighborLess(shared_sorted[p], neighbor)) {
        ++p;
      }
      double* targets = targets_.data() + j * m_;
      if (p < shared_sorted.size() && shared_sorted[p].id == neighbor.id) {
        std::copy_n(shared.targets(p), m_, targets);
        std::copy_n(shared.offsets(p), dim_, offsets_.data() + j * dim_);
        continue;
      }
      std::copy_n(lookup(neighbor.id), m_, targets);
      if (dim_ != 0) SetOffset(j, point_of(neighbor.id), query);
    }
  }

  // Puts a range search's result (in any order) into ShellOrder for
  // `radii`, then gathers it like Gather. `radii` must outlive the
  // gathered list.
  template <class Lookup>
  void GatherInShells(std::span<const double> radii,
                      std::vector<Neighbor>* neighbors, Lookup&& lookup) {
    shell_order_.Apply(radii, neighbors);
    radii_ = radii;
    dim_ = 0;
    Copy(*neighbors, lookup);
  }

  std::size_t size() const { return distances_.size(); }
  std::size_t num_targets() const { return m_; }
  double distance(std::size_t j) const { return distances_[j]; }
  const double* targets(std::size_t j) const {
    return targets_.data() + j * m_;
  }
  // The offsets of GatherWithOffsets: dim() coordinates per neighbour
  // (dim() == 0 after the other gathers).
  std::size_t dim() const { return dim_; }
  const double* offsets(std::size_t j) const {
    return offsets_.data() + j * dim_;
  }
  // The length of the shortest prefix holding every neighbour strictly
  // closer than h: exactly those neighbours when the list is sorted by
  // distance or when h is one of the shell radii (otherwise the prefix
  // also holds some farther ones, which every kernel weighs 0).
  std::size_t PrefixWithin(double h) const;
  // The mean distance of the first `count` neighbours (+inf for none).
  double MeanDistance(std::size_t count) const;

 private:
  template <class Lookup>
  void Copy(std::span<const Neighbor> neighbors, Lookup& lookup) {
    distances_.resize(neighbors.size());
    targets_.resize(neighbors.size() * m_);
    for (std::size_t j = 0; j < neighbors.size(); ++j) {
      distances_[j] = neighbors[j].distance;
      const double* y = lookup(neighbors[j].id);
      for (std::size_t t = 0; t < m_; ++t) targets_[j * m_ + t] = y[t];
    }
  }

  // Neighbour j's offset from the query, point - query (dim_ of each).
  void SetOffset(std::size_t j, const double* point,
                 std::span<const double> query) {
    for (std::size_t i = 0; i < dim_; ++i) {
      offsets_[j * dim_ + i] = point[i] - query[i];
    }
  }

  std::size_t m_;
  std::vector<double> distances_;
  std::vector<double> targets_;
  std::size_t dim_ = 0;
  std::vector<double> offsets_;  // [j * dim_ + i]
  // The shell radii when gathered in ShellOrder, else empty.
  std::span<const double> radii_;
  ShellOrder shell_order_;
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
// neighbors == 0 (and values untouched) when no sample is within h. Only
// the listed targets' values and spreads are computed (all if none are
// listed; the others are left 0).
void KernelAverageAt(Kernel kernel, double h, const NeighborTargets& near,
                     LocalAverage* out,
                     std::span<const std::size_t> targets = {});

// Mean of the k nearest neighbours' targets (fewer if fewer are stored),
// for the listed targets as KernelAverageAt.
void NearestAverageAt(std::size_t k, const NeighborTargets& near,
                      LocalAverage* out,
                      std::span<const std::size_t> targets = {});

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

#endif  // STREAMREG_CORE_REGRESSION_LOCAL_AVERAGE_H_
