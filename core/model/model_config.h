#ifndef STREAMREG_CORE_MODEL_MODEL_CONFIG_H_
#define STREAMREG_CORE_MODEL_MODEL_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/metric/gradient_estimator.h"
#include "core/metric/learned_metric.h"
#include "core/model/sample_store.h"
#include "core/model/take_over_key.h"
#include "core/regression/kernel.h"
#include "core/regression/local_linear.h"

namespace streamreg {

enum class RegressorKind {
  kNearest,      // mean of the k nearest neighbours' targets
  kKernel,       // Nadaraya–Watson with a bandwidth h
  kLocalLinear,  // a ridge-regularized linear fit to the k nearest
  kAuto,         // per target, k-NN or local linear by the honest error
};

// knn, kernel, local_linear, auto.
absl::string_view RegressorKindName(RegressorKind kind);
absl::StatusOr<RegressorKind> ParseRegressorKind(absl::string_view name);
// Whether the regressor's grid is k_grid (else bandwidth_grid).
inline bool ChoosesK(RegressorKind kind) {
  return kind != RegressorKind::kKernel;
}
// The regressors a model scores on every sample, per target: two for kAuto
// (k-NN, then local linear), else its one regressor. Scored regressor s of
// target t is the selector's target s * m + t.
inline std::size_t NumScoredRegressors(RegressorKind kind) {
  return kind == RegressorKind::kAuto ? 2 : 1;
}
inline RegressorKind ScoredRegressor(RegressorKind kind, std::size_t s) {
  if (kind != RegressorKind::kAuto) return kind;
  return s == 0 ? RegressorKind::kNearest : RegressorKind::kLocalLinear;
}

struct ModelConfig;

// What one scored prediction of a target is: a regressor, over the
// residuals of the linear base (with_base) or over the targets themselves.
struct ScoredVariant {
  RegressorKind regressor;
  bool with_base;
  // Its first column among a neighbour's (NeighborColumns): 0, or m for
  // the raw targets of per_target_base.
  std::size_t first_column;
};
// The variants a model scores per target: its scored regressors, each with
// the base and, with per_target_base, without it. Variant s of target t is
// the selector's target s * m + t; variants [0, NumScoredRegressors) are
// the regressors over the model's own targets (residuals with a base), the
// rest the same regressors over the raw targets.
std::size_t NumScoredVariants(const ModelConfig& config);
ScoredVariant ScoredVariantAt(const ModelConfig& config, std::size_t s);
// The candidates a combining model (ModelConfig::combine) weighs per
// target: its scored variants in order, then the base alone if it has one.
std::size_t NumCandidates(const ModelConfig& config);
// Candidate c's name: the regressor's ("knn", "local_linear", "kernel"),
// "+base" for a variant with the base, or "base" for the base alone.
std::string CandidateName(const ModelConfig& config, std::size_t c);

// Everything that defines a Model. Bandwidths are distances in the index's
// coordinates: standardized inputs under a metric normalized to mean
// squared scale 1 (see TransformFor), so one grid suits every metric.
struct ModelConfig {
  std::size_t input_dim = 0;
  std::vector<std::string> target_names;

  // k-NN by default: on every data set measured so far it predicted unseen
  // data better than the kernel regressor in the same metric, and at the
  // same cost or less (docs/estimators.md, "Regressors").
  RegressorKind regressor = RegressorKind::kNearest;
  Kernel kernel = Kernel::kBox;
  // MLKR by default: over the 16 data sets of data/ held out it has 0.76x
  // the error of gradient weights in geometric mean (1.20x the best
  // configuration of each set against 1.59x), and on the simulated arm at
  // 1 kHz it keeps up as well with a 2.4x lower honest error
  // (docs/estimators.md, "Which configuration"). kAuto: one index in each
  // candidate metric (shared by the targets), and each target predicts
  // from the one with the least honest error ("Automatic choice").
  MetricKind metric = MetricKind::kMlkr;
  // One metric per target (each with its own index) or one shared metric
  // (not with kAuto).
  bool per_target_metric = false;

