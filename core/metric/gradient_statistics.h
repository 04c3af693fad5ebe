#ifndef STREAMREG_CORE_METRIC_GRADIENT_STATISTICS_H_
#define STREAMREG_CORE_METRIC_GRADIENT_STATISTICS_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/metric/gradient_estimator.h"

namespace streamreg {

// The running sums behind both learned metrics: for every target t,
//   sum_X |Delta_{t,i} f(X)| 1{A_{n,i}(X)}      (gradient weights, GW eq. 2)
//   sum_X g(X) g(X)^T, g_i = Delta_i 1{A_{n,i}}   (EGOP, Trivedi §3.1)
// over the samples X seen, and their number. Dividing by the number gives
// the papers' empirical means E_n (eq. 2; E_n G_n(X)). A forgetting factor
// gamma < 1 turns the sums into exponentially weighted ones (each new
// sample multiplies the old sums by gamma), so that the early estimates,
// made from few samples, fade.
class GradientStatistics {
 public:
  GradientStatistics(std::size_t dim, std::size_t num_targets,
                     bool outer_products);

  void Add(const GradientEstimate& estimate, double forgetting = 1.0);
  // Adds another set of sums over other samples (same shape, no forgetting).
  void Merge(const GradientStatistics& other);
  // Multiplies every sum and count by `factor`: sums over a sample of the
  // points made to stand for all of them (the means are unchanged; a Merge
  // then weighs them as that many points).
  void Scale(double factor);
  void Clear();

  std::size_t dim() const { return dim_; }
  std::size_t num_targets() const { return num_targets_; }
  bool has_outer_products() const { return !outer_.empty(); }
  // The (possibly forgetting-weighted) number of samples added.
  double count() const { return count_; }
  // How many of them counted coordinate i (A_{n,i} held).
  double counted(std::size_t i) const { return counted_[i]; }

  // W_i for target t: E_n |Delta_{t,i}| 1{A_{n,i}} (GW eq. 2).
  std::vector<double> GradientWeights(std::size_t target) const;
  // E_n g g^T for target t, row-major dim x dim (Trivedi §3.1).
  std::vector<double> Egop(std::size_t target) const;

  // The exact sums, for snapshots; Load fails on another shape.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  std::size_t dim_;
  std::size_t num_targets_;
  double count_ = 0.0;
  std::vector<double> counted_;   // dim
  std::vector<double> abs_sums_;  // target-major: [t * dim + i]
  std::vector<double> outer_;     // [t * dim * dim + i * dim + j]
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_GRADIENT_STATISTICS_H_
