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
//
// A fit may use only the first r coordinates of the offsets (z_j - z): in
// a learned metric's coordinates, ordered by the metric's weight (MLKR's
// and the EGOP's eigen-directions), the slope is then fit along the
// directions that matter most, with fewer unknowns from the same k
// neighbours, at (r / d)^2 of the cost.

// A point of the local linear regressor's grid: the k nearest neighbours
// (fewer if fewer are gathered), fit over the first `coordinates`
// coordinates of their offsets (all of them if it is 0 or d or more).
struct LocalLinearFit {
  std::size_t k = 0;
  std::size_t coordinates = 0;
};

// Value and spread (the root mean squared residual of the fit) of `fit` for
// the listed targets (all if none are listed; the others are left 0);
// neighbors == 0 when nothing is gathered.
void LocalLinearAt(LocalLinearFit fit, double ridge,
                   const NeighborTargets& near, LocalAverage* out,
                   std::span<const std::size_t> targets = {});

// Fits at ascending k over one gathered list of neighbours, the normal
// equations extended from one k to the next (one pass over the list for
// all of them, as LocalLinearGrid) over the first `widest` coordinates
// (all if 0), a fit over fewer from their leading block: FitAt(fit) gives
// what LocalLinearAt(fit) gives, up to rounding (the sums are added in
// another order). For a prediction that needs several fits
// (ModelConfig::combine). `near` must outlive it.
class LocalLinearPrefix {
 public:
  LocalLinearPrefix(const NeighborTargets& near, double ridge,
                    std::size_t widest = 0);
  // fit.k at least the previous call's; fit.coordinates at most `widest`.
  void FitAt(LocalLinearFit fit, LocalAverage* out,
             std::span<const std::size_t> targets = {});

 private:
  const NeighborTargets& near_;
  double ridge_;
  LocalLinearEquations system_;
  LocalLinearEquations leading_;
};

// Values only, for every fit of a grid in ascending k at once: the normal
// equations are accumulated in one pass over the neighbours and solved once
// per fit (a fit over fewer coordinates from their leading block). Row g of
// `values` (grid.size() x m) is LocalLinearAt(grid[g]), or `fallback` when
// nothing is gathered.
void LocalLinearGrid(std::span<const LocalLinearFit> grid, double ridge,
                     const NeighborTargets& near,
                     std::span<const double> fallback,
                     std::span<double> values);

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_H_
