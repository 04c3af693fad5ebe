#include "server/rpc/wire_conversion.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/time/time.h"
#include "server/rpc/spec_conversion.h"

namespace streamreg {
namespace {

template <class Field, class Values>
void Assign(const Values& values, Field* out) {
  out->Assign(values.begin(), values.end());
}

void TimeToWire(absl::Time time, google::protobuf::Timestamp* out) {
  const absl::Duration since_epoch = time - absl::UnixEpoch();
  const std::int64_t seconds = absl::ToInt64Seconds(since_epoch);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<std::int32_t>(
      absl::ToInt64Nanoseconds(since_epoch - absl::Seconds(seconds))));
}

}  // namespace

Sample SampleFromWire(const v1::Sample& sample) {
  return Sample{
      .x = {sample.x().data(), static_cast<std::size_t>(sample.x().size())},
      .y = {sample.y().data(), static_cast<std::size_t>(sample.y().size())},
      .sample_id = sample.sample_id()};
}

std::vector<Sample> SamplesFromWire(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples) {
  std::vector<Sample> batch;
  batch.reserve(samples.size());
  for (const v1::Sample& sample : samples) {
    batch.push_back(SampleFromWire(sample));
  }
  return batch;
}

std::vector<std::span<const double>> QueriesFromWire(
    const google::protobuf::RepeatedPtrField<v1::Query>& queries) {
  std::vector<std::span<const double>> points;
  points.reserve(queries.size());
  for (const v1::Query& query : queries) {
    points.emplace_back(query.x().data(),
                        static_cast<std::size_t>(query.x().size()));
  }
  return points;
}

void PredictionToWire(const Prediction& prediction, v1::Prediction* out) {
  Assign(prediction.value, out->mutable_y());
  Assign(prediction.spread, out->mutable_spread());
  Assign(prediction.base_variance, out->mutable_base_variance());
  Assign(prediction.lower, out->mutable_lower());
  Assign(prediction.upper, out->mutable_upper());
  Assign(prediction.neighbors, out->mutable_neighbors_per_target());
  out->clear_used();
  for (const std::vector<UsedNeighbor>& used : prediction.used) {
    v1::UsedNeighbors* listed = out->add_used();
    for (const UsedNeighbor& neighbor : used) {
      v1::UsedNeighbor* wire = listed->add_neighbors();
      wire->set_sample_id(neighbor.sample_id);
      wire->set_distance(neighbor.distance);
      Assign(neighbor.x, wire->mutable_x());
      wire->set_y(neighbor.y);
    }
  }
  out->set_neighbors(prediction.neighbors.empty()
                         ? 0
                         : *std::min_element(prediction.neighbors.begin(),
                                             prediction.neighbors.end()));
}

