#include "core/model/model_learner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "core/metric/mlkr_objective.h"
#include "core/model/combined_prediction.h"
#include "core/regression/local_average.h"
#include "core/regression/local_linear.h"

namespace streamreg {
namespace {

// The lag the streamed scores leave out: the band a series is told by
// (IntervalRecalibration).
std::size_t RecalibrationLag(const ModelState& state)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock) {
  return std::max(state.interval_recent.lag(), state.recent.lag());
}

// k-NN's values at the first `evaluated` grid values (k_grid's first
// evaluated / CoordinateChoices() k, each repeated for every choice of
// coordinates: k-NN has none to choose).
void NearestAverageGridEachK(const ModelConfig& config, std::size_t evaluated,
                             const NeighborTargets& near,
                             std::span<const double> fallback,
                             std::span<double> values) {
  const std::size_t choices = config.CoordinateChoices();
  const std::size_t ks = evaluated / choices;
  const std::size_t width = near.num_targets();
  NearestAverageGrid(std::span(config.k_grid).first(ks), near, fallback,
                     values.first(ks * width));
  if (choices == 1) return;
  // From the last k down, so that no k's row is overwritten before it is
  // copied (k's rows start at or after its own).
  for (std::size_t k = ks; k-- > 0;) {
    for (std::size_t c = choices; c-- > 0;) {
      const std::size_t row = k * choices + c;
      if (row == k) continue;
      std::copy_n(values.begin() + k * width, width,
                  values.begin() + row * width);
    }
  }
}

}  // namespace

struct ModelLearner::Scratch {
  Scratch(std::size_t dim, std::size_t num_targets, std::size_t columns,
          std::size_t num_indexes, GradientEstimatorKind estimator_kind)
      : near(columns),
        older(columns),
        interval_older(columns),
        gradient_near(num_targets),
        point(dim),
        estimator(dim, num_targets, estimator_kind),
        grid_values(num_indexes),
        evaluated(num_indexes, 0),
        candidates(num_indexes),
        answer_candidates(num_indexes),
        mlkr_gradients(num_indexes),
        rescoring_older(columns) {}
  std::vector<Neighbor> found;
  NeighborTargets near;
  // The same without the recent samples (the honest error's).
  OlderNeighbors older;
  // A query's neighbours without the samples the queries' interval
  // calibration leaves out (ModelState::interval_recent).
  OlderNeighbors interval_older;
  // The gradient estimator's neighbours and their raw targets.
  NeighborTargets gradient_near;
  std::vector<double> z;
  std::vector<double> point;  // a neighbour's coordinates (PointOf)
  GradientEstimator estimator;
  // Per prediction index: its grid's values for the sample (per grid value,
  // every scored regressor's m targets), and how many of them were
  // evaluated.
  std::vector<std::vector<double>> grid_values;
  std::vector<std::size_t> evaluated;
  // Per prediction index, with config.combine: each target's candidates'
  // honest predictions of the sample ([t * NumCandidates + c]), and their
  // prequential ones (the next sample's).
  std::vector<std::vector<double>> candidates;
  std::vector<std::vector<double>> answer_candidates;
  // One scored regressor's grid values, and the sample's targets once per
  // scored regressor (what the selectors score against).
  std::vector<double> regressor_values;
  std::vector<double> scored_truth;
  std::vector<double> gradient_grid_values;
  std::size_t gradient_evaluated = 0;
  GradientEstimate estimate;
  // The honest prediction of the sample being learned, and, where the
  // queries' intervals leave out more than the honest error does, the
  // sample predicted as a query without those samples (calibrates_apart).
  Prediction honest;
  Prediction calibrating;
  bool calibrates_apart = false;
  // While the recalibration collects, the sample predicted as a query with
  // nothing left out (its streamed score).
  Prediction fresh;
  bool recalibrating = false;
  // The linear base's values at the sample (empty without a base), and the
  // base with the sample learned, made before the state is locked
  // exclusively and swapped in by Record.
  std::vector<double> base_values;
  // With config.interval_difficulty, the random-feature base's variances at
  // the sample (empty otherwise).
  std::vector<double> base_variance;
  std::optional<OnlineRidge> next_base;
  // The targets' running means (the gradient estimator's fallback), and the
  // grids' fallback: the means, or zero residuals with a base.
  std::vector<double> means;
  std::vector<double> fallback;
  // Per target, the prediction index it predicts from (ChosenIndexes).
  std::vector<std::size_t> chosen;
  // A combining model's prediction of the sample from one index, every
  // target predicting from it (CombineAtIndex).
  std::vector<std::size_t> every_target;
  Prediction at_index;
  // Per prediction index: the MLKR step's gradient (empty: no step), and
  // its inputs (MlkrGradient).
  std::vector<std::vector<double>> mlkr_gradients;
  std::vector<double> mlkr_scales;
  std::vector<double> mlkr_x;
  std::vector<double> mlkr_y;
  std::vector<double> mlkr_neighbor_x;
  std::vector<double> mlkr_neighbor_y;
  std::vector<const double*> mlkr_x_rows;
  std::vector<const double*> mlkr_y_rows;
  // GLML: the density's gradient direction at the sample.
  std::vector<double> glml_direction;
  // The stored samples rescored for the queries' recalibration before this
  // sample (RescoreStored): positions [rescored.first, rescored.end) of the
  // pass, per position m scores without itself and, where the pass asks,
  // m without its band and m without the spread slots.
  IntervalRecalibration::Positions rescored;
  std::vector<double> rescored_scores;
  std::vector<double> rescored_band_scores;
  std::vector<double> rescored_spread_scores;
  OlderNeighbors rescoring_older;
  Prediction rescoring;
  std::vector<double> rescoring_base;
  std::vector<double> rescoring_variance;
  // Of a scored sample's nearest stored neighbours (the first prediction
  // index's), the share that are among the last `lag` stored, and its
  // chance among samples in no order (NaN: not counted), for
  // IntervalRecalibration::NoteNearest.
  double nearest_recent_share = 0.0;
  double nearest_chance = 0.0;
  // The model's honest and prequential nMSE per target, for
  // IntervalRecalibration::LooksLikeASeries.
  std::vector<double> honest_nmse;
  std::vector<double> prequential_nmse;
};

