#ifndef STREAMREG_CORE_REGRESSION_ADAPTIVE_CONFORMAL_H_
#define STREAMREG_CORE_REGRESSION_ADAPTIVE_CONFORMAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"

namespace streamreg {

// Calibrates prediction intervals online, per target, by conformal
// prediction kept calibrated under drift by adaptive conformal inference
// (Gibbs & Candès, NeurIPS 2021; docs/estimators.md, "Intervals").
//
// The caller scores each sample before learning it: score = |y - y_hat| /
// s, y_hat a prediction that did not see the sample, s > 0 a local scale
// of difficulty. The interval of a later prediction is y_hat ± q s, q the
// Multiplier: over the last `window` scores S_1..S_n, the
// ceil((n + 1)(1 - a))-th smallest (+inf when that exceeds n), at the
// adapted miscoverage a = alpha_t. With exchangeable samples and a fixed
// a = alpha, such an interval covers a new sample with probability at
// least 1 - alpha (split conformal; Vovk et al. 2005, Lei et al. 2018).
// Under drift, alpha_t follows each scored sample (Gibbs & Candès, §2):
//   alpha_{t+1} = alpha_t + step (alpha - err_t),
// err_t = 1 when the sample's score exceeded the multiplier at alpha_t
// (it fell outside its interval), else 0; whatever the stream, the
// fraction of samples outside over any T consecutive ones is within
// (1 + 2 step) / (step T) of alpha (their Proposition 4.1, from any
// alpha_t in [-step, 1 + step], where it always stays).
//
// Another coverage level L is served at a = (1 - L) alpha_t / alpha: the
// same relative adaptation; exact split conformal while alpha_t = alpha.
class AdaptiveConformal {
 public:
  struct Options {
    double level = 0.9;         // 1 - alpha, in (0, 1)
    std::size_t window = 2000;  // scores kept per target, >= 1
    double step = 0.005;        // gamma >= 0; 0: plain split conformal
  };

  AdaptiveConformal(std::size_t num_targets, Options options);

  std::size_t num_targets() const { return targets_.size(); }
  const Options& options() const { return options_; }

  // q for target t at coverage `level` in (0, 1) (the model's by default):
  // +inf while too few scores are kept for that level, 0 when the adapted
  // miscoverage reaches 1. O(1).
  double Multiplier(std::size_t t, std::optional<double> level = {}) const;
  // Scores target t's sample (a NaN counts as +inf: outside), adapts
  // alpha_t by whether it fell within its interval, then keeps it (the
  // oldest dropped beyond `window`). Returns whether it fell within.
  // O(window) at worst (a sorted insertion and removal).
  bool Add(std::size_t t, double score);
  // Replaces target t's kept scores but its newest `newest_kept` with
  // `older` (in arrival order, before those), the oldest dropped beyond
  // `window`: scores of the same samples made again by a better model
  // (IntervalRecalibration). alpha_t starts again at alpha (it adapted to
  // the scores replaced); the counts stay. O(window log window).
  void ReplaceOlder(std::size_t t, std::span<const double> older,
                    std::size_t newest_kept);

  // alpha_t for target t.
  double adapted_miscoverage(std::size_t t) const { return targets_[t].alpha; }
  // Target t's samples scored, and of them those within their interval.
  std::uint64_t scored(std::size_t t) const { return targets_[t].scored; }
  std::uint64_t covered(std::size_t t) const { return targets_[t].covered; }
  std::size_t kept(std::size_t t) const { return targets_[t].sorted.size(); }

  // The exact state, for snapshots; Load yields nothing for a malformed
  // one or one of another number of targets.
  void Save(ByteWriter& out) const;
  static std::optional<AdaptiveConformal> Load(ByteReader& in,
                                               std::size_t num_targets);

 private:
  struct Target {
    std::vector<double> ring;    // the kept scores in arrival order, cyclic
    std::size_t oldest = 0;      // ring index of the oldest, once full
    std::vector<double> sorted;  // the same scores, ascending
    double alpha = 0.0;
    std::uint64_t scored = 0;
    std::uint64_t covered = 0;
  };

  // The multiplier at miscoverage a over target t's kept scores.
  static double MultiplierAt(const Target& target, double miscoverage);

  Options options_;
  std::vector<Target> targets_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_ADAPTIVE_CONFORMAL_H_
