#ifndef STREAMREG_CORE_REGRESSION_DIFFICULTY_SCALE_H_
#define STREAMREG_CORE_REGRESSION_DIFFICULTY_SCALE_H_

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"

namespace streamreg {

// Learns, per target, how a prediction's error grows with how hard the
// prediction is, so that an interval can widen where the model has seen
// little (docs/estimators.md, "Intervals", "A learned width"). A prediction is
// described by P difficulty magnitudes f >= 0 (e.g. the mean distance of
// its neighbours), each taken on a log scale that stays finite at
// 0 (a duplicate of a stored sample):
//   u_i = log(f_i + kOffset * f_bar_i),
// f_bar_i the forgotten mean of f_i over the residuals learned before.
// Each honest residual r of a prediction with features u teaches the
// least-squares line
//   log(|r| / s + kResidualFloor) ~ a + b . u,
// s the residual's scale before it (the calibration's constant scale),
// over the exponentially forgotten past (weight lambda^age, lambda = 1 -
// 1 / horizon). The slopes b are those of the forgotten covariances with a
// small ridge, constrained to b >= 0: difficulty can only widen an
// interval. The relative scale of a prediction with features u is
//   exp(b . (u - u_bar)),
// u_bar the forgotten mean of the features: 1 at typical difficulty,
// clamped to [1 / kMaxRatio, kMaxRatio], 1 until kMinWeight residuals are
// weighed. The conformal calibration multiplies it into the scale of its
// scores and intervals, and so keeps its coverage whatever b is.
class DifficultyScale {
 public:
  static constexpr std::size_t kMaxFeatures = 4;
  static constexpr double kOffset = 0.1;
  static constexpr double kResidualFloor = 0.05;
  static constexpr double kMaxRatio = 50.0;
  static constexpr double kMinWeight = 50.0;
  // The slopes' ridge, relative to the features' mean variance.
  static constexpr double kRelativeRidge = 1e-3;

  // P = num_features features per prediction, 1 to kMaxFeatures (clamped
  // to that range); horizon >= 1.
  DifficultyScale(std::size_t num_targets, std::size_t num_features,
                  double horizon);

  std::size_t num_targets() const { return targets_.size(); }
  std::size_t num_features() const { return num_features_; }
  double horizon() const { return horizon_; }

  // Target t's relative scale at magnitudes f (P of them). An infinite one
  // (no stored sample near enough to measure) gives kMaxRatio if its slope
  // is positive; a magnitude of slope 0 does not count, whatever it is.
  double Relative(std::size_t t, std::span<const double> f) const;
  // Learns target t's residual |r| at magnitudes f, s > 0 the scale before
  // it. A negative or non-finite magnitude or residual teaches nothing.
  void Add(std::size_t t, std::span<const double> f, double abs_residual,
           double scale);

  // Target t's slopes b (0 before they are used) and the residuals' weight.
  std::span<const double> slopes(std::size_t t) const {
    return targets_[t].slopes;
  }
  double weight(std::size_t t) const { return targets_[t].weight; }

  // The exact state, for snapshots; Load yields nothing for a malformed one
  // or one of another shape.
  void Save(ByteWriter& out) const;
  static std::optional<DifficultyScale> Load(ByteReader& in,
                                             std::size_t num_targets,
                                             std::size_t num_features);

 private:
  // Target t's forgotten sums: weight, sums of f, u and v, of u u^T (P x P,
  // row-major) and u v; and the slopes they give.
  struct Target {
    double weight = 0.0;
    std::vector<double> sum_f;
    std::vector<double> sum_u;
    double sum_v = 0.0;
    std::vector<double> sum_uu;
    std::vector<double> sum_uv;
    std::vector<double> slopes;
  };

  Target EmptyTarget() const;
  // Magnitude i on the target's log scale (-inf for 0 before any is
  // learned).
  static double LogFeature(const Target& target, std::size_t i, double f);
  // The non-negative ridge slopes of the target's sums.
  void FitSlopes(Target& target) const;

  std::size_t num_features_;
  double horizon_;
  double forgetting_;
  std::vector<Target> targets_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_DIFFICULTY_SCALE_H_