  // Candidate bandwidths of the regressor, ascending; empty = the default
  // grid (DefaultBandwidthGrid).
  std::vector<double> bandwidth_grid;
  // Candidate k of the k-NN or local linear regressor, ascending; empty =
  // DefaultKGrid, DefaultLocalLinearKGrid, or for kAuto both merged.
  std::vector<std::size_t> k_grid;
  // The local linear regressor's ridge on the slope, in the index's
  // coordinates (standardized inputs under a normalized metric).
  double local_linear_ridge = 1.0;
  // The local linear regressor's fits over the index's first
  // local_linear_leading coordinates, beside its fits over all of them:
  // each target chooses (k, coordinates) by the honest error as it chooses
  // k. Under MLKR and the EGOP the index's coordinates are the metric's
  // eigen-directions, the heaviest first, so the fewer-coordinate fit
  // follows the directions that matter with fewer unknowns (and costs
  // (r/d)^2 of the full one); under the other metrics the coordinates are
  // the inputs in their order, and every fit uses them all. 0 (as in
  // models saved before it existed), or input_dim and more: every fit over
  // all coordinates.
  std::size_t local_linear_leading = 8;
  // A linear base under the regressor (docs/estimators.md, "Linear base"):
  // an online ridge regression of the targets on the raw inputs
  // (OnlineRidge), learned from every sample seen; the regressor averages
  // (or fits) the neighbours' residuals y_j - base(x_j) under the current
  // base, and a prediction is base(x) + that. Where nothing is stored the
  // prediction is base(x). Needs input_dim <= kMaxLinearBaseDim (a d x d
  // solve per sample). On by default: on data the model has not seen it
  // made k-NN better on 12 of 16 public sets, 1.7x on SARCOS split in time
  // (bench/notes/results-history.md).
  bool linear_base = true;
  // With linear_base: each target predicts with the base or without it
  // (the regressor over its raw values), whichever has the lower honest
  // error, scored like the regressor's grid on every sample.
  bool per_target_base = false;
  // Each target's prediction combines its candidates instead of choosing
  // one (docs/estimators.md, "Candidates combined"): every variant scored
  // (ScoredVariantAt: the regressors, with and without the base) at its
  // best grid value, and the base alone where there is one, weighed by
  // Bernstein online aggregation (CandidateAggregation) of their honest
  // errors in queries, of their prequential ones in the predictions of the
  // next sample (Learn answers). Not with the metric kAuto.
  bool combine = false;
  // With combine: the power p of a sample's weight s^p in the aggregation
  // (CandidateAggregation; 0: every sample weighs the same, as in models
  // saved before it). At 2 the weights follow the candidates as they are
  // now, not as they were on the stream's first samples: held out on
  // data/'s sets 0.94x the error of p = 0 over the linear base's
  // candidates, 0.99x over the random-feature base's, the arm's the same
  // (docs/estimators.md, "Candidates combined").
  std::size_t combination_recency = 2;
  // The base's ridge on standardized inputs, and its forgetting factor
  // (1: every sample weighs the same).
  double base_ridge = 1.0;
  double base_forgetting = 1.0;
  // With linear_base: a ridge that grows with the samples' weight W, on top
  // of base_ridge (OnlineRidge's relative_ridge: alpha = base_ridge +
  // base_relative_ridge * W), so that a direction the inputs have barely
  // moved in gets no slope to extrapolate with, however long the stream (a
  // robot's states along one path: without it the base's slopes across the
  // path grow from noise and a controller fed its predictions loses its
  // path, bench/notes/results-history.md "The closed loop"). Models saved
  // before it existed have 0.
  double base_relative_ridge = 3e-2;
  // With linear_base: the base is a random-feature ridge instead
  // (RandomFeatureBase; docs/estimators.md, "Random-feature base"): D =
  // random_feature_frequencies random Fourier features of the inputs in the
  // coordinates of the model's metric (random_base_follows_choice), plus the
  // inputs themselves and an intercept, learned online by exact least squares
  // (base_forgetting); rebuilt in the background when those coordinates
  // change or the store grows, within a budget of multiply-adds per learned
  // sample (kRandomBaseRebuildBudget), its lengthscale (times
  // sqrt(input_dim)) and ridge then chosen among these candidates by the
  // error on the newest fifth of the stored samples. The regressor averages
  // residuals cached per stored sample.
  bool random_feature_base = false;
  // With random_feature_base and the metric chosen per target (kAuto): the
  // base follows the coordinates of the index most targets predict from
  // now, not those of the first (standardized Euclidean) index; models
  // saved before it existed follow the first.
  bool random_base_follows_choice = true;
  std::size_t random_feature_frequencies = 64;
  std::vector<double> random_feature_lengthscales = {0.25, 0.5, 1.0, 2.0};
  std::vector<double> random_feature_ridges = {1e-3, 1e-2, 1e-1, 1.0};
  // Candidate bandwidths of the gradient estimator's kernel estimate f_{n,h}
  // (standardized Euclidean); empty = the regressor's bandwidth grid.
  std::vector<double> gradient_bandwidth_grid;
  // t = step_ratio * h for the gradient estimator (both papers: t = h/2).
  double step_ratio = 0.5;
  // The gradient estimate behind the learned metric: the slope of a local
  // plane over the samples within h + t by default, or both papers' finite
  // differences of f_{n,h} (docs/estimators.md, "Gradient estimate"). The
  // slopes made the held-out errors of the GW and EGOP configurations lower
  // on 11 of the 16 sets of data/, 7% lower on average
  // (bench/notes/results-history.md).
  GradientEstimatorKind gradient_estimator =
      GradientEstimatorKind::kLocalLinear;

