#include "core/model/model.h"

#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace streamreg {
namespace {

void AddIndexStats(const MetricIndex& index, ModelStats* stats) {
  stats->index_rebuilds += index.generation();
  stats->rebuild_waits += index.waits();
  const MetricIndex::BuildTime time = index.build_time();
  stats->index_builds_timed += time.builds;
  stats->index_build_seconds += time.seconds;
  stats->rebuild_in_progress |= index.rebuilding();
  stats->memory_bytes += index.MemoryUsage();
}

// OK, or INVALID_ARGUMENT naming interval_level outside (0, 1).
absl::Status ValidatePredictOptions(const PredictOptions& options) {
  return options.interval_level.has_value()
             ? ValidateIntervalLevel(*options.interval_level)
             : absl::OkStatus();
}

// Target t's half width at the model's level now, as `calibration` has it.
double HalfWidth(const ModelState& state, std::size_t t,
                 IntervalCalibration calibration)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock) {
  return IntervalCalibrationOf(state, calibration).Multiplier(t) *
         IntervalScale(state, t, calibration);
}

// The fraction of target t's scored samples within their interval (NaN
// before the first).
double Coverage(const AdaptiveConformal& intervals, std::size_t t) {
  const std::uint64_t scored = intervals.scored(t);
  return scored == 0 ? std::numeric_limits<double>::quiet_NaN()
                     : static_cast<double>(intervals.covered(t)) /
                           static_cast<double>(scored);
}

// How the batch being learned takes over (ModelState::
// batch_take_overs), for as long as the object lives: a Learn call.
class LearningBatch {
 public:
  LearningBatch(ModelState& state, BatchTakeOvers take_overs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
      : state_(state) {
    state_.batch_take_overs = take_overs;
  }
  ~LearningBatch() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    state_.batch_take_overs = BatchTakeOvers::kWhereRecorded;
  }
  LearningBatch(const LearningBatch&) = delete;
  LearningBatch& operator=(const LearningBatch&) = delete;

 private:
  ModelState& state_;
};

}  // namespace

Model::Model(ModelConfig config)
    : config_(std::move(config)), state_(config_), learner_(state_) {}

Model::~Model() = default;

absl::StatusOr<std::unique_ptr<Model>> Model::Create(ModelConfig config) {
  if (absl::Status status = CompleteAndValidate(&config); !status.ok()) {
    return status;
  }
  return std::unique_ptr<Model>(new Model(std::move(config)));
}

absl::StatusOr<ValidatedSamples> Model::Validate(
    std::span<const Sample> batch) const {
  absl::flat_hash_map<std::uint64_t, std::size_t> first_with_id;
  for (std::size_t s = 0; s < batch.size(); ++s) {
    // Named only on failure (no string built per sample).
    if (!ValidateValues(batch[s].x, config_.input_dim, "").ok()) {
      return ValidateValues(batch[s].x, config_.input_dim,
                            absl::StrCat("samples[", s, "].x"));
    }
    if (!ValidateValues(batch[s].y, config_.num_targets(), "").ok()) {
      return ValidateValues(batch[s].y, config_.num_targets(),
                            absl::StrCat("samples[", s, "].y"));
    }
    if (batch[s].sample_id == 0 || batch.size() == 1) continue;
    const auto [it, inserted] = first_with_id.emplace(batch[s].sample_id, s);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples[", s, "].sample_id: ", batch[s].sample_id,
                       " repeats samples[", it->second, "]"));
    }
  }
  return ValidatedSamples::CopyOf(batch, config_.input_dim,
                                  config_.num_targets());
}

absl::Status Model::Learn(const ValidatedSamples& batch,
                          std::vector<Prediction>* before,
                          BatchTakeOvers take_overs) {
  if (absl::Status status = CheckShape(batch); !status.ok()) return status;
  MutexLock writer(&state_.writer);
  if (absl::Status status = state_.IndexFailure(); !status.ok()) {
    return status;
  }
  const LearningBatch learning(state_, take_overs);
  if (before != nullptr) before->resize(batch.size());
  for (std::size_t s = 0; s < batch.size(); ++s) {
    learner_.Learn(state_, batch[s],
                   before != nullptr ? &(*before)[s] : nullptr);
  }
  return state_.IndexFailure();
}

absl::StatusOr<Model::PartLearned> Model::LearnUntilWait(
    const ValidatedSamples& batch, std::vector<Prediction>* before,
    Clock::time_point yield_at, BatchTakeOvers take_overs) {
  if (absl::Status status = CheckShape(batch); !status.ok()) return status;
  MutexLock writer(&state_.writer);
  if (absl::Status status = state_.IndexFailure(); !status.ok()) {
    return status;
  }
  const LearningBatch learning(state_, take_overs);
  if (before != nullptr) before->resize(batch.size());
  std::uint64_t seen = 0;
  {
    SharedLock lock(state_.lock);
    seen = state_.store.seen();
  }
  PartLearned part;
  for (; part.learned < batch.size(); ++part.learned) {
    part.resume_when = PendingTakeOver(state_, seen + part.learned + 1);
    if (part.resume_when != nullptr) {
      part.waits_for_background_work = true;
      break;
    }
    if (part.learned > 0 && Clock::now() >= yield_at) {
      part.resume_when = [] { return true; };
      break;
    }
    learner_.Learn(state_, batch[part.learned],
                   before != nullptr ? &(*before)[part.learned] : nullptr);
  }
  if (before != nullptr) before->resize(part.learned);
  if (absl::Status status = state_.IndexFailure(); !status.ok()) {
    return status;
  }
  return part;
}