ModelLearner::ModelLearner(const ModelState& state)
    : scratch_(std::make_unique<Scratch>(
          state.config.input_dim, state.config.num_targets(),
          state.config.NeighborColumns(), state.predictions.size(),
          state.config.gradient_estimator)) {}

ModelLearner::~ModelLearner() = default;

void ModelLearner::Learn(ModelState& state, const Sample& sample,
                         Prediction* before) {
  const std::size_t m = state.config.num_targets();
  Prediction prediction;
  prediction.value.assign(m, 0.0);
  prediction.spread.assign(m, 0.0);
  prediction.neighbors.assign(m, 0);
  Prediction& honest = scratch_->honest;
  honest = prediction;
  honest.difficulty.assign(
      state.config.interval_difficulty ? m * kDifficultyFeatures : 0,
      std::numeric_limits<double>::infinity());
  bool scored = true;  // ScoresNextSample, decided under the lock
  {
    SharedLock lock(state.lock);
    prediction.learned = state.store.seen();
    // With a base the grids average residuals: their fallback is a zero
    // residual (the base's value); over the raw targets, their means.
    Scratch& scratch = *scratch_;
    scored = ScoresNextSample(state);
    // The base's variances only where a scored sample's difficulty reads
    // them.
    BaseValues(state, sample.x, &scratch.base_values,
               scored && state.config.interval_difficulty
                   ? &scratch.base_variance
                   : nullptr);
    scratch.means.assign(state.targets.mean().begin(),
                         state.targets.mean().end());
    if (state.config.linear_base) {
      scratch.fallback.assign(m, 0.0);
    } else {
      scratch.fallback = scratch.means;
    }
    if (state.config.per_target_base) {
      scratch.fallback.insert(scratch.fallback.end(), scratch.means.begin(),
                              scratch.means.end());
    }
    // 1. Every grid value predicts the sample (test before train), if it
    // is one of those scored.
    ChosenIndexes(state, &scratch.chosen);
    scratch.nearest_recent_share = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; scored && i < state.predictions.size(); ++i) {
      EvaluateGrid(state, i, sample.x, scratch.fallback, &prediction, &honest);
      if (i == 0) NoteNearestAge(state);
      MlkrGradient(state, i, sample);
    }
    // The queries' calibration: the sample predicted as a query would be,
    // without the samples it leaves out, if it leaves out more; and for the
    // recalibration's, while it collects, with nothing left out.
    scratch.calibrates_apart =
        scored && state.interval_recent.lag() > state.recent.lag();
    if (scratch.calibrates_apart) {
      scratch.interval_older.left_out = LeftOutSlots(&state.interval_recent);
      PredictLeavingOut(state, sample.x, scratch.base_values,
                        scratch.base_variance, &scratch.interval_older,
                        &scratch.calibrating);
    }
    scratch.recalibrating = scored && state.recalibration.collecting();
    if (scratch.recalibrating) {
      scratch.interval_older.left_out = LeftOutSlots();
      PredictLeavingOut(state, sample.x, scratch.base_values,
                        scratch.base_variance, &scratch.interval_older,
                        &scratch.fresh);
    }
    // The stored samples the queries' recalibration rescores now.
    RescoreStored(state);
    // The intervals of the answer the caller asked for (none for Ingest).
    if (scored && before != nullptr) {
      SetIntervals(state, PredictOptions::ForNextSample(), &prediction);
    }
    // 2. The gradient estimate from the samples before this one.
    if (state.gradient_index != nullptr) {
      EstimateGradient(state, sample.x, scratch.means);
    }
    // 3. The base (or GLML's Gaussian) with the sample (a d x d solve:
    // outside the exclusive lock).
    if (state.base.has_value()) {
      scratch.next_base = state.base;
      scratch.next_base->Add(sample.x, sample.y);
    }
    if (state.random_base.has_value()) {
      state.LearnersRandomBase().Prepare(sample.x, sample.y, state.store);
    }
  }
  PrepareTakeOvers(state, prediction.learned + 1);
  {
    // 4. Store, index and count it; if step 5 may change what predictions
    // see, readers wait until it is done.
    ExclusiveLock lock(state.lock);
    Record(state, sample, prediction, scored);
    if (PredictionsMayChange(state)) state.BeginSettling();
  }
  if (before != nullptr) {
    *before = scored ? std::move(prediction) : Prediction{};
  }
  // 5. Follow the metric and the standardization.
  AfterSample(state);
  state.Settle();
}

