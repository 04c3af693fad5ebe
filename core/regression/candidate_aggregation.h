#ifndef STREAMREG_CORE_REGRESSION_CANDIDATE_AGGREGATION_H_
#define STREAMREG_CORE_REGRESSION_CANDIDATE_AGGREGATION_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"

namespace streamreg {

// Combines N candidate predictions of each target online (docs/
// estimators.md, "Candidates combined"): the prediction is a convex
// combination sum_c w_c p_c whose weights follow the candidates' losses, so
// that it is as good as the best convex combination of them in hindsight,
// up to a second-order regret. The rule is Bernstein Online Aggregation
// with a learning rate per candidate tuned online (BOA; Wintenberger,
// "Optimal learning with Bernstein online aggregation", Machine Learning
// 106, 2017, §4; the R package opera's BOA), run on the losses weighted by
// recency: sample s (from 1) weighs s^p.
//
// For one target, after a sample with candidate predictions p_c and truth
// y, the squared loss is linearized at the combination y_hat (the gradient
// trick), and each candidate's instantaneous regret is
//   r_c = 2 (y_hat - y) (y_hat - p_c),
// positive where the candidate would have done better. BOA on the weighted
// regrets s^p r_c, its sums kept in units of the latest weight (so they
// stay finite in a long stream): with lambda = ((s - 1) / s)^p at sample s,
//   E_c = max(lambda E_c, |r_c|),  V_c = lambda^2 V_c + r_c^2,
//   eta_c = min(1 / (2 E_c), sqrt(ln N / V_c)),
//   R_c = lambda R_c + r_c - eta_c r_c^2,
//   w_c proportional to eta_c exp(eta_c R_c)  (uniform prior 1/N),
// the weights BOA gives the weighted regrets to the bit of rescaling, so
// its bound holds for the regret weighted the same way. With p = 0 it is
// BOA itself; with p = 2 the last half of a stream carries 7/8 of the
// weight, so the weights follow the candidates as they are now rather than
// the first samples', when every candidate was poor (docs/estimators.md
// gives the measurements). The weights do not change if targets and
// predictions are multiplied by a constant. Until a candidate has
// disagreed with the combination (V_c = 0) its rate is the smallest
// 1 / (2 E) of the others; while none has, the weights are uniform.
class CandidateAggregation {
 public:
  // `recency` is p, the power of a sample's weight (0: every sample weighs
  // the same).
  CandidateAggregation(std::size_t num_targets, std::size_t num_candidates,
                       std::size_t recency = 0);

  std::size_t num_targets() const { return targets_.size(); }
  std::size_t num_candidates() const { return num_candidates_; }
  std::size_t recency() const { return recency_; }

  // Target t's weights, one per candidate, summing to 1.
  std::span<const double> Weights(std::size_t t) const {
    return targets_[t].weights;
  }
  // The combination sum_c w_c p_c of target t's candidates' predictions.
  double Combine(std::size_t t, std::span<const double> candidates) const;
  // Learns from target t's candidate predictions of a sample (made before
  // it was seen) and its truth; updates the weights. A non-finite truth or
  // combination teaches nothing.
  void Add(std::size_t t, std::span<const double> candidates, double truth);
  // Samples target t has learned from.
  std::uint64_t added(std::size_t t) const { return targets_[t].added; }

  // The exact state, for snapshots (the recency is the owner's to keep);
  // Load yields nothing for a malformed one or one of another shape.
  void Save(ByteWriter& out) const;
  static std::optional<CandidateAggregation> Load(ByteReader& in,
                                                  std::size_t num_targets,
                                                  std::size_t num_candidates,
                                                  std::size_t recency);

 private:
  struct Target {
    std::vector<double> regret;    // R_c
    std::vector<double> variance;  // V_c
    std::vector<double> range;     // E_c
    std::vector<double> weights;   // w_c
    std::uint64_t added = 0;
  };

  // eta_c; nothing for a candidate that never disagreed (V_c = 0).
  std::optional<double> Rate(const Target& target, std::size_t c) const;
  // The weights from the target's sums.
  void UpdateWeights(Target& target) const;

  std::size_t num_candidates_;
  std::size_t recency_;
  std::vector<Target> targets_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_CANDIDATE_AGGREGATION_H_