void StatsToWire(const HostedModel& hosted, const ReadAfter& figures,
                 v1::ModelStats* out) {
  const ModelStats stats = hosted.stats(figures);
  out->set_num_samples(stats.samples_seen);
  out->set_num_stored(stats.samples_stored);
  Assign(stats.prequential_nmse, out->mutable_prequential_nmse());
  Assign(stats.prequential_mse, out->mutable_prequential_mse());
  Assign(stats.honest_nmse, out->mutable_honest_nmse());
  Assign(stats.honest_mse, out->mutable_honest_mse());
  Assign(stats.interval_half_width, out->mutable_interval_half_width());
  Assign(stats.interval_coverage, out->mutable_interval_coverage());
  Assign(stats.answer_interval_half_width,
         out->mutable_answer_interval_half_width());
  Assign(stats.answer_interval_coverage,
         out->mutable_answer_interval_coverage());
  const AnswerErrors::Figures answers = hosted.answer_errors();
  out->set_answers_sent(answers.answers);
  Assign(answers.nmse, out->mutable_answer_nmse());
  Assign(answers.mse, out->mutable_answer_mse());
  Assign(answers.recent_nmse, out->mutable_answer_recent_nmse());
  const AnswerErrors::Figures ahead = hosted.ahead_errors();
  out->set_ahead_scored(ahead.answers);
  Assign(ahead.nmse, out->mutable_ahead_nmse());
  Assign(ahead.interval_half_width, out->mutable_ahead_interval_half_width());
  Assign(ahead.interval_coverage, out->mutable_ahead_interval_coverage());
  out->set_honest_lag(stats.honest_lag);
  out->set_interval_lag(stats.interval_lag);
  out->set_interval_recalibration_passes(stats.interval_recalibration_passes);
  out->set_interval_recalibrated(stats.interval_recalibrated);
  Assign(stats.bandwidth, out->mutable_bandwidth());
  Assign(stats.k, out->mutable_k());
  Assign(stats.coordinates, out->mutable_coordinates());
  for (RegressorKind regressor : stats.regressor) {
    out->add_regressor(RegressorToWire(regressor));
  }
  for (bool uses_base : stats.uses_base) out->add_uses_base(uses_base);
  for (const std::string& name : stats.candidates) out->add_candidates(name);
  for (const std::vector<double>& weights : stats.candidate_weights) {
    for (double weight : weights) out->add_candidate_weights(weight);
  }
  for (const std::vector<double>& weights : stats.answer_candidate_weights) {
    for (double weight : weights) out->add_answer_candidate_weights(weight);
  }
  for (MetricKind metric : stats.metric) {
    out->add_metric(MetricToWire(metric));
  }
  out->set_gradient_bandwidth(stats.gradient_bandwidth);
  out->set_gradient_step(stats.gradient_step);
  out->set_gradient_samples(stats.gradient_samples);
  out->set_index_rebuilds(stats.index_rebuilds);
  out->set_metric_refreshes(stats.metric_refreshes);
  out->set_base_rebuilds(stats.base_rebuilds);
  out->set_base_lengthscale(stats.base_lengthscale);
  out->set_base_ridge(stats.base_ridge);
  if (stats.base_metric.has_value()) {
    out->set_base_metric(MetricToWire(*stats.base_metric));
  }
  out->set_rebuild_in_progress(stats.rebuild_in_progress);
  out->set_memory_bytes(stats.memory_bytes);
  out->set_duplicate_samples(hosted.duplicate_samples());
  out->set_learn_backlog(hosted.learn_backlog(absl::Now()).samples);
}

void ModelToWire(const HostedModel& hosted, const ReadAfter& figures,
                 v1::Model* out) {
  out->set_name(hosted.name());
  *out->mutable_spec() = SpecFromConfig(hosted.model().config());
  for (const std::string& name : hosted.input_names()) {
    out->mutable_spec()->add_input_names(name);
  }
  StatsToWire(hosted, figures, out->mutable_stats());
  TimeToWire(hosted.create_time(), out->mutable_create_time());
  if (hosted.journal() != nullptr) {
    TimeToWire(hosted.last_snapshot_time(), out->mutable_snapshot_time());
  }
}

void MetricToWire(const HostedModel& hosted, const ReadAfter& figures,
                  v1::MetricReport* out) {
  const MetricReport report = hosted.metric(figures);
  const ModelConfig& config = hosted.model().config();
  out->set_model(hosted.name());
  out->set_kind(MetricToWire(report.kind));
  out->set_per_target(report.per_target);
  for (std::size_t i = 0; i < report.metrics.size(); ++i) {
    const LearnedMetric& metric = report.metrics[i];
    v1::LearnedMetric& wire = *out->add_metrics();
    if (report.per_target) wire.set_target(config.target_names[i]);
    wire.set_kind(MetricToWire(metric.kind));
    Assign(metric.weights, wire.mutable_weights());
    Assign(metric.matrix, wire.mutable_matrix());
    Assign(metric.eigenvalues, wire.mutable_eigenvalues());
    Assign(metric.eigenvectors, wire.mutable_eigenvectors());
    wire.set_rank(static_cast<std::uint32_t>(metric.rank));
    Assign(metric.map, wire.mutable_map());
    Assign(metric.gradient, wire.mutable_gradient());
  }
  for (const MetricTransform& transform : report.in_use) {
    v1::MetricTransform& wire = *out->add_in_use();
    Assign(transform.center(), wire.mutable_center());
    Assign(transform.scale(), wire.mutable_scale());
    Assign(transform.weights(), wire.mutable_weights());
    Assign(transform.matrix(), wire.mutable_matrix());
  }
  out->set_gradient_samples(report.gradient_samples);
  for (const std::string& name : hosted.input_names()) {
    out->add_input_names(name);
  }
}

}  // namespace streamreg