bool ModelLearner::ScoresNextSample(const ModelState& state) {
  const std::size_t stride = state.config.ScoringStride(state.store.size());
  return (state.store.seen() + 1) % stride == 0;
}

void ModelLearner::Score(ModelState& state, const Sample& sample,
                         const Prediction& prediction) {
  Scratch& scratch = *scratch_;
  scratch.scored_truth.clear();
  for (std::size_t s = 0; s < NumScoredVariants(state.config); ++s) {
    scratch.scored_truth.insert(scratch.scored_truth.end(), sample.y.begin(),
                                sample.y.end());
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    state.selectors[i].Add(scratch.grid_values[i], scratch.scored_truth,
                           scratch.evaluated[i]);
  }
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    state.mlkr_maps[i].Step(scratch.mlkr_gradients[i]);
  }
  if (state.config.combine) LearnCombinations(state, sample);
  // The queries' intervals calibrated (CalibrateQueries), and those of the
  // next sample's predictions on its prequential error's score.
  for (std::size_t t = 0; t < sample.y.size(); ++t) {
    CalibrateQueries(state, sample, t);
    const double error = std::abs(sample.y[t] - prediction.value[t]);
    state.answer_intervals.Add(
        t, error / IntervalScale(state, t, IntervalCalibration::kNextSample));
  }
  state.score.Add(prediction.value, sample.y);
  state.honest_score.Add(scratch.honest.value, sample.y);
}

void ModelLearner::CalibrateQueries(ModelState& state, const Sample& sample,
                                    std::size_t t) {
  const Prediction& calibrating =
      scratch_->calibrates_apart ? scratch_->calibrating : scratch_->honest;
  state.intervals.Add(t,
                      QueryIntervalScore(state, t, sample.y[t], calibrating));
  if (scratch_->recalibrating) {
    state.recalibration.AddStreamed(
        t, QueryIntervalScore(state, t, sample.y[t], scratch_->fresh));
  }
  if (state.config.interval_difficulty) {
    state.difficulty.Add(
        t,
        std::span(calibrating.difficulty)
            .subspan(t * kDifficultyFeatures, kDifficultyFeatures),
        std::abs(sample.y[t] - calibrating.value[t]),
        IntervalScale(state, t, IntervalCalibration::kQuery));
  }
}

