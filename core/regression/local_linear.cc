#include "core/regression/local_linear.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/regression/local_linear_equations.h"

namespace streamreg {
namespace {

struct Workspace {
  LocalLinearEquations system;
  LocalLinearEquations leading;
  std::vector<std::size_t> all_targets;
  std::vector<double> intercepts;
  std::vector<double> residual_squares;
};

Workspace& ThreadWorkspace() {
  thread_local Workspace workspace;
  return workspace;
}

// Adds neighbours [system.rows(), end) of `near` to `system`.
void ExtendTo(const NeighborTargets& near, std::size_t end,
              LocalLinearEquations& system) {
  const std::size_t begin = system.rows();
  if (end <= begin) return;
  system.Add(near.offsets(begin), near.dim(), near.targets(begin),
             near.num_targets(), end - begin);
}

// The coordinates `fit` uses of `d`.
std::size_t CoordinatesOf(LocalLinearFit fit, std::size_t d) {
  return fit.coordinates == 0 ? d : std::min(fit.coordinates, d);
}

// The equations over the first `coordinates` of `system`'s: itself, or
// their leading block copied into `leading`.
LocalLinearEquations& Leading(LocalLinearEquations& system,
                              std::size_t coordinates,
                              LocalLinearEquations& leading) {
  if (coordinates >= system.dim()) return system;
  leading.CopyLeading(system, coordinates);
  return leading;
}

bool AllFinite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

// The mean of the first `count` neighbours' target t (the fit of a system
// that is not positive definite: intercept only).
double PrefixMean(const NeighborTargets& near, std::size_t count,
                  std::size_t t) {
  double sum = 0.0;
  for (std::size_t j = 0; j < count; ++j) sum += near.targets(j)[t];
  return sum / static_cast<double>(count);
}

// Value and spread of the listed targets (all if none) from the first
// `count` neighbours of `near`, whose rows `system` holds.
void FitFromSystem(const NeighborTargets& near, std::size_t count, double ridge,
                   LocalLinearEquations& system, LocalAverage* out,
                   std::span<const std::size_t> targets) {
  const std::size_t m = near.num_targets();
  out->value.assign(m, 0.0);
  out->spread.assign(m, 0.0);
  out->neighbors = count;
  if (count == 0) return;
  Workspace& work = ThreadWorkspace();
  if (targets.empty()) {
    work.all_targets.resize(m);
    std::iota(work.all_targets.begin(), work.all_targets.end(), std::size_t{0});
    targets = work.all_targets;
  }
  work.intercepts.resize(targets.size());
  work.residual_squares.resize(targets.size());
  const double rows = static_cast<double>(count);
  if (system.Factor(ridge) &&
      system.FitTargets(targets, work.intercepts, work.residual_squares)) {
    for (std::size_t j = 0; j < targets.size(); ++j) {
      out->value[targets[j]] = work.intercepts[j];
      out->spread[targets[j]] = std::sqrt(work.residual_squares[j] / rows);
    }
    return;
  }
  // Not positive definite: the fit of the intercept alone.
  for (std::size_t t : targets) {
    const double mean = PrefixMean(near, count, t);
    double squares = 0.0;
    for (std::size_t j = 0; j < count; ++j) {
      const double residual = near.targets(j)[t] - mean;
      squares += residual * residual;
    }
    out->value[t] = mean;
    out->spread[t] = std::sqrt(squares / rows);
  }
}

}  // namespace

void LocalLinearAt(LocalLinearFit fit, double ridge,
                   const NeighborTargets& near, LocalAverage* out,
                   std::span<const std::size_t> targets) {
  const std::size_t count = std::min(fit.k, near.size());
  Workspace& work = ThreadWorkspace();
  work.system.Reset(CoordinatesOf(fit, near.dim()), near.num_targets(),
                    /*residuals=*/true);
  ExtendTo(near, count, work.system);
  FitFromSystem(near, count, ridge, work.system, out, targets);
}

LocalLinearPrefix::LocalLinearPrefix(const NeighborTargets& near, double ridge,
                                     std::size_t widest)
    : near_(near), ridge_(ridge) {
  system_.Reset(CoordinatesOf({.coordinates = widest}, near.dim()),
                near.num_targets(), /*residuals=*/true);
}

void LocalLinearPrefix::FitAt(LocalLinearFit fit, LocalAverage* out,
                              std::span<const std::size_t> targets) {
  const std::size_t count = std::min(fit.k, near_.size());
  ExtendTo(near_, count, system_);
  LocalLinearEquations& system =
      Leading(system_, CoordinatesOf(fit, near_.dim()), leading_);
  FitFromSystem(near_, count, ridge_, system, out, targets);
}

void LocalLinearGrid(std::span<const LocalLinearFit> grid, double ridge,
                     const NeighborTargets& near,
                     std::span<const double> fallback,
                     std::span<double> values) {
  const std::size_t m = near.num_targets();
  std::size_t widest = 0;
  for (const LocalLinearFit& fit : grid) {
    widest = std::max(widest, CoordinatesOf(fit, near.dim()));
  }
  Workspace& work = ThreadWorkspace();
  work.system.Reset(widest, m);
  work.intercepts.resize(m);
  for (std::size_t g = 0; g < grid.size(); ++g) {
    double* row = values.data() + g * m;
    const std::size_t count = std::min(grid[g].k, near.size());
    if (count == 0) {
      std::copy(fallback.begin(), fallback.end(), row);
      continue;
    }
    ExtendTo(near, count, work.system);
    LocalLinearEquations& system =
        Leading(work.system, CoordinatesOf(grid[g], near.dim()), work.leading);
    if (system.Factor(ridge)) {
      system.Intercepts(work.intercepts);
      if (AllFinite(work.intercepts)) {
        std::copy(work.intercepts.begin(), work.intercepts.end(), row);
        continue;
      }
    }
    for (std::size_t t = 0; t < m; ++t) row[t] = PrefixMean(near, count, t);
  }
}

}  // namespace streamreg
