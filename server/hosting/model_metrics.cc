#include "server/hosting/model_metrics.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace streamreg {
namespace {

// A family with one series per model.
struct PerModelFamily {
  const char* name;
  PrometheusText::Type type;
  const char* help;
  bool needs_journal;
  std::function<double(const ModelReading&)> value;
};

// The model's learning: its samples, index rebuilds and metric refreshes,
// the waits they caused, its MLKR fits, and whether learning failed.
std::vector<PerModelFamily> LearningFamilies() {
  using Type = PrometheusText::Type;
  using R = const ModelReading&;
  return {
      {"streamreg_model_samples_seen_total", Type::kCounter,
       "Samples the model has learned, ever.", false,
       [](R r) { return static_cast<double>(r.stats.samples_seen); }},
      {"streamreg_model_samples_stored", Type::kGauge,
       "Samples the model keeps under its capacity policy.", false,
       [](R r) { return static_cast<double>(r.stats.samples_stored); }},
      {"streamreg_model_duplicate_samples_total", Type::kCounter,
       "Samples skipped because their sample_id had been learned already "
       "(client retries), since the server started.",
       false,
       [](R r) { return static_cast<double>(r.model->duplicate_samples()); }},
      {"streamreg_model_index_rebuilds_total", Type::kCounter,
       "Index rebuilds into a new metric or standardization, ever.", false,
       [](R r) { return static_cast<double>(r.stats.index_rebuilds); }},
      {"streamreg_model_index_rebuild_waits_total", Type::kCounter,
       "Index rebuilds learning had to wait for (the stream outran the "
       "build), ever.",
       false, [](R r) { return static_cast<double>(r.stats.rebuild_waits); }},
      {"streamreg_model_metric_refreshes_total", Type::kCounter,
       "Batch recomputations of the learned metric installed, ever.", false,
       [](R r) { return static_cast<double>(r.stats.metric_refreshes); }},
      {"streamreg_model_rebuild_in_progress", Type::kGauge,
       "1 while an index rebuild or metric refresh runs in the background.",
       false, [](R r) { return r.stats.rebuild_in_progress ? 1.0 : 0.0; }},
      {"streamreg_model_settle_windows_total", Type::kCounter,
       "Windows in which predictions had to wait for the refresh schedule "
       "(an index take-over), since the server started.",
       false, [](R r) { return static_cast<double>(r.stats.settle_windows); }},
      {"streamreg_model_longest_settle_window_seconds", Type::kGauge,
       "The longest of those windows, since the server started.", false,
       [](R r) { return r.stats.longest_settle_window_seconds; }},
      {"streamreg_model_prediction_waits_total", Type::kCounter,
       "Predictions that waited for the refresh schedule, since the server "
       "started.",
       false,
       [](R r) { return static_cast<double>(r.stats.prediction_waits); }},
      {"streamreg_model_prediction_wait_seconds_total", Type::kCounter,
       "Seconds predictions waited for the refresh schedule, since the "
       "server started.",
       false, [](R r) { return r.stats.prediction_wait_seconds; }},
      {"streamreg_model_longest_prediction_wait_seconds", Type::kGauge,
       "The longest wait of a prediction for the refresh schedule, since the "
       "server started.",
       false, [](R r) { return r.stats.longest_prediction_wait_seconds; }},
      // Learning on the server stops at a take-over point whose work is
      // not done and comes back once it is (LearnStage): those stops, and
      // any wait inside the engine (a refit's).
      {"streamreg_model_refresh_waits_total", Type::kCounter,
       "Background work (metric refreshes, MLKR fits, index rebuilds) that "
       "learning had to wait for at its take-over point (the stream outran "
       "it), since the server started.",
       false, [](R r) { return static_cast<double>(r.learning_waits.count); }},
      {"streamreg_model_refresh_wait_seconds_total", Type::kCounter,
       "Seconds learning waited for those, since the server started.", false,
       [](R r) { return r.learning_waits.seconds; }},
      {"streamreg_model_longest_refresh_wait_seconds", Type::kGauge,
       "The longest of those waits, since the server started.", false,
       [](R r) { return r.learning_waits.longest_seconds; }},
      {"streamreg_model_fits_prioritized_total", Type::kCounter,
       "MLKR fits raised from nice +10 to the server's priority because a "
       "read waited for them (through learning at their take-over point), "
       "since the server started.",
       false,
       [](R r) { return static_cast<double>(r.stats.fits_prioritized); }},
      {"streamreg_model_fit_priority_refused_total", Type::kCounter,
       "Such raises the system refused (no CAP_SYS_NICE, RLIMIT_NICE below "
       "20): the fit stayed at nice +10, since the server started.",
       false,
       [](R r) { return static_cast<double>(r.stats.fit_priority_refused); }},
      {"streamreg_model_mlkr_fits_computed_total", Type::kCounter,
       "MLKR fits computed by this server, since the server started.", false,
       [](R r) { return static_cast<double>(r.stats.mlkr_fits_computed); }},
      {"streamreg_model_mlkr_fits_taken_total", Type::kCounter,
       "MLKR fits whose result this server took from another replica "
       "instead of computing it (cluster mode: the first server of the "
       "model's placement computes each), since the server started.",
       false, [](R r) { return static_cast<double>(r.stats.mlkr_fits_taken); }},
      {"streamreg_model_backlog_waits_total", Type::kCounter,
       "Writes that waited for learning to catch up (more than the backlog "
       "bound unlearned), since the server started.",
       false,
       [](R r) {
         return static_cast<double>(r.model->backlog_waits().count());
       }},
      {"streamreg_model_longest_backlog_wait_seconds", Type::kGauge,
       "The longest of those waits, since the server started.", false,
       [](R r) { return r.model->backlog_waits().longest_seconds(); }},
      {"streamreg_model_failed", Type::kGauge,
       "1 if learning the model failed after its samples were logged (it "
       "then refuses writes; the log says why, and a restart recovers it "
       "from its files), else 0.",
       false, [](R r) { return r.learning_error.ok() ? 0.0 : 1.0; }},
  };
}

// What the model serves and keeps: its answers, how far learning lags,
// its queues and refusals, its memory and its journal.
std::vector<PerModelFamily> ServingFamilies() {
  using Type = PrometheusText::Type;
  using R = const ModelReading&;
  return {
      {"streamreg_model_answers_sent_total", Type::kCounter,
       "Learn answers this server sent for the model and scored against "
       "their samples, since it hosted the model.",
       false, [](R r) { return static_cast<double>(r.answers.answers); }},
      {"streamreg_model_ahead_scored_total", Type::kCounter,
       "Predictions ahead of their ticks this server sent for the model "
       "and scored once their samples came, since it hosted the model.",
       false, [](R r) { return static_cast<double>(r.ahead.answers); }},
      {"streamreg_model_learn_lag_samples", Type::kGauge,
       "Samples acknowledged and not learned yet: how far predictions lag "
       "behind what was sent.",
       false, [](R r) { return static_cast<double>(r.backlog.samples); }},
      {"streamreg_model_learn_lag_seconds", Type::kGauge,
       "How long ago the oldest sample acknowledged and not learned yet was "
       "acknowledged (0 when learning has caught up).",
       false, [](R r) { return absl::ToDoubleSeconds(r.backlog.oldest); }},
      {"streamreg_model_queued_samples", Type::kGauge,
       "Samples admitted for the model and not yet through its write queue "
       "(--max-queued-samples-per-model).",
       false,
       [](R r) {
         return static_cast<double>(r.model->queued_samples().held());
       }},
      {"streamreg_model_predictions_in_flight", Type::kGauge,
       "Predictions of the model being answered "
       "(--max-predictions-in-flight-per-model).",
       false,
       [](R r) {
         return static_cast<double>(r.model->predictions_in_flight().held());
       }},
      {"streamreg_model_overload_refusals_total", Type::kCounter,
       "Requests for the model refused with RESOURCE_EXHAUSTED by its own "
       "limits, since the server started.",
       false,
       [](R r) {
         return static_cast<double>(r.model->queued_samples().refused() +
                                    r.model->predictions_in_flight().refused());
       }},
      {"streamreg_model_memory_bytes", Type::kGauge,
       "Bytes of the model's samples and indexes.", false,
       [](R r) { return static_cast<double>(r.stats.memory_bytes); }},
      {"streamreg_model_wal_bytes_total", Type::kCounter,
       "Bytes appended to the model's write-ahead log since the server "
       "started.",
       true, [](R r) { return static_cast<double>(r.wal_bytes); }},
      {"streamreg_model_snapshot_age_seconds", Type::kGauge,
       "Seconds since the model's last snapshot (or since the server "
       "recovered it).",
       true, [](R r) { return r.snapshot_age_seconds; }},
      {"streamreg_model_samples_since_snapshot", Type::kGauge,
       "Samples learned since the model's last snapshot: what recovery "
       "would replay from the log.",
       true, [](R r) { return static_cast<double>(r.samples_since_snapshot); }},
  };
}

const std::vector<PerModelFamily>& PerModelFamilies() {
  static const std::vector<PerModelFamily> families = [] {
    std::vector<PerModelFamily> all = LearningFamilies();
    for (PerModelFamily& family : ServingFamilies()) {
      all.push_back(std::move(family));
    }
    return all;
  }();
  return families;
}

// A per-target figure of a reading.
using PerTargetValues = const std::vector<double>& (*)(const ModelReading&);

// Per model and target: one family of per-target figures.
void WritePerTarget(const std::vector<ModelReading>& readings, const char* name,
                    const char* help, PerTargetValues read,
                    PrometheusText& out) {
  out.Family(name, PrometheusText::Type::kGauge, help);
  for (const ModelReading& r : readings) {
    const std::vector<std::string>& targets =
        r.model->model().config().target_names;
    const std::vector<double>& values = read(r);
    for (std::size_t t = 0; t < values.size() && t < targets.size(); ++t) {
      out.Sample(name, {{"model", r.model->name()}, {"target", targets[t]}},
                 values[t]);
    }
  }
}

// Per model, target and candidate of a model that combines them
// (ModelConfig::combine): the candidate's weight now, `read` from the
// model's stats (in queries, or in the next sample's predictions).
void WriteCandidateWeights(std::span<const ModelReading> readings,
                           const char* name, const char* help,
                           std::vector<std::vector<double>> ModelStats::*read,
                           PrometheusText& out) {
  out.Family(name, PrometheusText::Type::kGauge, help);
  for (const ModelReading& r : readings) {
    const std::vector<std::string>& targets =
        r.model->model().config().target_names;
    const std::vector<std::vector<double>>& by_target = r.stats.*read;
    for (std::size_t t = 0; t < by_target.size() && t < targets.size(); ++t) {
      const std::vector<double>& weights = by_target[t];
      for (std::size_t c = 0;
           c < weights.size() && c < r.stats.candidates.size(); ++c) {
        out.Sample(name,
                   {{"model", r.model->name()},
                    {"target", targets[t]},
                    {"candidate", r.stats.candidates[c]}},
                   weights[c]);
      }
    }
  }
}

// Per model and target: a family of per-target figures.
struct PerTargetFamily {
  const char* name;
  const char* help;
  PerTargetValues values;
};

const std::vector<PerTargetFamily>& PerTargetFamilies() {
  using R = const ModelReading&;
  static const std::vector<PerTargetFamily> families = {
      PerTargetFamily{
          "streamreg_model_prequential_nmse",
          "Prequential normalized mean squared error per target: each "
          "sample predicted before it was learned (NaN until known).",
          [](R r) -> const std::vector<double>& {
            return r.stats.prequential_nmse;
          }},
      PerTargetFamily{"streamreg_model_prequential_mse",
                      "Prequential mean squared error per target.",
                      [](R r) -> const std::vector<double>& {
                        return r.stats.prequential_mse;
                      }},
      PerTargetFamily{
          "streamreg_model_honest_nmse",
          "Honest (leave-recent-out) normalized mean squared error per "
          "target: each sample predicted before it was learned and "
          "without the samples just before it (NaN until known).",
          [](R r) -> const std::vector<double>& {
            return r.stats.honest_nmse;
          }},
      PerTargetFamily{
          "streamreg_model_honest_mse", "Honest mean squared error per target.",
          [](R r) -> const std::vector<double>& { return r.stats.honest_mse; }},
      PerTargetFamily{
          "streamreg_model_interval_coverage",
          "Per target, the fraction of the samples learned whose honest "
          "prediction fell within the interval in effect for it (NaN "
          "before the first).",
          [](R r) -> const std::vector<double>& {
            return r.stats.interval_coverage;
          }},
      PerTargetFamily{
          "streamreg_model_interval_half_width",
          "Per target, the half width of its intervals at the model's "
          "level now (+Inf while too few samples are scored).",
          [](R r) -> const std::vector<double>& {
            return r.stats.interval_half_width;
          }},
      PerTargetFamily{
          "streamreg_model_answer_interval_coverage",
          "Per target, the fraction of the Learn answers this server "
          "sent whose sample fell within the interval the answer carried "
          "(NaN before the first).",
          [](R r) -> const std::vector<double>& {
            return r.stats.answer_interval_coverage;
          }},
      PerTargetFamily{
          "streamreg_model_answer_interval_half_width",
          "Per target, the half width of the Learn answers' intervals at "
          "the model's level now, calibrated on the answers sent (until "
          "enough are, the model's own on the prequential errors; +Inf "
          "while too few samples are scored for either).",
          [](R r) -> const std::vector<double>& {
            return r.stats.answer_interval_half_width;
          }},
      PerTargetFamily{
          "streamreg_model_answer_nmse",
          "Normalized mean squared error per target of the Learn answers "
          "this server sent, as sent (each against its own sample, from "
          "the model as it stood, lag included), every answer weighed "
          "alike since the server hosted the model (NaN before the first).",
          [](R r) -> const std::vector<double>& { return r.answers.nmse; }},
      PerTargetFamily{
          "streamreg_model_answer_mse",
          "Mean squared error per target of the Learn answers "
          "sent.",
          [](R r) -> const std::vector<double>& { return r.answers.mse; }},
      PerTargetFamily{
          "streamreg_model_answer_recent_nmse",
          "The Learn answers' normalized mean squared error per target "
          "with the prequential error's forgetting (about the last 1,000 "
          "answers; NaN until known).",
          [](R r) -> const std::vector<double>& {
            return r.answers.recent_nmse;
          }},
      PerTargetFamily{
          "streamreg_model_ahead_nmse",
          "Normalized mean squared error per target of the predictions "
          "ahead of their ticks this server sent, each against its tick's "
          "sample (NaN before the first).",
          [](R r) -> const std::vector<double>& { return r.ahead.nmse; }},
      PerTargetFamily{
          "streamreg_model_ahead_interval_coverage",
          "Per target, the fraction of the predictions ahead scored whose "
          "sample fell within the interval they were sent with (NaN "
          "before the first).",
          [](R r) -> const std::vector<double>& {
            return r.ahead.interval_coverage;
          }}};
  return families;
}

}  // namespace