  // Forgetting factor of the prequential errors (model selection, nMSE).
  double selection_forgetting = 0.999;
  // The honest error's lag W: each sample is also predicted without the
  // samples among the min(W, n/10) seen before it (docs/estimators.md,
  // "Honest error"), and that leave-recent-out error, not the plain
  // prequential one, chooses h or k. 200: the last 200 ms of a 1 kHz
  // stream. 0 = the plain prequential error. Bounded stores use at most
  // half their limit.
  std::size_t honest_lag = 200;
  // Which grid values predict each sample. All of them while fewer than
  // full_grid_below samples are stored (and on every full_grid_every-th
  // sample if that is not 0); otherwise those up to selection_window steps
  // above the largest current choice, so the choice can climb a step at a
  // time. The wide bandwidths cost the most (their balls hold the most
  // samples: at n = 10^5 one search at the widest takes milliseconds) and
  // are rarely the choice. full_grid_every = 1 evaluates the whole grid on
  // every sample.
  std::size_t selection_window = 3;
  std::size_t full_grid_every = 0;
  std::size_t full_grid_below = 1024;
  // Which samples are scored (step 1 of learning one: the grid's
  // predictions of the sample before it is learned, which choose h or k,
  // calibrate the intervals and make the prequential and honest errors;
  // and MLKR's online step, made from the same neighbours): one in
  // ScoringStride(n) at n stored samples, the sample numbered s scored when
  // s % stride == 0. Every sample while fewer than kScoreEverySampleBelow
  // are stored, then one in 2, 4, ... as the store doubles, up to
  // max_scoring_stride (1: every sample, as models created before it
  // scored). On a fast stream consecutive samples are near copies, and
  // their scores say almost the same; the scoring is half the learner's
  // CPU (docs/estimators.md, "Scoring a fast stream").
  std::size_t max_scoring_stride = 8;
  static constexpr std::size_t kScoreEverySampleBelow = 4096;
  std::size_t ScoringStride(std::size_t stored) const;
  // Forgetting factor of the online metric sums (1 = the plain mean, eq. 2).
  double metric_forgetting = 1.0;
  // Each time the store has grown by this factor (from at least 64
  // samples), the metric's sums are recomputed with the papers' batch
  // estimator over the stored samples (in the background for large stores,
  // taking effect like an index rebuild), and online estimates continue on
  // top. 0 = never (pure online sums). Only with metric_forgetting = 1.
  double metric_refresh_growth = 2.0;
  // The stored samples a growth refresh estimates gradients at, at most: a
  // stride through a larger store (each estimate still made from every
  // stored sample), so that a refresh costs about the same at any size
  // (about 1.5 s on one core at d = 21). Fewer while the store is small:
  // at most half the samples before the refresh takes over
  // (RefreshPoints), so it keeps pace with learning instead of making
  // learning wait for it. 0 = every stored sample (the papers' batch mean
  // exactly, as Refit always computes it).
  std::size_t metric_refresh_samples = 16384;
  // Ridge added to the normalized EGOP before the square root.
  double egop_ridge = 1e-3;
  // MLKR (docs/estimators.md, "MLKR"): the map's rank (0 = input_dim: a
  // full-rank map), the neighbours c each point's leave-one-out estimate
  // runs over in its batch fit and online steps, the samples a fit reads at
  // most (a stride through a larger store: each refresh then costs about
  // the same at any size), the evaluations of its objective per descent (a
  // fit runs two) and its budget: samples read x evaluations per descent at
  // most, so that a fit of a large store evaluates fewer times (at least
  // kMinBudgetedMlkrSteps, or mlkr_fit_steps if fewer) while a small one
  // does every evaluation (0: no budget, as models saved before it had).
  // With 5,000 samples, 60 evaluations and a budget of 60 x 2,048, a fit
  // costs about 1 s on one core at d = 21 (bench/notes/results-history.md, "A
  // fit's cost capped, not cut"). Its refreshes follow metric_refresh_growth;
  // every learned sample also takes a stochastic gradient step.
  std::size_t mlkr_rank = 0;
  std::size_t mlkr_neighbors = 32;
  std::size_t mlkr_fit_samples = 5000;
  std::size_t mlkr_fit_steps = 60;
  std::size_t mlkr_fit_budget = 60 * 2048;
  // A growth fit descends twice — from the paper's initial map and from
  // where the map is — until the maps' last fit read this many samples;
  // from then on the map is settled and a fit descends from it alone (0:
  // always twice). Models saved before it existed settle at a full budget
  // (mlkr_fit_budget / mlkr_fit_steps, 2,048 by default; never without a
  // budget).
  std::size_t mlkr_settled_after = 1024;
  // Whether kAuto's candidates include MLKR: always for models made now;
  // models saved before MLKR existed keep their three.
  bool auto_includes_mlkr = true;
  // GLML (docs/estimators.md, "GLML"): the paper's gamma as a fraction of
  // the larger |eigenvalue| of its rank-2 matrix at each query (GlmlMetric;
  // the paper's experiments use 1e-2). Its Gaussian is the online ridge the
  // linear base would be (base_ridge, base_forgetting), kept without the
  // base: the residuals of a linear base have no gradient under that
  // Gaussian, so the metric would be Euclidean. A GLML model therefore has
  // linear_base false, and kAuto includes GLML only without a base (and
  // only for models saved since GLML existed).
  double glml_gamma_ratio = 1e-2;
  bool auto_includes_glml = true;

