#ifndef STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_H_
#define STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_H_

#include <cstddef>
#include <span>

#include "core/regression/local_average.h"
#include "core/regression/local_linear_equations.h"

namespace streamreg {

// Local linear regression over the k nearest neighbours (Cleveland's LOESS
// of degree 1 with equal weights; Fan & Gijbels, "Local Polynomial Modelling
// and Its Applications", 1996, §2.2): at a query z, the neighbours' targets
// are fit by y_j ~ a + b^T (z_j - z), minimizing
//   sum_j (y_j - a - b^T (z_j - z))^2 + ridge |b|^2
// (the intercept is not shrunk), and the prediction is a. Unlike a local
// average it follows the slope, so it extrapolates to the edge of the
// visited region instead of flattening there. The fit solves the normal
// equations, (d + 1) x (d + 1), by Cholesky (LocalLinearEquations); `near` must
// be gathered with offsets (NeighborTargets::GatherWithOffsets), sorted by
// distance.

// Value and spread (the root mean squared residual of the fit) at k (fewer
// if fewer are gathered) for the listed targets (all if none are listed;
// the others are left 0); neighbors == 0 when nothing is gathered.
void LocalLinearAt(std::size_t k, double ridge, const NeighborTargets& near,
                   LocalAverage* out,
                   std::span<const std::size_t> targets = {});

// Fits at ascending k over one gathered list of neighbours, the normal
// equations extended from one k to the next (one pass over the list for
// all of them, as LocalLinearGrid): FitAt(k) gives what LocalLinearAt(k)
// gives, up to rounding (the sums are added in another order). For a
// prediction that needs several k (ModelConfig::combine). `near` must
// outlive it.
class LocalLinearPrefix {
 public:
  LocalLinearPrefix(const NeighborTargets& near, double ridge);
  // k at least the previous call's.
  void FitAt(std::size_t k, LocalAverage* out,
             std::span<const std::size_t> targets = {});

 private:
  const NeighborTargets& near_;
  double ridge_;
  LocalLinearEquations system_;
};

// Values only, for every k of an ascending grid at once: the normal
// equations are accumulated in one pass over the neighbours and solved once
// per k. Row g of `values` (grid.size() x m) is LocalLinearAt(grid[g]), or
// `fallback` when nothing is gathered.
void LocalLinearGrid(std::span<const std::size_t> grid, double ridge,
                     const NeighborTargets& near,
                     std::span<const double> fallback,
                     std::span<double> values);

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_H_