std::vector<UnrecordedWork> Model::UnrecordedTakeOvers() const {
  MutexLock writer(&state_.writer);
  return streamreg::UnrecordedTakeOvers(state_);
}

bool Model::ApplyTakeOverRecord(const TakeOverKey& key) {
  MutexLock writer(&state_.writer);
  return RecordTakeOver(state_, key);
}

void Model::PrioritizeBackgroundWork() const {
  (void)state_.mlkr_refresh.Prioritize();  // no fit running: a no-op
}

void Model::ShareMlkrFits(std::shared_ptr<MlkrFitExchange> exchange) {
  state_.mlkr_refresh.SetExchange(std::move(exchange));
}

bool Model::OfferMlkrFit(std::uint64_t fit, std::vector<MlkrMap> maps) {
  return state_.mlkr_refresh.Offer(fit, std::move(maps));
}

absl::Status Model::CheckShape(const ValidatedSamples& batch) const {
  if (batch.empty() || (batch.input_dim() == config_.input_dim &&
                        batch.num_targets() == config_.num_targets())) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "samples of ", batch.input_dim(), " inputs and ", batch.num_targets(),
      " targets, checked by another model; this one takes ", config_.input_dim,
      " and ", config_.num_targets()));
}

absl::Status Model::Learn(std::span<const Sample> batch,
                          std::vector<Prediction>* before,
                          BatchTakeOvers take_overs) {
  absl::StatusOr<ValidatedSamples> validated = Validate(batch);
  if (!validated.ok()) return validated.status();
  return Learn(*validated, before, take_overs);
}

absl::StatusOr<Prediction> Model::Predict(std::span<const double> query,
                                          const PredictOptions& options) const {
  if (absl::Status status = ValidatePredictOptions(options); !status.ok()) {
    return status;
  }
  if (absl::Status status =
          ValidateValues(query, config_.input_dim, "queries[0].x");
      !status.ok()) {
    return status;
  }
  Prediction prediction;
  PredictWithModel(state_, query, &prediction, options);
  return prediction;
}

absl::Status Model::Predict(std::span<const std::span<const double>> queries,
                            std::vector<Prediction>* out,
                            const PredictOptions& options) const {
  if (absl::Status status = ValidatePredictOptions(options); !status.ok()) {
    return status;
  }
  for (std::size_t q = 0; q < queries.size(); ++q) {
    if (absl::Status status = ValidateValues(
            queries[q], config_.input_dim, absl::StrCat("queries[", q, "].x"));
        !status.ok()) {
      return status;
    }
  }
  out->resize(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) {
    PredictWithModel(state_, queries[q], &(*out)[q], options);
  }
  return absl::OkStatus();
}

absl::Status Model::Refit(
    const std::function<void(std::size_t, std::size_t)>& progress) {
  MutexLock writer(&state_.writer);
  if (absl::Status status = state_.IndexFailure(); !status.ok()) {
    return status;
  }
  RefitNow(state_, progress);
  return state_.IndexFailure();
}

void Model::FinishRebuilds() {
  MutexLock writer(&state_.writer);
  FinishBackgroundWork(state_);
}

std::uint64_t Model::samples_seen() const {
  SharedLock lock(state_.lock);
  return state_.store.seen();
}

std::size_t Model::samples_stored() const {
  SharedLock lock(state_.lock);
  return state_.store.size();
}