ModelReading ReadModel(const HostedModel& model, absl::Time now) {
  ModelReading reading{.model = &model,
                       .read_at = now,
                       .stats = model.stats_now(),
                       .answers = model.answer_errors(),
                       .ahead = model.ahead_errors(),
                       .backlog = model.learn_backlog(now),
                       .learning_error = model.learning_error()};
  const PauseStatistics& stops = model.background_work_waits();
  reading.learning_waits = {
      .count = reading.stats.refresh_waits + stops.count(),
      .seconds = reading.stats.refresh_wait_seconds + stops.total_seconds(),
      .longest_seconds = std::max(reading.stats.longest_refresh_wait_seconds,
                                  stops.longest_seconds()),
      .current = model.background_work_wait_now()};
  if (const JournalFile* journal = model.journal(); journal != nullptr) {
    reading.has_journal = true;
    reading.wal_bytes = journal->bytes_appended();
    reading.snapshot_age_seconds =
        absl::ToDoubleSeconds(now - model.last_snapshot_time());
    reading.samples_since_snapshot = model.samples_since_snapshot();
  }
  return reading;
}

void WriteModelMetrics(std::span<const std::shared_ptr<HostedModel>> models,
                       absl::Time now, PrometheusText& out) {
  std::vector<ModelReading> readings;
  readings.reserve(models.size());
  for (const std::shared_ptr<HostedModel>& model : models) {
    if (!model->deleted()) readings.push_back(ReadModel(*model, now));
  }
  for (const PerModelFamily& family : PerModelFamilies()) {
    out.Family(family.name, family.type, family.help);
    for (const ModelReading& r : readings) {
      if (family.needs_journal && !r.has_journal) continue;
      out.Sample(family.name, {{"model", r.model->name()}}, family.value(r));
    }
  }
  for (const PerTargetFamily& family : PerTargetFamilies()) {
    WritePerTarget(readings, family.name, family.help, family.values, out);
  }
  WriteCandidateWeights(
      readings, "streamreg_model_candidate_weight",
      "Per target of a model that combines its candidates "
      "(ModelSpec.combine), each candidate's weight in its predictions of "
      "queries now, learned from the honest errors (a target's sum to 1).",
      &ModelStats::candidate_weights, out);
  WriteCandidateWeights(
      readings, "streamreg_model_answer_candidate_weight",
      "The same in its predictions of the stream's next sample (Learn "
      "answers), learned from the prequential errors.",
      &ModelStats::answer_candidate_weights, out);
  constexpr char kRebuild[] = "streamreg_model_index_rebuild_duration_seconds";
  out.Family(kRebuild, PrometheusText::Type::kSummary,
             "Time index rebuilds built since the server started took, from "
             "the start of a build until it caught up with the stream.");
  for (const ModelReading& r : readings) {
    out.Sample(std::string(kRebuild) + "_sum", {{"model", r.model->name()}},
               r.stats.index_build_seconds);
    out.Sample(std::string(kRebuild) + "_count", {{"model", r.model->name()}},
               r.stats.index_builds_timed);
  }
}

}  // namespace streamreg
