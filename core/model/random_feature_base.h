#ifndef STREAMREG_CORE_MODEL_RANDOM_FEATURE_BASE_H_
#define STREAMREG_CORE_MODEL_RANDOM_FEATURE_BASE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/base/chunked_rows.h"
#include "core/metric/metric_transform.h"
#include "core/model/random_feature_fit.h"
#include "core/model/sample_store.h"
#include "core/regression/random_feature_predictor.h"
#include "core/regression/random_feature_ridge.h"

namespace streamreg {

// What a saved RandomFeatureBase holds, by the model state version it was
// saved with: the factors its weights' variances come from (version 7 and
// later), and the ridges' format (RidgeFormat::kSums from version 12).
struct SavedBaseFormat {
  bool with_factors = true;
  RidgeFormat ridge = RidgeFormat::kSums;
};

// A model's random-feature base and the residuals its regressor averages
// (docs/estimators.md, "Random-feature base"). The base is a
// RandomFeatureRidge in the coordinates of a metric transform, learned
// online from every sample; a prediction adds its value at the query to
// the regressor's average of the neighbours' residuals y_j - base(x_j).
//
// Evaluating the base at every neighbour of every query would cost a
// random-feature map each, so the residuals are cached per stored slot,
// all taken under one set of the ridge's weights (the cache weights),
// which a sweep renews: once the ridge has learned 1/kSweepGrowth of the
// store's size in samples since the cache weights were taken (and at least
// SolveGap: the ridge's solve costs F^3 / 3, which this spreads over F / 4
// samples or more), the ridge is solved over every sample it has learned,
// those weights become the next cache weights, and each learned sample
// takes kSweepPace stored slots' residuals under them (plus its own) until
// every slot has one; then the new residuals and their weights replace the
// cache. A prediction adds the base under the cache weights — the weights
// its residuals were taken under — so that near the data, where the
// neighbours' residuals and the query's base move together, it is the
// exact base-plus-residuals estimator: with the online weights instead
// (the base a sixteenth of the samples newer than its residuals), the
// robot loop's prequential error, its neighbours the last few ticks, was
// 100 times the linear base's (bench/notes/results-history.md, "The
// random-feature base").
//
// A new fit in other coordinates (the metric refreshed: Replace) learns
// on beside the fit in use while a sweep takes every slot's residual under
// it, and takes over when the sweep ends, so that the base a prediction
// adds and the residuals it averages always belong together.
//
// Everything happens as the learner learns each sample, in order: results
// never depend on timing. The model's lock guards it: readers (Predict,
// residual) share it; the learner Prepares each sample under the shared
// lock — the ridges, its residuals and the sweep's own buffer are its
// alone — and Commits it under the exclusive lock, which only writes rows
// and swaps what a finished sweep made (no allocation beyond a new chunk
// of rows, no O(F^2) work).
class RandomFeatureBase {
 public:
  // Slots whose residuals a learned sample takes while a sweep runs, and
  // the growth (a fraction 1 / kSweepGrowth of the store) after which the
  // next sweep starts.
  static constexpr std::size_t kSweepPace = 16;
  static constexpr std::size_t kSweepGrowth = 16;
  // The fewest samples between two sweeps' starts, each of which solves
  // the ridge: its features' count over kSolveGapDivisor.
  static constexpr std::size_t kSolveGapDivisor = 4;
  static std::size_t SolveGap(const RandomFeatureRidge& ridge);

  // A base with `ridge` (its samples none, or some for a restored one) in
  // the coordinates `transform` gives raw inputs.
  RandomFeatureBase(MetricTransform transform, RandomFeatureRidge ridge);

  std::size_t num_targets() const { return active_.ridge.num_targets(); }
  const MetricTransform& transform() const { return active_.transform; }
  // The coordinates of the fit taking over when the sweep in progress
  // ends (Replace), or of the fit in use.
  const MetricTransform& coming_transform() const;
  const RandomFeatureRidge& ridge() const { return active_.ridge; }

  // The base's value at raw input x, every target: under the cache
  // weights. With `variance` (m values), also the posterior variance of
  // that value: sigma_t^2 phi^T A^-1 phi = sigma_t^2 |L^-1 phi|^2, A = L L^T
  // the ridge's information matrix the cache weights were solved with (a
  // Bayesian linear regression's variance of its mean at the point:
  // Rasmussen & Williams 2006, section 2.1; I-SSGPR's predictive variance
  // less the noise), sigma_t^2 the noise variance as the ridge estimates
  // it now (ResidualScale squared); the triangular solve costs F^2 / 2.
  void Predict(std::span<const double> x, std::span<double> out,
               std::span<double> variance = {}) const;
  // The root of the noise variance the ridge estimates for target t
  // (RandomFeatureRidge::NoiseVariance), as published by the last Commit.
  double ResidualScale(std::size_t t) const { return published_noise_[t]; }
  // The cached residual of stored slot `slot`, every target.
  std::span<const double> residual(std::size_t slot) const {
    return {residuals_.Row(slot), num_targets()};
  }
  // The samples the ridge had learned when the cache weights were taken,
  // and has learned now (committed).
  std::uint64_t cache_taken_at() const { return cache_taken_at_; }
  std::uint64_t learned() const { return learned_; }
  bool sweeping() const { return sweep_.has_value(); }
  bool replacing() const { return sweep_.has_value() && sweep_->incoming; }
  // Sweeps completed since the base began, and of them the replacements
  // by a fit in new coordinates.
  std::uint64_t sweeps() const { return sweeps_; }
  std::uint64_t replacements() const { return replacements_; }