void ModelLearner::Record(ModelState& state, const Sample& sample,
                          const Prediction& prediction, bool scored) {
  Scratch& scratch = *scratch_;
  const SampleStore::Placement placement = state.store.Place();
  if (scored) Score(state, sample, prediction);
  if (state.gradient_index != nullptr) {
    state.gradient_selector.Add(scratch.gradient_grid_values, sample.y,
                                scratch.gradient_evaluated);
    state.gradients.Add(scratch.estimate, state.config.metric_forgetting);
    NoteEstimate(state, scratch.estimate);
  }
  if (placement.keep) {
    const std::vector<MetricIndex*> indexes = state.AllIndexes();
    if (placement.replaces) {
      for (MetricIndex* index : indexes) index->Remove(placement.slot);
    }
    state.store.Put(placement.slot, sample.x, sample.y, sample.sample_id);
    // The stored row: indexes of an unbounded store keep pointing at it.
    const std::span<const double> stored(state.store.x(placement.slot),
                                         sample.x.size());
    for (MetricIndex* index : indexes) index->Insert(placement.slot, stored);
  }
  const std::uint64_t slot =
      placement.keep ? placement.slot : RecentSlots::kNotStored;
  state.recent.Add(slot, state.store.seen());
  if (state.interval_recent.max_lag() > 0) {
    state.interval_recent.Add(slot, state.store.seen());
  }
  state.inputs.Add(sample.x);
  state.targets.Add(sample.y);
  if (state.base.has_value()) std::swap(*state.base, *scratch.next_base);
  if (state.random_base.has_value()) {
    state.random_base->Commit(placement.keep
                                  ? std::optional<std::size_t>(placement.slot)
                                  : std::nullopt,
                              state.store);
  }
  if (state.random_refresh.running()) {
    state.random_refresh.Feed(sample.x, sample.y);
  }
  RecordRescored(state);
}

void ModelLearner::NoteNearestAge(const ModelState& state) {
  Scratch& scratch = *scratch_;
  if (state.recalibration.ended()) return;
  const std::size_t stored = state.store.size();
  const std::size_t lag = RecalibrationLag(state);
  scratch.nearest_recent_share =
      IntervalRecalibration::RecentShareOfNearest(scratch.found, stored, lag);
  scratch.nearest_chance =
      static_cast<double>(lag) /
      static_cast<double>(std::max<std::size_t>(stored, 1));
}

void ModelLearner::RescoreStored(const ModelState& state) {
  Scratch& scratch = *scratch_;
  const IntervalRecalibration& pass = state.recalibration;
  scratch.rescored = pass.DueBefore(state.store.seen());
  const std::size_t m = state.config.num_targets();
  const std::size_t count = scratch.rescored.end - scratch.rescored.first;
  scratch.rescored_scores.resize(count * m);
  scratch.rescored_band_scores.resize(count * m);
  scratch.rescored_spread_scores.resize(count * m);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t position = scratch.rescored.first + i;
    const std::uint64_t slot = pass.SlotAt(position);
    BaseValues(state, {state.store.x(slot), state.store.dim()},
               &scratch.rescoring_base,
               state.config.interval_difficulty ? &scratch.rescoring_variance
                                                : nullptr);
    const auto scores = [&](std::vector<double>& all) {
      return std::span(all).subspan(i * m, m);
    };
    ScoreWithout(state, slot, LeftOutSlots::Between(slot, slot),
                 scores(scratch.rescored_scores));
    if (!pass.BandAt(position)) continue;
    // The band, L either side, and as many slots spread over 2L either
    // side (every other one, the sample's own among them).
    const std::uint64_t lag = pass.band_lag();
    ScoreWithout(state, slot,
                 LeftOutSlots::Between(slot - std::min(slot, lag), slot + lag),
                 scores(scratch.rescored_band_scores));
    const std::uint64_t before = std::min(lag, slot / 2);
    ScoreWithout(state, slot,
                 LeftOutSlots::Between(slot - 2 * before,
                                       slot + 2 * (2 * lag - before), 2),
                 scores(scratch.rescored_spread_scores));
  }
}