ModelStats Model::stats() const {
  SharedLock lock(state_.lock);
  const std::size_t m = config_.num_targets();
  ModelStats stats;
  stats.samples_seen = state_.store.seen();
  stats.samples_stored = state_.store.size();
  stats.bandwidth.assign(m, 0.0);
  stats.k.assign(m, 0);
  stats.coordinates.assign(m, 0);
  stats.regressor.assign(m, config_.regressor);
  stats.metric.assign(m, config_.metric);
  stats.uses_base.assign(m, config_.linear_base);
  if (state_.random_base.has_value()) {
    const RandomFeatureBase& base = *state_.random_base;
    stats.base_rebuilds = base.replacements();
    stats.base_lengthscale = base.ridge().options().lengthscale;
    stats.base_ridge = base.ridge().options().ridge;
    stats.base_metric = state_.predictions[RandomBaseIndex(state_)].metric;
  }
  for (std::size_t t = 0; t < m; ++t) {
    stats.prequential_nmse.push_back(state_.score.Nmse(t));
    stats.prequential_mse.push_back(state_.score.MeanSquaredError(t));
    stats.honest_nmse.push_back(state_.honest_score.Nmse(t));
    stats.honest_mse.push_back(state_.honest_score.MeanSquaredError(t));
    stats.interval_half_width.push_back(
        HalfWidth(state_, t, IntervalCalibration::kQuery));
    stats.interval_scored.push_back(state_.intervals.scored(t));
    stats.interval_covered.push_back(state_.intervals.covered(t));
    stats.interval_coverage.push_back(Coverage(state_.intervals, t));
    stats.answer_interval_half_width.push_back(
        HalfWidth(state_, t, IntervalCalibration::kNextSample));
    stats.answer_interval_coverage.push_back(
        Coverage(state_.answer_intervals, t));
  }
  stats.honest_lag = state_.recent.lag();
  stats.interval_lag = state_.interval_recent.lag();
  stats.interval_recalibration_passes = state_.recalibration.passes();
  stats.interval_recalibrated = state_.recalibration.exchangeable();
  std::vector<std::size_t> chosen;
  ChosenIndexes(state_, &chosen);
  for (std::size_t c = 0; config_.combine && c < NumCandidates(config_); ++c) {
    stats.candidates.push_back(CandidateName(config_, c));
  }
  for (std::size_t t = 0; t < m; ++t) {
    const RegressorChoice choice = ChoiceOf(state_, chosen[t], t);
    stats.regressor[t] = choice.regressor;
    stats.uses_base[t] = choice.with_base;
    stats.metric[t] = state_.predictions[chosen[t]].metric;
    if (config_.combine) {
      const std::span<const double> weights =
          state_.combinations[chosen[t]].Weights(t);
      stats.candidate_weights.emplace_back(weights.begin(), weights.end());
      const std::span<const double> answers =
          state_.answer_combinations[chosen[t]].Weights(t);
      stats.answer_candidate_weights.emplace_back(answers.begin(),
                                                  answers.end());
    }
    if (ChoosesK(config_.regressor)) {
      const LocalLinearFit fit = config_.FitAt(choice.grid);
      stats.k[t] = static_cast<std::uint32_t>(fit.k);
      if (choice.regressor == RegressorKind::kLocalLinear) {
        stats.coordinates[t] = static_cast<std::uint32_t>(
            fit.coordinates == 0 ? config_.input_dim : fit.coordinates);
      }
    } else {
      stats.bandwidth[t] = config_.bandwidth_grid[choice.grid];
    }
  }
  for (const PredictionIndex& prediction : state_.predictions) {
    AddIndexStats(*prediction.index, &stats);
  }
  if (state_.gradient_index != nullptr) {
    stats.gradient_bandwidth = state_.GradientBandwidth();
    stats.gradient_step = config_.step_ratio * stats.gradient_bandwidth;
    stats.gradient_samples = state_.gradients.count();
    AddIndexStats(*state_.gradient_index, &stats);
  }
  stats.memory_bytes += state_.store.MemoryUsage();
  stats.metric_refreshes = state_.metric_refreshes;
  stats.rebuild_in_progress |=
      state_.refresh.running() || state_.mlkr_refresh.running();
  stats.settle_windows = state_.settle_windows.count();
  stats.longest_settle_window_seconds = state_.settle_windows.longest_seconds();
  stats.prediction_waits = state_.prediction_waits.count();
  stats.prediction_wait_seconds = state_.prediction_waits.total_seconds();
  stats.longest_prediction_wait_seconds =
      state_.prediction_waits.longest_seconds();
  stats.refresh_waits = state_.refresh_waits.count();
  stats.refresh_wait_seconds = state_.refresh_waits.total_seconds();
  stats.longest_refresh_wait_seconds = state_.refresh_waits.longest_seconds();
  stats.fits_prioritized = state_.mlkr_refresh.prioritized();
  stats.fit_priority_refused = state_.mlkr_refresh.prioritize_refused();
  stats.mlkr_fits_computed = state_.mlkr_refresh.computed();
  stats.mlkr_fits_taken = state_.mlkr_refresh.taken();
  return stats;
}

MetricReport Model::metric() const {
  SharedLock lock(state_.lock);
  MetricReport report;
  report.kind = config_.metric;
  report.per_target =
      config_.per_target_metric && config_.metric != MetricKind::kEuclidean;
  const std::vector<double> scales = state_.TargetScales();
  for (std::size_t i = 0; i < state_.predictions.size(); ++i) {
    const PredictionIndex& p = state_.predictions[i];
    report.metrics.push_back(p.metric == MetricKind::kMlkr
                                 ? state_.mlkr_maps[i].Metric(config_.input_dim)
                                 : EstimateMetric(p.metric, state_.gradients,
                                                  p.metric_target, scales));
    report.in_use.push_back(p.index->current()->transform);
    if (p.metric == MetricKind::kGlml) {
      // Each target's gradient under the Gaussian, in the standardized
      // inputs the index searches.
      const std::span<const double> input_scales = report.in_use.back().scale();
      std::vector<double>& gradient = report.metrics.back().gradient;
      for (std::size_t t = 0; t < config_.num_targets(); ++t) {
        for (std::size_t j = 0; j < config_.input_dim; ++j) {
          gradient.push_back(input_scales[j] * state_.base->slope(j, t));
        }
      }
    }
  }
  report.gradient_samples = state_.gradients.count();
  return report;
}

}  // namespace streamreg