  // The learner's step for a sample (raw x, y), in two parts. Prepare
  // (shared lock): the ridge learns it (and a replacing fit), its
  // residuals are computed, and the sweep goes on (or begins) over the
  // slots `store` holds. Commit (exclusive lock), once the sample is in
  // `slot` of `store` (none: passed over by a reservoir): its residuals are
  // cached, and a finished sweep taken over.
  void Prepare(std::span<const double> x, std::span<const double> y,
               const SampleStore& store);
  void Commit(std::optional<std::size_t> slot, const SampleStore& store);
  // Both at once (a caller holding the model alone: restore, tests).
  void Learn(std::span<const double> x, std::span<const double> y,
             std::optional<std::size_t> slot, const SampleStore& store);
  // A fit in other coordinates, to take over once every stored slot of
  // `store` has its residual under it (a replacement in progress is
  // dropped for it). Under the shared lock, between two samples; the
  // sweep it begins is Committed with the next sample.
  void Replace(RandomFeatureFit fit, const SampleStore& store);

  // Runs the sweep in progress to its end and takes it over now (a batch
  // refit; the exclusive lock).
  void CompleteSweep(const SampleStore& store);

  // The exact state, for snapshots; Load yields nothing for a malformed one
  // or one of other dimensions. A state saved before the weights' factors
  // were (model state version 6 and older: `with_factors` false) takes the
  // ridge's factor as loaded for them: its predictions are exact, their
  // variances from the newer factor until the next sweep ends. One saved
  // with square roots (RidgeFormat::kSquareRoot) is converted.
  void Save(ByteWriter& out) const;
  static std::optional<RandomFeatureBase> Load(
      ByteReader& in, std::size_t dim, std::size_t num_targets,
      const SavedBaseFormat& format = {});

 private:
  using Fit = RandomFeatureFit;
  struct Sweep {
    // The fit taking over at the end (Replace), or none: the same fit.
    std::optional<Fit> incoming;
    RandomFeaturePredictor weights;  // the new residuals' weights
    ChunkedRows<double> residuals;   // a row per slot, as residuals_
    std::size_t next = 0;            // slots [next, end) still to take
    std::size_t end = 0;
    std::uint64_t taken_at = 0;  // samples learned when weights were taken
  };

  static std::vector<double> NoiseScales(const RandomFeatureRidge& ridge);
  // y - weights' fit at z (or at features phi), into out.
  static void Residual(const RandomFeaturePredictor& weights,
                       std::span<const double> z, std::span<const double> y,
                       std::span<double> out);
  static void ResidualFromFeatures(const RandomFeaturePredictor& weights,
                                   std::span<const double> phi,
                                   std::span<const double> y,
                                   std::span<double> out);
  // Weights taken after `taken_at` samples: the ridge's, or the
  // incoming fit's.
  void StartSweep(std::optional<Fit> incoming, const SampleStore& store,
                  std::uint64_t taken_at);
  void AdvanceSweep(const SampleStore& store);
  // The sweep's residuals (and its fit) in use from now on.
  void TakeOverSweep(const SampleStore& store);
  static void SaveRows(const ChunkedRows<double>& rows, ByteWriter& out);
  static void SaveWeights(const RandomFeaturePredictor& weights,
                          ByteWriter& out);
  static bool LoadWeights(ByteReader& in, const SavedBaseFormat& format,
                          RandomFeaturePredictor* weights);
  static bool LoadRows(ByteReader& in, ChunkedRows<double>* rows);

  // Read by readers; changed by Commit only.
  Fit active_;  // (its ridge learns in Prepare: the learner's alone)
  std::vector<double> published_noise_;
  ChunkedRows<double> residuals_;
  // The learner's.
  RandomFeaturePredictor cache_weights_;
  std::uint64_t cache_taken_at_ = 0;
  std::uint64_t learned_ = 0;
  std::optional<Sweep> sweep_;
  std::uint64_t sweeps_ = 0;
  std::uint64_t replacements_ = 0;
  // Prepared for Commit: the sample's residuals under the cache weights
  // and the sweep's, and the ridge's noise scales.
  std::vector<double> prepared_cached_;
  std::vector<double> prepared_swept_;
  std::vector<double> prepared_noise_;
  // The cache a finished sweep replaced, freed by the next Prepare.
  std::optional<ChunkedRows<double>> retired_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_RANDOM_FEATURE_BASE_H_