void ModelLearner::ScoreWithout(const ModelState& state, std::uint64_t slot,
                                LeftOutSlots left_out,
                                std::span<double> scores) {
  Scratch& scratch = *scratch_;
  const std::span<const double> x(state.store.x(slot), state.store.dim());
  scratch.rescoring_older.left_out = left_out;
  PredictLeavingOut(state, x, scratch.rescoring_base,
                    scratch.rescoring_variance, &scratch.rescoring_older,
                    &scratch.rescoring);
  const double* y = state.store.y(slot);
  for (std::size_t t = 0; t < scores.size(); ++t) {
    scores[t] = QueryIntervalScore(state, t, y[t], scratch.rescoring);
  }
}

void ModelLearner::RecordRescored(ModelState& state) {
  Scratch& scratch = *scratch_;
  IntervalRecalibration& pass = state.recalibration;
  const std::size_t m = state.config.num_targets();
  const std::span<const double> scores(scratch.rescored_scores);
  const std::span<const double> band(scratch.rescored_band_scores);
  const std::span<const double> spread(scratch.rescored_spread_scores);
  for (std::size_t position = scratch.rescored.first;
       position < scratch.rescored.end; ++position) {
    const std::size_t at = (position - scratch.rescored.first) * m;
    const bool banded = pass.BandAt(position);
    pass.Record(position, scores.subspan(at, m),
                banded ? band.subspan(at, m) : std::span<const double>(),
                banded ? spread.subspan(at, m) : std::span<const double>());
  }
  scratch.rescored = {};
  if (pass.ended()) return;  // nothing more to decide, every sample after
  pass.NoteNearest(scratch.nearest_recent_share, scratch.nearest_chance);
  const std::uint64_t lag = RecalibrationLag(state);
  std::vector<double>& honest = scratch.honest_nmse;
  std::vector<double>& prequential = scratch.prequential_nmse;
  honest.resize(m);
  prequential.resize(m);
  for (std::size_t t = 0; t < m; ++t) {
    honest[t] = state.honest_score.Nmse(t);
    prequential[t] = state.score.Nmse(t);
  }
  pass.AfterSample(
      state.store.seen(), state.store.size(), lag,
      IntervalRecalibration::LooksLikeASeries(honest, prequential));
}

void ModelLearner::EvaluateGrid(const ModelState& state, std::size_t i,
                                std::span<const double> x,
                                std::span<const double> fallback,
                                Prediction* prediction, Prediction* honest) {
  const ModelConfig& config = state.config;
  Scratch& scratch = *scratch_;
  const std::shared_ptr<const MetricIndex::Generation> generation =
      state.predictions[i].index->current();
  scratch.z.resize(config.input_dim);
  generation->transform.Apply(x, scratch.z);
  const std::size_t grid_size = state.selectors[i].grid_size();
  const std::size_t evaluated = EvaluatedPrefix(
      state, grid_size, WidestScored(state, i), config.CoordinateChoices());
  scratch.evaluated[i] = evaluated;
  scratch.grid_values[i].resize(grid_size * NumScoredVariants(config) *
                                config.num_targets());
  if (state.predictions[i].metric != MetricKind::kGlml) {
    ScoreNeighbors(state, i, *generation, fallback, nullptr, std::nullopt,
                   prediction, honest);
    return;
  }
  // GLML: each target's metric at x, and a search under it.
  GlmlDensityDirection(state, x, &scratch.glml_direction);
  for (std::size_t t : state.predictions[i].targets) {
    const GlmlMetric metric =
        GlmlMetricFor(state, *generation, scratch.glml_direction, t);
    ScoreNeighbors(state, i, *generation, fallback, &metric, t, prediction,
                   honest);
  }
}

