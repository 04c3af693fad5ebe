#ifndef STREAMREG_CORE_MODEL_PREDICTION_H_
#define STREAMREG_CORE_MODEL_PREDICTION_H_

#include <cstdint>
#include <vector>

namespace streamreg {

// A stored sample a prediction used: the caller's id of it (0: none was
// given), its distance from the query in the coordinates of the index the
// target predicts from (the learned metric's: docs/estimators.md,
// "Neighbours of a prediction"), its inputs and its value of the target, as
// learned.
struct UsedNeighbor {
  std::uint64_t sample_id = 0;
  double distance = 0.0;
  std::vector<double> x;
  double y = 0.0;

  friend bool operator==(const UsedNeighbor&, const UsedNeighbor&) = default;
};

// How hard a prediction is, per target (DifficultyScale's magnitudes): the
// mean distance of the neighbours its choice of regressor and k (or h)
// averages over, in the coordinates of the index the target predicts from
// (+inf when none is within its bandwidth); the random-feature base's posterior
// variance at the query; and a combining model's candidates' disagreement, the
// root mean square of their values' differences from the combination. A feature
// the model does not have is 1: a constant, whose slope stays 0.
inline constexpr std::size_t kDifficultyFeatures = 3;

// A prediction for every target: the local average, the weighted standard
// deviation of the neighbours' targets around it, and how many neighbours
// had positive weight (0: no sample within the bandwidth; the value is then
// the running mean of the targets and the spread their standard deviation),
// and how many samples the model had learned when it made it. With the
// random-feature base, also the posterior variance of the base's value at
// the query, every target (RandomFeatureBase::Predict); empty otherwise.
// And every target's central interval at the model's level (or the level
// asked for), calibrated by conformal prediction on the honest errors
// (docs/estimators.md, "Intervals"): [lower, upper], infinite while too few
// samples have been scored for the level. On request
// (PredictOptions::with_neighbors), the samples each target's value was
// made from.
struct Prediction {
  std::vector<double> value;
  std::vector<double> spread;
  std::vector<double> lower;
  std::vector<double> upper;
  std::vector<double> base_variance;
  std::vector<std::uint32_t> neighbors;
  // Per target, its kDifficultyFeatures difficulty features, [t *
  // kDifficultyFeatures + i] (empty unless the model's intervals use them).
  std::vector<double> difficulty;
  std::uint64_t learned = 0;
  // Per target, when asked for: the stored samples its local average (or
  // local linear fit) used, nearest first; empty for a target that fell
  // back to the running mean (or the base alone). Not asked for: empty.
  std::vector<std::vector<UsedNeighbor>> used;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_PREDICTION_H_
