#include "core/regression/candidate_aggregation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace streamreg {

CandidateAggregation::CandidateAggregation(std::size_t num_targets,
                                           std::size_t num_candidates,
                                           std::size_t recency)
    : num_candidates_(num_candidates), recency_(recency) {
  const double uniform = 1.0 / static_cast<double>(num_candidates);
  targets_.resize(num_targets);
  for (Target& target : targets_) {
    target.regret.assign(num_candidates, 0.0);
    target.variance.assign(num_candidates, 0.0);
    target.range.assign(num_candidates, 0.0);
    target.weights.assign(num_candidates, uniform);
  }
}

double CandidateAggregation::Combine(std::size_t t,
                                     std::span<const double> candidates) const {
  const std::vector<double>& weights = targets_[t].weights;
  double combined = 0.0;
  for (std::size_t c = 0; c < num_candidates_; ++c) {
    combined += weights[c] * candidates[c];
  }
  return combined;
}

void CandidateAggregation::Add(std::size_t t,
                               std::span<const double> candidates,
                               double truth) {
  Target& target = targets_[t];
  const double combined = Combine(t, candidates);
  const double gradient = 2.0 * (combined - truth);
  if (!std::isfinite(gradient)) return;  // nothing to learn from
  // The sums so far in units of this sample's weight: times
  // (s - 1)^p / s^p.
  const double earlier = static_cast<double>(target.added);
  const double fade = recency_ == 0 ? 1.0
                                    : std::pow(earlier / (earlier + 1.0),
                                               static_cast<double>(recency_));
  ++target.added;
  for (std::size_t c = 0; c < num_candidates_; ++c) {
    const double r = gradient * (combined - candidates[c]);
    if (!std::isfinite(r)) continue;
    target.range[c] = std::max(fade * target.range[c], std::abs(r));
    target.variance[c] = fade * fade * target.variance[c] + r * r;
    target.regret[c] *= fade;
    if (r != 0.0) {  // then V_c > 0: the rate is known
      target.regret[c] += r - *Rate(target, c) * r * r;
    }
  }
  UpdateWeights(target);
}

std::optional<double> CandidateAggregation::Rate(const Target& target,
                                                 std::size_t c) const {
  if (!(target.variance[c] > 0.0)) return std::nullopt;
  const double log_candidates = std::log(static_cast<double>(num_candidates_));
  return std::min(1.0 / (2.0 * target.range[c]),
                  std::sqrt(log_candidates / target.variance[c]));
}

void CandidateAggregation::UpdateWeights(Target& target) const {
  const std::size_t n = num_candidates_;
  // A candidate that never disagreed takes the most cautious rate, 1/(2E)
  // for the largest E of the others.
  double widest = 0.0;
  for (double range : target.range) widest = std::max(widest, range);
  std::vector<double>& weights = target.weights;
  if (n < 2 || !(widest > 0.0)) {  // one candidate, or no news
    weights.assign(n, 1.0 / static_cast<double>(n));
    return;
  }
  double largest = -std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < n; ++c) {
    const double rate = Rate(target, c).value_or(1.0 / (2.0 * widest));
    // In logarithms: eta_c exp(eta_c R_c) overflows where R_c is large.
    weights[c] = std::log(rate) + rate * target.regret[c];
    largest = std::max(largest, weights[c]);
  }
  double sum = 0.0;
  for (double& weight : weights) {
    weight = std::exp(weight - largest);
    sum += weight;
  }
  for (double& weight : weights) weight /= sum;
}

void CandidateAggregation::Save(ByteWriter& out) const {
  for (const Target& target : targets_) {
    out.U64(target.added);
    out.Doubles(target.regret);
    out.Doubles(target.variance);
    out.Doubles(target.range);
  }
}

std::optional<CandidateAggregation> CandidateAggregation::Load(
    ByteReader& in, std::size_t num_targets, std::size_t num_candidates,
    std::size_t recency) {
  CandidateAggregation aggregation(num_targets, num_candidates, recency);
  for (Target& target : aggregation.targets_) {
    target.added = in.U64();
    if (!in.DoublesOfSize(&target.regret) ||
        !in.DoublesOfSize(&target.variance) ||
        !in.DoublesOfSize(&target.range)) {
      return std::nullopt;
    }
    for (std::size_t c = 0; c < num_candidates; ++c) {
      if (!std::isfinite(target.regret[c]) || !(target.variance[c] >= 0.0) ||
          !std::isfinite(target.variance[c]) || !(target.range[c] >= 0.0) ||
          !std::isfinite(target.range[c])) {
        return std::nullopt;
      }
    }
    aggregation.UpdateWeights(target);
  }
  if (!in.ok()) return std::nullopt;
  return aggregation;
}

}  // namespace streamreg