void ModelLearner::ScoreNeighbors(const ModelState& state, std::size_t i,
                                  const MetricIndex::Generation& generation,
                                  std::span<const double> fallback,
                                  const GlmlMetric* metric,
                                  std::optional<std::size_t> only_target,
                                  Prediction* prediction, Prediction* honest) {
  const ModelConfig& config = state.config;
  Scratch& scratch = *scratch_;
  const std::size_t evaluated = scratch.evaluated[i];
  // The honest prediction sees the neighbours the honest error allows, and
  // the grid is scored on them (the lag is at most a tenth of the samples
  // seen: the older ones are never none). Without a lag, both see every
  // sample before this one (the prequential error).
  const bool leave_out = !state.recent.empty();
  scratch.older.left_out = LeftOutSlots(&state.recent);
  GatherNeighbors(state, generation, scratch.z, evaluated - 1, &scratch.found,
                  &scratch.near, leave_out ? &scratch.older : nullptr, metric);
  const NeighborTargets& near = leave_out ? scratch.older.near : scratch.near;
  // Row g of the grid values: each scored variant's m targets at grid
  // value g (plus the base's values for a variant with the base: its
  // regressor predicts residuals); with only_target, that target's columns
  // alone. One evaluation of a regressor serves its variants with and
  // without the base (the neighbours carry both columns).
  const std::size_t m = config.num_targets();
  const std::size_t columns = config.NeighborColumns();
  const std::size_t regressors = NumScoredRegressors(config.regressor);
  const std::size_t scored = NumScoredVariants(config);
  const std::span<const double> base = scratch.base_values;
  std::vector<double>& grid_values = scratch.grid_values[i];
  scratch.regressor_values.resize(evaluated * columns);
  const std::size_t first = only_target.value_or(0);
  const std::size_t last = only_target.has_value() ? first + 1 : m;
  for (std::size_t r = 0; r < regressors; ++r) {
    EvaluateRegressor(config, ScoredRegressor(config.regressor, r), evaluated,
                      near, fallback, scratch.regressor_values);
    for (std::size_t s = r; s < scored; s += regressors) {
      const ScoredVariant variant = ScoredVariantAt(config, s);
      for (std::size_t g = 0; g < evaluated; ++g) {
        for (std::size_t t = first; t < last; ++t) {
          grid_values[(g * scored + s) * m + t] =
              scratch.regressor_values[g * columns + variant.first_column + t] +
              (variant.with_base ? base[t] : 0.0);
        }
      }
    }
  }
  // The model's own prediction, made with the current choice per target
  // (combining: the candidates weighed for the next sample, their values
  // kept to learn those weights), and the honest one: the grid's values at
  // each target's choice (not a second fit of them).
  if (config.combine) {
    CombineAtIndex(state, i, only_target, prediction);
  } else {
    PredictTargets(state, i, scratch.chosen, scratch.near, base, prediction,
                   only_target, CombinedOptions());
  }
  HonestFromGrid(state, i, only_target, honest);
  SetDifficulty(state, i, scratch.chosen, near, scratch.base_variance,
                config.combine ? std::span<const double>(scratch.candidates[i])
                               : std::span<const double>(),
                only_target, honest);
}

void ModelLearner::CombineAtIndex(const ModelState& state, std::size_t i,
                                  std::optional<std::size_t> only_target,
                                  Prediction* prediction) {
  Scratch& scratch = *scratch_;
  const std::size_t m = state.config.num_targets();
  scratch.answer_candidates[i].resize(m * NumCandidates(state.config));
  CombinedOptions combined =
      CombinedOptions::WeighedFor(IntervalCalibration::kNextSample);
  combined.candidates = scratch.answer_candidates[i];
  // Every target the index scores predicts from it here (a choice of metric
  // per target may move to it); the model's prediction takes those that
  // predict from it now.
  scratch.every_target.assign(m, i);
  Prediction& at_index = scratch.at_index;
  at_index.value.assign(m, 0.0);
  at_index.spread.assign(m, 0.0);
  at_index.neighbors.assign(m, 0);
  PredictTargets(state, i, scratch.every_target, scratch.near,
                 scratch.base_values, &at_index, only_target, combined);
  for (std::size_t t : state.predictions[i].targets) {
    if (!PredictsFrom(scratch.chosen, i, t, only_target)) continue;
    prediction->value[t] = at_index.value[t];
    prediction->spread[t] = at_index.spread[t];
    prediction->neighbors[t] = at_index.neighbors[t];
  }
}