  // Rebuild an index when its distances have moved by this relative amount
  // (MetricTransform::RelativeChange), checked every drift_check_every
  // samples.
  double drift_tolerance = 0.05;
  std::size_t drift_check_every = 64;
  // Index rebuilds and metric refreshes run in the background and take
  // effect rebuild_lag_fraction of the store's size later (at least
  // rebuild_lag samples later, for stores of small_store_below samples and
  // more; small stores follow their metric closely — at most 64 samples
  // later — and refresh it four times as often).
  std::size_t small_store_below = 2048;
  std::size_t rebuild_lag = 512;
  double rebuild_lag_fraction = 0.25;
  // Whether that work takes over at the fixed count, the learner waiting
  // for it there, or once the model's log has also recorded it done
  // (take_over_key.h). A server hosting the model with a log sets
  // kLogged; models saved before the rule existed load kFixedCount.
  TakeOverRule take_over = TakeOverRule::kFixedCount;
  // Index trees built over this many samples or more of an unbounded store
  // reference the stored rows instead of keeping mapped copies (diagonal
  // metrics; docs/estimators.md, "The index"): 8 bytes per sample per index
  // instead of 8 d, for searches ~15% slower (rows lie in stream order, not
  // near their neighbours). Speed and memory only, never results: not
  // saved in snapshots.
  std::size_t reference_rows_from = std::size_t{1} << 18;

