#include "server/rpc/status_report.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/hosting/model_metrics.h"

namespace streamreg {
namespace {

using Json = nlohmann::json;

// The leading eigen-directions a matrix metric shows (at most).
constexpr std::size_t kDirectionsShown = 3;

// A number, or null for NaN and infinities (JSON has neither).
Json Number(double value) {
  return std::isfinite(value) ? Json(value) : Json(nullptr);
}

Json Numbers(const std::vector<double>& values) {
  Json out = Json::array();
  for (double value : values) out.push_back(Number(value));
  return out;
}

Json ServerJson(const ModelRegistry& registry, absl::Time started,
                absl::Time now) {
  Json failed = Json::array();
  for (const auto& [name, status] : registry.failed()) {
    failed.push_back({{"name", name}, {"error", status.ToString()}});
  }
  return {{"version", STREAMREG_VERSION},
          {"uptime_seconds", absl::ToDoubleSeconds(now - started)},
          {"failed_models", std::move(failed)}};
}

// Our own methods that were called, with their cumulative histograms:
// per call, and for bidirectional streams per message (counted as each
// message is answered, so a stream shows while it runs).
Json LatencyJson(const RpcMetrics& rpc) {
  Json methods = Json::array();
  for (const RpcMetrics::Method* method : rpc.Methods()) {
    if (method->service.rfind("streamreg.", 0) != 0) continue;
    const bool per_message = method->PerMessage();
    const LatencyHistogram::Counts counts =
        per_message ? method->message_handling.Read() : method->handling.Read();
    if (counts.count == 0) continue;
    methods.push_back({{"method", method->name},
                       {"type", method->type},
                       {"per", per_message ? "message" : "call"},
                       {"count", counts.count},
                       {"sum_seconds", counts.sum_seconds},
                       {"cumulative", counts.cumulative}});
  }
  return {{"bounds_seconds", LatencyHistogram::kBounds},
          {"methods", std::move(methods)}};
}

// What one learned metric applies to: a target, a candidate metric of
// kAuto, or every target.
std::string MetricScope(const MetricReport& report, std::size_t index,
                        const ModelConfig& config) {
  if (report.per_target) return config.target_names[index];
  if (report.kind == MetricKind::kAuto) {
    return std::string(MetricKindName(report.metrics[index].kind));
  }
  return "all targets";
}

Json LearnedMetricJson(const LearnedMetric& metric, std::size_t dim) {
  Json out = {{"kind", std::string(MetricKindName(metric.kind))},
              {"weights", Numbers(metric.weights)}};
  if (!metric.eigenvalues.empty()) {
    out["eigenvalues"] = Numbers(metric.eigenvalues);
    Json directions = Json::array();
    const std::size_t shown =
        std::min(kDirectionsShown, metric.eigenvalues.size());
    for (std::size_t r = 0; r < shown; ++r) {
      std::vector<double> direction(dim);
      for (std::size_t i = 0; i < dim; ++i) {
        direction[i] = metric.eigenvectors[i * dim + r];
      }
      directions.push_back(Numbers(direction));
    }
    out["directions"] = std::move(directions);
  }
  if (!metric.gradient.empty()) out["gradient"] = Numbers(metric.gradient);
  return out;
}

// Of the samples scored between two readings of the counts, the fraction
// within their intervals (null when none was scored).
Json CoverageBetween(std::uint64_t scored_before, std::uint64_t covered_before,
                     std::uint64_t scored, std::uint64_t covered) {
  if (scored <= scored_before) return nullptr;
  return static_cast<double>(covered - covered_before) /
         static_cast<double>(scored - scored_before);
}

// The curve's points, and the model as it is now after the last of them;
// per target, the coverage of the intervals over the samples since the
// point before (at the first point, over every sample scored).
Json CurveJson(const LearningCurve& curve, const ModelStats& now,
               std::size_t num_targets) {
  std::vector<LearningCurve::Point> points = curve.Points();
  if (now.samples_seen > 0 &&
      (points.empty() || points.back().samples < now.samples_seen)) {
    points.push_back({now.samples_seen, now.prequential_nmse, now.honest_nmse,
                      now.interval_scored, now.interval_covered});
  }
  Json samples = Json::array();
  Json prequential = Json::array();
  Json honest = Json::array();
  Json coverage = Json::array();
  for (std::size_t t = 0; t < num_targets; ++t) {
    prequential.push_back(Json::array());
    honest.push_back(Json::array());
    coverage.push_back(Json::array());
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const LearningCurve::Point& point = points[i];
    samples.push_back(point.samples);
    for (std::size_t t = 0; t < num_targets; ++t) {
      prequential[t].push_back(Number(point.prequential_nmse.at(t)));
      honest[t].push_back(Number(point.honest_nmse.at(t)));
      const bool first = i == 0;
      coverage[t].push_back(CoverageBetween(
          first ? 0 : points[i - 1].interval_scored.at(t),
          first ? 0 : points[i - 1].interval_covered.at(t),
          point.interval_scored.at(t), point.interval_covered.at(t)));
    }
  }
  return {{"step", curve.step()},
          {"samples", std::move(samples)},
          {"prequential_nmse", std::move(prequential)},
          {"honest_nmse", std::move(honest)},
          {"interval_coverage", std::move(coverage)}};
}

// The last samples learned, each with the prediction made for it before:
// per target, arrays over the samples (oldest first).
Json RecentJson(const RecentPredictions& recent, std::size_t num_targets) {
  const std::vector<RecentPredictions::Entry> entries = recent.Entries();
  Json samples = Json::array();
  Json truth = Json::array();
  Json value = Json::array();
  Json lower = Json::array();
  Json upper = Json::array();
  for (std::size_t t = 0; t < num_targets; ++t) {
    for (Json* series : {&truth, &value, &lower, &upper}) {
      series->push_back(Json::array());
    }
  }
  for (const RecentPredictions::Entry& entry : entries) {
    samples.push_back(entry.sample);
    for (std::size_t t = 0; t < num_targets; ++t) {
      truth[t].push_back(Number(entry.truth.at(t)));
      value[t].push_back(Number(entry.value.at(t)));
      lower[t].push_back(Number(entry.lower.at(t)));
      upper[t].push_back(Number(entry.upper.at(t)));
    }
  }
  return {{"samples", std::move(samples)},
          {"truth", std::move(truth)},
          {"value", std::move(value)},
          {"lower", std::move(lower)},
          {"upper", std::move(upper)}};
}

// Seconds from `then` to `now`; null for InfinitePast (never).
Json SecondsSince(absl::Time then, absl::Time now) {
  if (then == absl::InfinitePast()) return nullptr;
  return std::max(0.0, absl::ToDoubleSeconds(now - then));
}

Json CapacityJson(const ModelConfig& config, const RegistryLimits& limits) {
  Json out = {
      {"policy", std::string(CapacityPolicyName(config.capacity.policy))}};
  if (config.capacity.policy != CapacityPolicy::kUnbounded) {
    out["limit"] = config.capacity.limit;
  } else if (limits.max_samples_per_model != 0) {
    out["limit"] = limits.max_samples_per_model;  // the server's limit
  } else {
    out["limit"] = nullptr;
  }
  return out;
}

// The inputs' names; x0, x1, ... (as the CLI writes them) for a model
// created without names.
std::vector<std::string> InputNames(const HostedModel& hosted) {
  std::vector<std::string> names = hosted.input_names();
  for (std::size_t i = names.size(); i < hosted.model().config().input_dim;
       ++i) {
    names.push_back(absl::StrCat("x", i));
  }
  return names;
}

Json ModelJson(const ModelReading& reading, const RegistryLimits& limits,
               bool detailed) {
  const HostedModel& hosted = *reading.model;
  const ModelConfig& config = hosted.model().config();
  const ModelStats& stats = reading.stats;
  Json regressors = Json::array();
  for (RegressorKind kind : stats.regressor) {
    regressors.push_back(std::string(RegressorKindName(kind)));
  }
  Json out = {
      {"name", hosted.name()},
      {"inputs", InputNames(hosted)},
      {"targets", config.target_names},
      {"metric", std::string(MetricKindName(config.metric))},
      {"regressors", std::move(regressors)},
      {"samples_seen", stats.samples_seen},
      {"samples_stored", stats.samples_stored},
      {"capacity", CapacityJson(config, limits)},
      {"memory_bytes", stats.memory_bytes},
      {"last_sample_seconds",
       SecondsSince(reading.backlog.newest_acknowledged, reading.read_at)},
      {"learn_lag",
       {{"samples", reading.backlog.samples},
        {"seconds", absl::ToDoubleSeconds(reading.backlog.oldest)},
        {"waits",
         {{"count", reading.learning_waits.count},
          {"seconds", reading.learning_waits.seconds},
          {"longest_seconds", reading.learning_waits.longest_seconds},
          {"current_seconds",
           absl::ToDoubleSeconds(reading.learning_waits.current)}}}}},
      {"prequential_nmse", Numbers(stats.prequential_nmse)},
      {"honest_nmse", Numbers(stats.honest_nmse)},
      {"honest_lag", stats.honest_lag},
      {"interval_lag", stats.interval_lag},
      {"interval_recalibration_passes", stats.interval_recalibration_passes},
      {"interval_recalibrated", stats.interval_recalibrated},
      {"answers",
       {{"sent", reading.answers.answers},
        {"nmse", Numbers(reading.answers.nmse)},
        {"recent_nmse", Numbers(reading.answers.recent_nmse)}}},
      {"ahead",
       {{"scored", reading.ahead.answers},
        {"nmse", Numbers(reading.ahead.nmse)},
        {"coverage", Numbers(reading.ahead.interval_coverage)}}},
      {"interval",
       {{"level", config.interval_level},
        {"half_width", Numbers(stats.interval_half_width)},
        {"coverage", Numbers(stats.interval_coverage)},
        {"answer_half_width", Numbers(stats.answer_interval_half_width)},
        {"answer_coverage", Numbers(stats.answer_interval_coverage)}}},
      {"snapshot", nullptr},
  };
  if (!stats.candidates.empty()) {
    out["candidates"] = {{"names", stats.candidates},
                         {"weights", stats.candidate_weights},
                         {"answer_weights", stats.answer_candidate_weights}};
  }
  if (!reading.learning_error.ok()) {
    out["failed"] = reading.learning_error.ToString();
  }
  if (detailed) {
    out["curve"] =
        CurveJson(hosted.learning_curve(), stats, config.target_names.size());
    out["recent"] =
        RecentJson(hosted.recent_predictions(), config.target_names.size());
    const MetricReport report = hosted.model().metric();
    Json metrics = Json::array();
    for (std::size_t i = 0; i < report.metrics.size(); ++i) {
      Json metric = LearnedMetricJson(report.metrics[i], config.input_dim);
      metric["scope"] = MetricScope(report, i, config);
      metrics.push_back(std::move(metric));
    }
    out["learned_metrics"] = std::move(metrics);
  }
  if (reading.has_journal) {
    out["snapshot"] = {{"age_seconds", reading.snapshot_age_seconds},
                       {"samples_since", reading.samples_since_snapshot}};
  }
  return out;
}

Json ClusterJson(const ClusterNode::Report& report) {
  Json replicas = Json::array();
  for (const ClusterNode::Report::Hosted& hosted : report.hosted) {
    replicas.push_back(
        {{"model", hosted.model},
         {"applied", hosted.applied},
         {"catching_up", hosted.catching_up},
         {"fell_behind", hosted.fell_behind},
         {"replayed_from", hosted.replayed_from},
         {"snapshot_through", hosted.snapshot_through},
         {"whole_snapshot_being_put", hosted.whole_snapshot_being_put}});
  }
  return {{"live_servers", report.live_servers},
          {"replicas", std::move(replicas)},
          {"not_hosted", report.not_hosted},
          {"heartbeat_failures", report.heartbeat_failures},
          {"reconcile_failures", report.reconcile_failures},
          {"host_failures", report.host_failures},
          {"snapshots", report.snapshots},
          {"snapshot_increments", report.snapshot_increments},
          {"snapshot_failures", report.snapshot_failures},
          {"models_moved", report.models_moved}};
}

}  // namespace

std::string StatusReportJson(
    const ModelRegistry& registry, const RpcMetrics& rpc,
    const std::optional<absl::flat_hash_set<std::string>>& detailed,
    const ClusterNode::Report* cluster, absl::Time started, absl::Time now) {
  Json models = Json::array();
  for (const std::shared_ptr<HostedModel>& model :
       registry.List("", std::numeric_limits<std::size_t>::max())) {
    if (!model->deleted()) {
      const bool detail =
          !detailed.has_value() || detailed->contains(model->name());
      models.push_back(
          ModelJson(ReadModel(*model, now), registry.limits(), detail));
    }
  }
  Json report = {{"server", ServerJson(registry, started, now)},
                 {"latency", LatencyJson(rpc)},
                 {"models", std::move(models)}};
  if (cluster != nullptr) report["cluster"] = ClusterJson(*cluster);
  return report.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace streamreg