void ModelLearner::HonestFromGrid(const ModelState& state, std::size_t i,
                                  std::optional<std::size_t> only_target,
                                  Prediction* honest) {
  Scratch& scratch = *scratch_;
  const ModelConfig& config = state.config;
  const std::size_t m = config.num_targets();
  const std::size_t scored = NumScoredVariants(config);
  const std::size_t n = NumCandidates(config);
  if (config.combine) scratch.candidates[i].resize(m * n);
  for (std::size_t t : state.predictions[i].targets) {
    if (only_target.has_value() && t != *only_target) continue;
    // Combining, every target the index scores has its candidates (their
    // weights are learned wherever the target predicts from now).
    if (config.combine) {
      const std::span<double> candidates(scratch.candidates[i].data() + t * n,
                                         n);
      CandidatesFromGrid(state, i, t, scratch.grid_values[i],
                         scratch.base_values, candidates);
      if (scratch.chosen[t] == i) {
        honest->value[t] = state.combinations[i].Combine(t, candidates);
      }
      continue;
    }
    if (scratch.chosen[t] != i) continue;
    const RegressorChoice choice = ChoiceOf(state, i, t);
    honest->value[t] =
        scratch.grid_values[i][(choice.grid * scored + choice.variant) * m + t];
  }
}

void ModelLearner::LearnCombinations(ModelState& state, const Sample& sample) {
  const Scratch& scratch = *scratch_;
  const std::size_t n = NumCandidates(state.config);
  for (std::size_t i = 0; i < state.predictions.size(); ++i) {
    for (std::size_t t : state.predictions[i].targets) {
      state.combinations[i].Add(
          t, std::span(scratch.candidates[i]).subspan(t * n, n), sample.y[t]);
      state.answer_combinations[i].Add(
          t, std::span(scratch.answer_candidates[i]).subspan(t * n, n),
          sample.y[t]);
    }
  }
}

void ModelLearner::MlkrGradient(const ModelState& state, std::size_t i,
                                const Sample& sample) {
  Scratch& scratch = *scratch_;
  std::vector<double>& gradient = scratch.mlkr_gradients[i];
  gradient.clear();
  const MlkrMap& map = state.mlkr_maps[i];
  if (state.predictions[i].metric != MetricKind::kMlkr || !map.known()) return;
  const ModelConfig& config = state.config;
  const std::size_t d = config.input_dim;
  const std::size_t m = config.num_targets();
  const bool leave_out = !state.recent.empty();
  const std::vector<Neighbor>& found =
      leave_out ? scratch.older.found : scratch.found;
  const NeighborTargets& near = leave_out ? scratch.older.near : scratch.near;
  const std::size_t c = std::min(config.mlkr_neighbors, near.size());
  if (c == 0) return;
  // Its targets: one, or all of them (a shared map), each scaled.
  const std::size_t target = state.predictions[i].metric_target;
  const std::size_t first = target == kAllTargets ? 0 : target;
  const std::size_t width = target == kAllTargets ? m : 1;
  std::vector<double>& scales = scratch.mlkr_scales;
  scales.resize(width);
  for (std::size_t t = 0; t < width; ++t) {
    scales[t] = state.targets.ScaleOrOne(first + t);
  }
  // Called with the lock held shared (the analysis cannot see into a
  // lambda, hence the pointer).
  const RunningMoments* inputs = &state.inputs;
  const auto standardize = [d, inputs](const double* x, double* out) {
    for (std::size_t k = 0; k < d; ++k) {
      out[k] = (x[k] - inputs->mean()[k]) / inputs->ScaleOrOne(k);
    }
  };
  // The sample: inputs standardized, targets (residuals under the base, as
  // its neighbours' are) scaled.
  scratch.mlkr_x.resize(d);
  standardize(sample.x.data(), scratch.mlkr_x.data());
  scratch.mlkr_y.resize(width);
  for (std::size_t t = 0; t < width; ++t) {
    const double base =
        scratch.base_values.empty() ? 0.0 : scratch.base_values[first + t];
    scratch.mlkr_y[t] = (sample.y[first + t] - base) / scales[t];
  }
  scratch.mlkr_neighbor_x.resize(c * d);
  scratch.mlkr_neighbor_y.resize(c * width);
  scratch.mlkr_x_rows.resize(c);
  scratch.mlkr_y_rows.resize(c);
  for (std::size_t j = 0; j < c; ++j) {
    double* x = scratch.mlkr_neighbor_x.data() + j * d;
    double* y = scratch.mlkr_neighbor_y.data() + j * width;
    standardize(state.store.x(found[j].id), x);
    for (std::size_t t = 0; t < width; ++t) {
      y[t] = near.targets(j)[first + t] / scales[t];
    }
    scratch.mlkr_x_rows[j] = x;
    scratch.mlkr_y_rows[j] = y;
  }
  gradient.assign(map.a().size(), 0.0);
  MlkrPointLoss(scratch.mlkr_x, scratch.mlkr_y, scratch.mlkr_x_rows,
                scratch.mlkr_y_rows, map.a(), map.rank(), &gradient);
}