  // Prediction intervals (docs/estimators.md, "Intervals";
  // AdaptiveConformal): the central coverage level in (0, 1), the honest
  // scores kept per target, and the adaptive step (0: split conformal).
  double interval_level = 0.9;
  std::size_t interval_window = 2000;
  double interval_step = 0.005;
  // Whether a query's interval widens with its difficulty (its neighbours'
  // distance, the random-feature base's variance, the candidates'
  // disagreement: DifficultyScale, learned from the honest errors) instead
  // of being the same width at every input. Models saved before it existed
  // have false.
  bool interval_difficulty = false;
  // The queries' calibration lag L: a query's interval is calibrated on
  // each scored sample predicted as a query would be, from the samples
  // older than the min(L, n/D) seen just before it (D =
  // interval_lag_divisor; docs/estimators.md,
  // "Intervals"), not on the honest predictions. A query may ask where the
  // stream has not been for seconds (a robot's next motion), while the
  // honest lag, which also chooses h or k, stays short. It costs a search
  // per scored sample, which skips the index's subtrees of recent samples
  // (SplitKnnRules; on the simulated arm 1.11 times the learner's CPU).
  // At most the honest lag (0 included), the honest predictions calibrate,
  // as in models saved before it existed. Bounded stores use at most half
  // their limit.
  std::size_t interval_lag = 5000;
  // D, the share of the samples seen that interval_lag leaves out while it
  // is under L: one in D. A quarter covered SARCOS's later segment 0.886
  // at 90% where a tenth (the honest lag's share, and the only one before
  // it existed) covered 0.859, and put 12 of the 48 set-levels of data/'s
  // held-out sets outside 2 points of their level instead of 16.
  std::size_t interval_lag_divisor = 4;
  // The queries' calibration made again by the current model while the
  // stream is young (IntervalRecalibration; docs/estimators.md,
  // "Recalibrating a young model"): stored samples rescored per sample
  // learned, each without itself, while the store holds at most 256
  // samples (fewer in proportion after). 0: the streamed
  // scores alone, as in models saved before it existed; bounded stores
  // never recalibrate (their slots are not in arrival order).
  std::size_t interval_recalibration = 8;

  Capacity capacity;
  std::uint64_t seed = 0;

