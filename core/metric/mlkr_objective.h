#ifndef STREAMREG_CORE_METRIC_MLKR_OBJECTIVE_H_
#define STREAMREG_CORE_METRIC_MLKR_OBJECTIVE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/metric/windowed_knn.h"

namespace streamreg {

// Samples an MLKR objective is evaluated on: n points of d coordinates and
// m targets each, row-major. Inputs are standardized and targets scaled by
// their standard deviations by the caller, so that every target weighs
// alike in the sum over targets.
struct MlkrSamples {
  std::size_t n = 0;
  std::size_t d = 0;
  std::size_t m = 0;
  std::span<const double> x;  // n x d
  std::span<const double> y;  // n x m
};

// The neighbours over which each point's leave-one-out estimate runs:
// point i's are of(i), indices j != i. With every other point listed the
// objective is the paper's exact one; with the c nearest, its truncation
// (§3, "Efficient optimization": the paper keeps the c = 1000 nearest;
// ours come from WindowedKnn in the mapped space).
using MlkrNeighbors = NeighborLists;

// The objective of Metric Learning for Kernel Regression (Weinberger &
// Tesauro, AISTATS 2007) for a linear map A (rank x d, row-major): the
// cumulative leave-one-out squared error of the Nadaraya-Watson estimate,
// eq. (3), summed over the m targets,
//   L(A) = sum_i sum_t (y_it - yhat_it)^2,
//   yhat_it = sum_j k_ij y_jt / sum_j k_ij                      (eq. 1)
// with the Gaussian kernel of the mapped squared distance (eqs. 4 and 7;
// the constant and sigma absorbed into A, as the paper does),
//   k_ij = exp(-|A (x_i - x_j)|^2),
// and its gradient with respect to A. Differentiating eq. (3) gives
//   dL/dA = 4 A sum_i sum_j p_ij [sum_t (yhat_it - y_it)(yhat_it - y_jt)]
//           x_ij x_ij^T,     p_ij = k_ij / sum_l k_il,  x_ij = x_i - x_j;
// the paper's printed eq. (8) has (yhat_j - y_j) for (yhat_i - y_j) and
// omits the normalization by sum_l k_il (docs/estimators.md; the tests
// check this gradient against finite differences of eq. 3). The weights
// are computed relative to each point's nearest listed neighbour, which
// leaves p_ij unchanged and never divides by an underflowed sum (the
// paper's footnote on division by zero).
//
// Returns L(A); with `gradient` non-null, also dL/dA (rank x d). The work
// is spread over `threads` threads, each summing a fixed part of the
// points: the result is the same from run to run for a given number of
// threads (and differs in its last bits between numbers).
double MlkrLoss(const MlkrSamples& samples, const MlkrNeighbors& neighbors,
                std::span<const double> a, std::size_t rank,
                std::vector<double>* gradient, std::size_t threads = 1);

// The term of one sample (x, y) with `neighbor_x.size()` neighbours given
// by their inputs (d each) and targets (y.size() each): sum_t (y_t -
// yhat_t)^2 of its estimate from them, and, with `gradient` non-null, its
// gradient with respect to A (rank x d) added to *gradient. For a new
// sample of a stream this is its leave-one-out error, and the online
// update of the map (a stochastic gradient step per learned sample) is this
// term's gradient.
double MlkrPointLoss(std::span<const double> x, std::span<const double> y,
                     std::span<const double* const> neighbor_x,
                     std::span<const double* const> neighbor_y,
                     std::span<const double> a, std::size_t rank,
                     std::vector<double>* gradient);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_MLKR_OBJECTIVE_H_