void ModelLearner::EvaluateRegressor(const ModelConfig& config,
                                     RegressorKind regressor,
                                     std::size_t evaluated,
                                     const NeighborTargets& near,
                                     std::span<const double> fallback,
                                     std::span<double> values) {
  switch (regressor) {
    case RegressorKind::kKernel:
      KernelAverageGrid(config.kernel,
                        std::span(config.bandwidth_grid).first(evaluated), near,
                        fallback, values);
      break;
    case RegressorKind::kNearest:
      NearestAverageGridEachK(config, evaluated, near, fallback, values);
      break;
    case RegressorKind::kLocalLinear:
    case RegressorKind::kAuto: {  // never scored as such (ScoredRegressor)
      thread_local std::vector<LocalLinearFit> fits;
      fits.clear();
      for (std::size_t g = 0; g < evaluated; ++g) {
        fits.push_back(config.FitAt(g));
      }
      LocalLinearGrid(fits, config.local_linear_ridge, near, fallback, values);
      break;
    }
  }
}

std::size_t ModelLearner::EvaluatedPrefix(const ModelState& state,
                                          std::size_t grid_size,
                                          std::size_t widest_best,
                                          std::size_t per_step) {
  const ModelConfig& config = state.config;
  if (state.store.size() < config.full_grid_below ||
      (config.full_grid_every != 0 &&
       state.store.seen() % config.full_grid_every == 0)) {
    return grid_size;
  }
  const std::size_t steps = widest_best / per_step + config.selection_window;
  return std::min(grid_size, (steps + 1) * per_step);
}

void ModelLearner::EstimateGradient(const ModelState& state,
                                    std::span<const double> x,
                                    std::span<const double> fallback) {
  const ModelConfig& config = state.config;
  Scratch& scratch = *scratch_;
  const std::shared_ptr<const MetricIndex::Generation> generation =
      state.gradient_index->current();
  scratch.z.resize(config.input_dim);
  generation->transform.Apply(x, scratch.z);
  const std::size_t best =
      state.gradient_selector.BestOverall(state.TargetScales());
  const double h = config.gradient_bandwidth_grid[best];
  const double t = config.step_ratio * h;
  scratch.gradient_evaluated =
      EvaluatedPrefix(state, config.gradient_bandwidth_grid.size(), best);
  const std::span<const double> grid = std::span(config.gradient_bandwidth_grid)
                                           .first(scratch.gradient_evaluated);
  const double radius = std::max(grid.back(), h + t);
  // Called with the lock held shared (the analysis cannot see into a
  // lambda, hence the pointer).
  const SampleStore* store = &state.store;
  const auto targets = [store](std::uint64_t slot) { return store->y(slot); };
  generation->tree.Read([&](const CoverTree& tree) {
    tree.RangeUnordered(scratch.z, radius, &scratch.found).IgnoreError();
    // The bandwidth of f_{n,h} is chosen like the regressor's: every grid
    // value predicts the sample in standardized Euclidean coordinates. By
    // the plain prequential error, not the honest one: f_{n,h} serves the
    // finite differences at the sample, from every sample before it, and
    // the honest choice (wider) made each estimate 10 times as costly on
    // the simulated arm for about the same held-out error
    // (docs/estimators.md).
    scratch.gradient_near.GatherInShells(config.gradient_bandwidth_grid,
                                         &scratch.found, targets);
    scratch.gradient_grid_values.resize(config.gradient_bandwidth_grid.size() *
                                        config.num_targets());
    KernelAverageGrid(config.kernel, grid, scratch.gradient_near, fallback,
                      scratch.gradient_grid_values);
    // Delta_{t,i} f_{n,h} from the samples within h + t (in ShellOrder,
    // so the sums do not depend on the index).
    scratch.estimator.Begin(scratch.z, config.kernel, h, t);
    for (const Neighbor& neighbor : scratch.found) {
      if (neighbor.distance > h + t) continue;
      scratch.estimator.Add(
          tree.PointOf(neighbor.id, scratch.point.data()).data(),
          targets(neighbor.id));
    }
    scratch.estimator.Finish(&scratch.estimate);
  });
}

}  // namespace streamreg
