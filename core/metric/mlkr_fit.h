#ifndef STREAMREG_CORE_METRIC_MLKR_FIT_H_
#define STREAMREG_CORE_METRIC_MLKR_FIT_H_

#include <cstddef>
#include <span>
#include <stop_token>
#include <vector>

#include "absl/status/statusor.h"
#include "core/metric/mlkr_objective.h"

namespace streamreg {

// How FitMlkr minimizes the objective.
struct MlkrFitOptions {
  // The rows of A: 0 for d (full rank), else at most d (a low-rank map, and
  // an index in rank dimensions).
  std::size_t rank = 0;
  // c: each point's estimate runs over its c nearest in the mapped space
  // (capped at n - 1, where the objective is the exact one).
  std::size_t neighbors = 64;
  // The samples are in stream order; a point's neighbours leave out those
  // within this many positions of it, on both sides. On a stream sampled
  // fast the samples next to a point in time are next to it in input
  // space, and its leave-one-out estimate from them is a lookup: the
  // objective is then the honest error's (docs/estimators.md, "Honest
  // error"), not the paper's (0).
  std::size_t exclude_within = 0;
  // Evaluations of the objective and its gradient at most (over both
  // phases of a low-rank fit), and the accepted steps between two searches
  // for the neighbours under the current map (the paper's 15).
  std::size_t max_steps = 200;
  std::size_t refresh_every = 15;
  // Stops once an accepted step lowers the objective by less than this
  // fraction.
  double tolerance = 1e-5;
  // Threads evaluating the objective.
  std::size_t threads = 1;
  // A requested stop ends the fit with Cancelled.
  std::stop_token stop;
};

// A fitted map and how it was reached.
struct MlkrFit {
  std::size_t rank = 0;
  std::vector<double> a;  // rank x d, row-major
  double loss = 0.0;      // the objective at `a`, over the last neighbours
  double initial_loss = 0.0;
  std::size_t steps = 0;  // evaluations of the objective and its gradient
  std::size_t refreshes = 0;
  // The adaptive step the descent ended with (per unit of the gradient of
  // the objective, a sum over the points).
  double step = 0.0;
};

// The map MLKR starts from (d x d): the identity in standardized
// coordinates (the paper's initialization), scaled so that the mean
// squared distance from a point to its nearest neighbour is 1 (the kernel
// then weighs the nearest few: the paper's sigma, which it absorbs into
// A).
std::vector<double> InitialMlkrMap(const MlkrSamples& samples);

// Minimizes MLKR's objective (MlkrLoss) by gradient descent with an
// adaptive step (the paper's eq. 2: the step grows by 10% after a step
// that lowers the objective and halves after one that does not, which is
// undone), from `initial` (d x d). For rank r < d it then takes the
// paper's §4 route: the projection on the r leading eigenvectors of M =
// A^T A (eq. 10: the rows sqrt(lambda_k) w_k^T, the best rank-r M), and
// the same descent on that rectangular A (a rectangular A fitted from a
// start that ignores y finds the wrong plane: the objective is not
// convex). Each point's neighbours are its c nearest under the current
// map, found again every `refresh_every` accepted steps (NearestUnderMap):
// the truncation the paper makes with a heap it corrects every 15 steps,
// without its O(n^2) search. InvalidArgument for fewer than 2 samples, a
// rank above d or an initial map that is not d x d; Cancelled once
// `options.stop` is requested.
absl::StatusOr<MlkrFit> FitMlkr(const MlkrSamples& samples,
                                std::span<const double> initial,
                                const MlkrFitOptions& options);

// Each point's c nearest other points under the map A (rank x d) that
// are more than `window` positions away from it, sorted by (distance,
// index): WindowedKnn's walk over the mapped points below 2,500 of them, a
// cover tree's search above (the same lists, whichever is faster there);
// every such point, in index order, if c >= n - 1.
MlkrNeighbors NearestUnderMap(const MlkrSamples& samples,
                              std::span<const double> a, std::size_t rank,
                              std::size_t c, std::size_t window = 0);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_MLKR_FIT_H_
