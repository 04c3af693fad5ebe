#ifndef STREAMREG_CORE_METRIC_MLKR_MAP_H_
#define STREAMREG_CORE_METRIC_MLKR_MAP_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/metric/learned_metric.h"

namespace streamreg {

// The MLKR map a model learns (Weinberger & Tesauro, "Metric Learning for
// Kernel Regression", AISTATS 2007), in standardized input coordinates:
// A (rank x d) fitted in batch by each refresh (FitMlkr, from the stored
// samples), and between refreshes moved by one stochastic gradient step
// per learned sample — the gradient of that sample's leave-one-out term
// of eq. (3) (MlkrPointLoss), times the step the last batch fit ended
// with: after n samples the online steps have moved A about as far as one
// more batch step over those n samples would (docs/estimators.md, "MLKR").
// Unknown (no map) until the first fit.
class MlkrMap {
 public:
  MlkrMap() = default;

  bool known() const { return !a_.empty(); }
  std::size_t rank() const { return rank_; }
  // A, rank x d, row-major; empty while unknown.
  std::span<const double> a() const { return a_; }
  // The online step per sample's gradient.
  double step() const { return step_; }
  // Online steps taken since the last fit.
  std::size_t online_steps() const { return online_steps_; }

  // A batch fit: A (rank x d) and the step its descent ended with.
  void Install(std::size_t rank, std::vector<double> a, double step);
  // A -= step() * gradient (rank x d), a step of at most
  // kMaxRelativeStep |A| (a sample far from its neighbours, whose kernel
  // weights change fastest, cannot throw the map away); nothing while
  // unknown or for a gradient that is not finite.
  void Step(std::span<const double> gradient);
  static constexpr double kMaxRelativeStep = 0.01;

  // The map as a LearnedMetric of kind kMlkr in `dim` inputs: A, A^T A,
  // its diagonal, and (with_spectrum) its eigen-decomposition; all zero
  // (no information: standardized Euclidean coordinates) while unknown.
  LearnedMetric Metric(std::size_t dim, bool with_spectrum = true) const;
  // A as d x d, the rows beyond its rank zero: where a refresh's descent
  // starts (FitMlkr keeps zero rows zero).
  std::vector<double> Square(std::size_t dim) const;

  // The exact map, for snapshots; Load fails on a malformed one or another
  // dimension.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in, std::size_t dim);

 private:
  std::size_t rank_ = 0;
  std::vector<double> a_;
  double step_ = 0.0;
  std::size_t online_steps_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_MLKR_MAP_H_