  std::size_t num_targets() const { return target_names.size(); }
  // How many fits the local linear regressor makes per k: 2 (its first
  // local_linear_leading coordinates, then all of them) where it is scored
  // in a metric whose coordinates are ordered by weight, else 1. A
  // k-choosing regressor's grid value g is k_grid[g / CoordinateChoices()]
  // (each k repeated for k-NN, which has no coordinates to choose).
  std::size_t CoordinateChoices() const;
  // The k and coordinates of a k-choosing regressor's grid value g
  // (coordinates 0: all of them).
  LocalLinearFit FitAt(std::size_t g) const;
  std::size_t KAt(std::size_t g) const { return FitAt(g).k; }
  // The number of grid values of the regressor: bandwidth_grid's, or
  // k_grid's times CoordinateChoices().
  std::size_t GridSize() const;
  // The metrics the model keeps a prediction index in (CandidateMetrics,
  // without MLKR for an old kAuto model).
  std::vector<MetricKind> Candidates() const;
  // Whether it learns an MLKR map, and whether it searches under GLML.
  bool LearnsMlkr() const;
  bool SearchesGlml() const;
  // The targets a neighbour carries to the regressors: m (the residuals
  // under the base, or the raw targets without one), then the m raw
  // targets again with per_target_base.
  std::size_t NeighborColumns() const {
    return per_target_base ? 2 * num_targets() : num_targets();
  }
  // Whether it keeps the online ridge: as its linear base, or as GLML's
  // Gaussian.
  bool KeepsRidge() const {
    return (linear_base && !random_feature_base) || SearchesGlml();
  }
  // honest_lag, at most half a bounded store's limit.
  std::size_t EffectiveHonestLag() const;
  // interval_lag, at most half a bounded store's limit; 0 unless it is
  // longer than EffectiveHonestLag() (the honest predictions calibrate).
  std::size_t EffectiveIntervalLag() const;
  // The evaluations per descent of an MLKR fit that reads `samples_read`
  // samples: mlkr_fit_steps within mlkr_fit_budget, at least
  // kMinBudgetedMlkrSteps (or mlkr_fit_steps if fewer).
  std::size_t MlkrFitSteps(std::size_t samples_read) const;
};

// The fewest evaluations per descent mlkr_fit_budget leaves an MLKR fit:
// 20 were 7% worse than 60 at 20,000 samples of the arm, where 60 within
// the budget were as good (bench/notes/results-history.md, "Cheaper MLKR
// fits").
inline constexpr std::size_t kMinBudgetedMlkrSteps = 20;

// The longest input or target name, in bytes: names label a model's
// columns and are kept with it, in its log and its snapshots.
inline constexpr std::size_t kMaxColumnNameLength = 128;

// The widest input a linear base takes: a 256 x 256 Cholesky solve is
// about 5.6 Mflop per sample.
inline constexpr std::size_t kMaxLinearBaseDim = 256;

// The most features a random-feature base takes (1 + d + 2D; D = 1,024
// frequencies up to d = 511): its sums cost F^2 / 2 multiply-adds per
// sample (3.3 M at 2,560, by blocks), a solve F^3 / 3 every F / 4 samples
// or more, and it keeps about 3 F^2 doubles (157 MB at 2,560).
inline constexpr std::size_t kMaxRandomFeatures = 2560;

// The largest k of a k-NN or local linear regressor, and the most
// neighbours an MLKR estimate runs over.
inline constexpr std::size_t kMaxNeighbors = 4096;

// The most honest scores an interval keeps per target: a learned sample
// moves up to that many in a sorted insertion (8 bytes each).
inline constexpr std::size_t kMaxIntervalWindow = 100000;

// Default grids: bandwidths sqrt(d) * 2^(-6), 2^(-5.75), ..., 2^(0.5), a
// quarter octave apart (about the range of bandwidth / diameter the GW
// paper searches, 0.02 to 1, for standardized data, and about as fine where
// the choices fall); k = 1..8, then about 25% apart up to 64.
// GLML's (a model of that metric) goes two octaves further up: its metric
// has det L = 1 and stretches two directions about tenfold, so the other
// d - 2 shrink and the bandwidths chosen grow (batch cross-validation chose
// the default grid's widest on bank32nh and kin8nm).
std::vector<double> DefaultBandwidthGrid(
    std::size_t input_dim, MetricKind metric = MetricKind::kEuclidean);
std::vector<std::size_t> DefaultKGrid();
// The local linear regressor's: k = 8 to 256, about 1.5x apart (a fit in d
// dimensions wants several times d neighbours; its ridge keeps a fit to
// fewer well-posed).
std::vector<std::size_t> DefaultLocalLinearKGrid();
// The default k grid of a regressor (kAuto: the two above merged).
std::vector<std::size_t> DefaultKGridFor(RegressorKind regressor);

// Fills empty grids with the defaults and checks every field; the error
// names the field.
absl::Status CompleteAndValidate(ModelConfig* config);
// An interval level, the model's or one a prediction asks for: in (0, 1),
// or INVALID_ARGUMENT "interval_level: must be in (0, 1), got 2".
absl::Status ValidateIntervalLevel(double level);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_CONFIG_H_
