#include "client/cli/bench_learn_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_report.h"
#include "client/cli/target_mean.h"
#include "common/percentile.h"
#include "nlohmann/json.hpp"

namespace streamreg {
namespace {

// {"p50", "p99", "p999", "max"} of `values` (nearest rank).
nlohmann::json QuantilesJson(const std::vector<double>& values) {
  return {{"p50", Percentile(values, 0.5)},
          {"p99", Percentile(values, 0.99)},
          {"p999", Percentile(values, 0.999)},
          {"max", Percentile(values, 1.0)}};
}

// Every robot's messages in windows of one second (by send time): latency
// and learn lag percentiles per window.
nlohmann::json OverTime(const std::vector<RobotRun>& runs) {
  std::vector<std::vector<const AnsweredMessage*>> windows;
  for (const RobotRun& run : runs) {
    for (const AnsweredMessage& tick : run.ticks) {
      const auto w = static_cast<std::size_t>(std::max(0.0, tick.t_s));
      if (w >= windows.size()) windows.resize(w + 1);
      windows[w].push_back(&tick);
    }
  }
  nlohmann::json series = nlohmann::json::array();
  for (std::size_t w = 0; w < windows.size(); ++w) {
    std::vector<double> latency, lag_samples, lag_us;
    for (const AnsweredMessage* tick : windows[w]) {
      latency.push_back(tick->latency_us);
      lag_samples.push_back(tick->lag_samples);
      lag_us.push_back(tick->lag_us);
    }
    series.push_back({{"t_s", w + 1.0},
                      {"messages", windows[w].size()},
                      {"latency_us", QuantilesJson(latency)},
                      {"learn_lag_samples", QuantilesJson(lag_samples)},
                      {"learn_lag_us", QuantilesJson(lag_us)}});
  }
  return series;
}

// The coverage of several streams' intervals: per target over all their
// samples (streams weighted by their counts), and the range over targets
// and every stream's full windows.
struct CoverageSummary {
  std::vector<double> by_target;
  double mean = NAN;
  // Over every full window of every stream and target (NaN for none).
  double window_min = NAN;
  double window_max = NAN;
  std::uint64_t counted = 0;
  // Every stream's full windows in turn, per target.
  std::vector<std::vector<double>> window_coverage;
};

CoverageSummary Summarize(const std::vector<const IntervalCoverage*>& runs) {
  CoverageSummary summary;
  summary.by_target.assign(kRobotTargets, 0.0);
  std::vector<double> every_window;
  for (const IntervalCoverage* run : runs) {
    if (run->counted() == 0) continue;
    summary.counted += run->counted();
    const std::vector<double> coverage = run->Coverage();
    for (std::size_t t = 0; t < kRobotTargets; ++t) {
      summary.by_target[t] += coverage[t] * run->counted();
    }
    for (const std::vector<double>& window : run->window_coverage()) {
      summary.window_coverage.push_back(window);
      every_window.insert(every_window.end(), window.begin(), window.end());
    }
  }
  if (!every_window.empty()) {
    const auto [low, high] =
        std::minmax_element(every_window.begin(), every_window.end());
    summary.window_min = *low;
    summary.window_max = *high;
  }
  if (summary.counted == 0) return summary;
  double sum = 0.0;
  for (double& value : summary.by_target) {
    value /= static_cast<double>(summary.counted);
    sum += value;
  }
  summary.mean = sum / kRobotTargets;
  return summary;
}

nlohmann::json CoverageJson(const CoverageSummary& summary) {
  return {{"samples", summary.counted},
          {"coverage_mean", summary.mean},
          {"coverage_by_target", summary.by_target},
          {"windows", summary.window_coverage.size()},
          {"window_coverage_min", summary.window_min},
          {"window_coverage_max", summary.window_max},
          {"window_coverage", summary.window_coverage}};
}

// "coverage 0.903 (targets 0.891-0.915), over 3 windows of 10,000
// samples 0.872-0.931".
std::string CoverageText(const CoverageSummary& summary) {
  if (summary.counted == 0) return "no intervals";
  const auto [low, high] =
      std::minmax_element(summary.by_target.begin(), summary.by_target.end());
  std::string text = absl::StrFormat("coverage %.3f (targets %.3f-%.3f)",
                                     summary.mean, *low, *high);
  if (!summary.window_coverage.empty()) {
    absl::StrAppendFormat(&text, ", over %zu windows of %d samples %.3f-%.3f",
                          summary.window_coverage.size(),
                          kCoverageWindowSamples, summary.window_min,
                          summary.window_max);
  }
  return text;
}

// How many of `calls` took over `micros`.
std::size_t CallsOver(const LatencyRecorder& calls, double micros) {
  return static_cast<std::size_t>(
      std::count_if(calls.samples_us().begin(), calls.samples_us().end(),
                    [micros](double us) { return us > micros; }));
}

// What an arm that predicted ahead (--batch_ticks) got at its ticks, how
// long its loop's calls took, and its channel's counts.
nlohmann::json AheadJson(const RobotRun& run) {
  const AheadAnswers& ahead = *run.ahead;
  const RealtimeChannelStats& channel = run.channel;
  return {{"ticks", ahead.due()},
          {"in_time", ahead.in_time()},
          {"in_time_fraction",
           static_cast<double>(ahead.in_time()) /
               static_cast<double>(std::max<std::uint64_t>(1, ahead.due()))},
          {"nmse", ahead.error().MeanNmse()},
          {"intervals", CoverageJson(Summarize({&ahead.coverage()}))},
          {"read_call_us", QuantilesJson(run.read_calls.samples_us())},
          {"hand_call_us", QuantilesJson(run.hand_calls.samples_us())},
          {"loop_calls", run.read_calls.size() + run.hand_calls.size()},
          {"loop_calls_over_20us",
           CallsOver(run.read_calls, 20) + CallsOver(run.hand_calls, 20)},

          {"channel",
           {{"samples_handed", channel.samples_handed},
            {"samples_dropped", channel.samples_dropped},
            {"samples_durable", channel.samples_durable},
            {"messages", channel.messages},
            {"failures", channel.failures},
            {"predictions", channel.predictions}}}};
}

std::string AheadText(const RobotRun& run) {
  const AheadAnswers& ahead = *run.ahead;
  const std::vector<double>& reads = run.read_calls.samples_us();
  const std::vector<double>& hands = run.hand_calls.samples_us();
  return absl::StrFormat(
      "predictions ahead in hand at %llu of %llu ticks (%.3f%%); their nMSE "
      "%.4f against the ticks' measured torques; intervals %s; the loop's "
      "channel calls: Read p50 %.2f p99.9 %.2f max %.1f us, Hand p50 %.2f "
      "p99.9 %.2f max %.1f us, %zu of %zu over 20 us; %llu messages, %llu "
      "failed, %llu samples dropped",
      static_cast<unsigned long long>(ahead.in_time()),
      static_cast<unsigned long long>(ahead.due()),
      100.0 * static_cast<double>(ahead.in_time()) /
          static_cast<double>(std::max<std::uint64_t>(1, ahead.due())),
      ahead.error().MeanNmse(),
      CoverageText(Summarize({&ahead.coverage()})).c_str(),
      Percentile(reads, 0.5), Percentile(reads, 0.999), Percentile(reads, 1.0),
      Percentile(hands, 0.5), Percentile(hands, 0.999), Percentile(hands, 1.0),
      CallsOver(run.read_calls, 20) + CallsOver(run.hand_calls, 20),
      reads.size() + hands.size(),
      static_cast<unsigned long long>(run.channel.messages),
      static_cast<unsigned long long>(run.channel.failures),
      static_cast<unsigned long long>(run.channel.samples_dropped));
}

nlohmann::json MetricJson(Client& client, const std::string& model) {
  absl::StatusOr<v1::MetricReport> report = client.GetMetric(model);
  if (!report.ok()) return nullptr;
  nlohmann::json metrics = nlohmann::json::array();
  for (const v1::LearnedMetric& metric : report->metrics()) {
    metrics.push_back(
        {{"target", metric.target().empty() ? "all" : metric.target()},
         {"weights", std::vector<double>(metric.weights().begin(),
                                         metric.weights().end())}});
  }
  return {{"kind", v1::Metric_Name(report->kind())},
          {"inputs", std::vector<std::string>(report->input_names().begin(),
                                              report->input_names().end())},
          {"metrics", metrics}};
}

// The robots together: their round trips, samples sent, the longest run,
// whether any fell behind, each one's figures and the mean nMSE of each
// second all of them ran.
struct FleetFigures {
  LatencyRecorder latencies;
  std::uint64_t sent = 0;
  double elapsed = 0.0;
  bool any_fell_behind = false;
  nlohmann::json per_robot = nlohmann::json::array();
  nlohmann::json nmse_over_time = nlohmann::json::array();
};

// One robot's line (and its predictions ahead), and its JSON.
nlohmann::json ReportRobot(std::FILE* out, const LearnPlan& plan, int r,
                           const RobotRun& run, bool fell_behind) {
  nlohmann::json robot = {
      {"robot", r},
      {"sent", run.sent},
      {"achieved_rate_per_s", run.sent / run.seconds},
      {"late_ticks", run.late_ticks},
      {"max_lag_ms", absl::ToDoubleMilliseconds(run.max_lag)},
      {"fell_behind", fell_behind},
      {"answers_nmse", run.nmse},
      {"latency_us", LatencyJson(run.latencies)}};
  std::fprintf(
      out,
      "robot %d: %llu samples at %.1f/s (target %.0f), %llu late ticks, "
      "max lag %.2f ms%s; ",
      r, static_cast<unsigned long long>(run.sent), run.sent / run.seconds,
      plan.rate, static_cast<unsigned long long>(run.late_ticks),
      absl::ToDoubleMilliseconds(run.max_lag),
      fell_behind ? " FELL BEHIND" : "");
  if (!run.ahead.has_value()) {
    // An answer that took longer than a tick came after its tick.
    const std::size_t in_tick =
        run.latencies.size() - CallsOver(run.latencies, 1e6 / plan.rate);
    robot["answers_within_the_tick"] = in_tick;
    std::fprintf(out,
                 "latency_us p50 %.0f p99 %.0f p99.9 %.0f, %zu of %zu "
                 "answers within the tick (%.3f%%); ",
                 run.latencies.PercentileMicros(0.5),
                 run.latencies.PercentileMicros(0.99),
                 run.latencies.PercentileMicros(0.999), in_tick,
                 run.latencies.size(),
                 100.0 * static_cast<double>(in_tick) /
                     static_cast<double>(
                         std::max<std::size_t>(1, run.latencies.size())));
  }
  std::fprintf(out, "answers' nMSE %.4f\n", run.nmse);
  if (run.ahead.has_value()) {
    robot["ahead"] = AheadJson(run);
    std::fprintf(out, "robot %d: %s\n", r, AheadText(run).c_str());
  }
  return robot;
}

FleetFigures ReportRobots(std::FILE* out, const LearnPlan& plan,
                          const std::vector<RobotRun>& runs) {
  FleetFigures fleet;
  std::size_t windows = 0;
  for (int r = 0; r < plan.robots; ++r) {
    const RobotRun& run = runs[r];
    fleet.latencies.Merge(run.latencies);
    fleet.sent += run.sent;
    fleet.elapsed = std::max(fleet.elapsed, run.seconds);
    windows = r == 0 ? run.nmse_by_second.size()
                     : std::min(windows, run.nmse_by_second.size());
    const bool fell_behind =
        run.max_lag > kFellBehindPeriods * absl::Seconds(1.0 / plan.rate);
    fleet.any_fell_behind |= fell_behind;
    fleet.per_robot.push_back(ReportRobot(out, plan, r, run, fell_behind));
  }
  for (std::size_t w = 0; w < windows; ++w) {
    double sum = 0.0;
    for (const RobotRun& run : runs) sum += run.nmse_by_second[w];
    fleet.nmse_over_time.push_back(
        {{"t_s", w + 1.0}, {"nmse", sum / plan.robots}});
  }
  return fleet;
}

// How stale the answers were (samples and microseconds behind learning)
// and how long each sample took to be reported durable.
struct Lags {
  std::vector<double> samples, us, durability_us;
};

Lags ReportLags(std::FILE* out, const CliOptions& options,
                const LearnPlan& plan, const std::vector<RobotRun>& runs) {
  Lags lags;
  for (const RobotRun& run : runs) {
    for (const AnsweredMessage& tick : run.ticks) {
      lags.samples.push_back(tick.lag_samples);
      lags.us.push_back(tick.lag_us);
    }
    lags.durability_us.insert(lags.durability_us.end(),
                              run.durability_lag_us.begin(),
                              run.durability_lag_us.end());
  }
  if (!plan.answered_directly) return lags;
  const std::vector<double>& durable = lags.durability_us;
  std::fprintf(out,
               "durability lag (sent to reported durable, %zu samples): us "
               "p50 %.0f p99 %.0f p99.9 %.0f max %.0f%s\n",
               durable.size(), Percentile(durable, 0.5),
               Percentile(durable, 0.99), Percentile(durable, 0.999),
               Percentile(durable, 1.0),
               options.bench.answer_when_durable
                   ? " (answers waited for it: --answer_when_durable)"
                   : "");
  std::fprintf(out,
               "learn lag: samples p50 %.0f p99 %.0f p99.9 %.0f max %.0f; us "
               "p50 %.0f p99 %.0f p99.9 %.0f max %.0f\n",
               Percentile(lags.samples, 0.5), Percentile(lags.samples, 0.99),
               Percentile(lags.samples, 0.999), Percentile(lags.samples, 1.0),
               Percentile(lags.us, 0.5), Percentile(lags.us, 0.99),
               Percentile(lags.us, 0.999), Percentile(lags.us, 1.0));
  return lags;
}

// The predictors together.
struct PredictorFigures {
  LatencyRecorder latencies;
  std::uint64_t predictions = 0;
  std::uint64_t late_ticks = 0;
  absl::Duration max_lag;
};

PredictorFigures ReportFleetAndPredictors(
    std::FILE* out, const LearnPlan& plan, const FleetFigures& fleet,
    const std::vector<PredictorRun>& runs) {
  PredictorFigures predictors;
  for (const PredictorRun& run : runs) {
    predictors.latencies.Merge(run.latencies);
    predictors.predictions += run.predictions;
    predictors.late_ticks += run.late_ticks;
    predictors.max_lag = std::max(predictors.max_lag, run.max_lag);
  }
  const LatencyRecorder& all = fleet.latencies;
  std::fprintf(
      out,
      "all robots: %.0f samples/s, latency_us p50 %.0f p90 %.0f p99 %.0f p99.9 "
      "%.0f max %.0f; %s\n",
      fleet.sent / fleet.elapsed, all.PercentileMicros(0.5),
      all.PercentileMicros(0.9), all.PercentileMicros(0.99),
      all.PercentileMicros(0.999), all.PercentileMicros(1.0),
      fleet.any_fell_behind ? "SOME STREAM FELL BEHIND"
                            : "no stream fell behind");
  std::fprintf(out,
               "  (a late tick: a sample sent more than one period, %.2f ms, "
               "after its tick was due; a stream fell behind: one sent more "
               "than %d periods late, the loop did not keep its rate)\n",
               1e3 / plan.rate, kFellBehindPeriods);
  if (plan.predictors > 0) {
    const LatencyRecorder& latencies = predictors.latencies;
    std::fprintf(
        out,
        "predictors: %d at %.0f/s, %llu predictions, %llu late ticks, "
        "max lag %.2f ms; latency_us p50 %.0f p99 %.0f p99.9 %.0f "
        "max %.0f\n",
        plan.predictors, plan.predict_rate,
        static_cast<unsigned long long>(predictors.predictions),
        static_cast<unsigned long long>(predictors.late_ticks),
        absl::ToDoubleMilliseconds(predictors.max_lag),
        latencies.PercentileMicros(0.5), latencies.PercentileMicros(0.99),
        latencies.PercentileMicros(0.999), latencies.PercentileMicros(1.0));
  }
  return predictors;
}

// How often the truth fell within the intervals: the robots' answers, and
// the predictors' (at states no robot streamed).
struct Coverages {
  CoverageSummary answers;
  CoverageSummary queries;
};

Coverages ReportCoverage(std::FILE* out, const LearnPlan& plan,
                         const LearnRuns& runs) {
  std::vector<const IntervalCoverage*> answer_tallies, query_tallies;
  for (const RobotRun& run : runs.robots) {
    answer_tallies.push_back(&run.coverage);
  }
  for (const PredictorRun& run : runs.predictors) {
    query_tallies.push_back(&run.coverage);
  }
  Coverages coverages{Summarize(answer_tallies), Summarize(query_tallies)};
  const double level = plan.before.spec().interval_level();
  if (plan.answered_directly) {
    std::fprintf(out, "intervals (%.0f%%): answers' %s\n", 100 * level,
                 CoverageText(coverages.answers).c_str());
  }
  if (plan.predictors > 0) {
    std::fprintf(out,
                 "intervals (%.0f%%): predictors' (states no robot streamed) "
                 "%s\n",
                 100 * level, CoverageText(coverages.queries).c_str());
  }
  return coverages;
}

// The model's own figures: each sample scored before it was learned, and
// the honest error that also left out the samples just before it (on a
// 1 kHz arm the previous ticks are near copies of the next), beside its
// count of the answers it sent (or of its predictions ahead).
void ReportModel(std::FILE* out, const LearnPlan& plan, const v1::Model& after,
                 const PooledAnswers& answers) {
  const std::string& model = plan.models.front();
  const v1::ModelStats& stats = after.stats();
  std::fprintf(out,
               "model %s: prequential nMSE %.4f, honest nMSE %.4f (leaving "
               "out the last %llu samples; means over targets)\n",
               model.c_str(), MeanOverTargets(stats.prequential_nmse()),
               MeanOverTargets(stats.honest_nmse()),
               static_cast<unsigned long long>(stats.honest_lag()));
  std::fprintf(out,
               "  (prequential: each sample predicted just before it was "
               "learned (of a store past 4096 samples, one in 2, 4, ... up "
               "to max_scoring_stride), from the model up to date, where the "
               "robots' answers' nMSE above scores what their answers "
               "carried; at %.0f Hz the ticks before it are near copies, so "
               "it flatters. honest: also without them, nearer the error on "
               "states not seen yet)\n",
               plan.rate);
  if (plan.answered_directly) {
    std::fprintf(out,
                 "model %s: answers' nMSE %.4f over %llu answers as the "
                 "server counted them; %.4f over the %llu answers its "
                 "robots received (means over targets)\n",
                 model.c_str(), MeanOverTargets(stats.answer_nmse()),
                 static_cast<unsigned long long>(stats.answers_sent()),
                 answers.error.MeanNmse(),
                 static_cast<unsigned long long>(answers.error.count()));
  } else {
    std::fprintf(
        out,
        "model %s: predictions ahead nMSE %.4f, %.0f%% intervals' coverage "
        "%.3f over %llu scored as the server counted them (each against "
        "its tick's sample; the robots' lines above count those in hand "
        "at their tick)\n",
        model.c_str(), MeanOverTargets(stats.ahead_nmse()),
        100 * plan.before.spec().interval_level(),
        MeanOverTargets(stats.ahead_interval_coverage()),
        static_cast<unsigned long long>(stats.ahead_scored()));
  }
}

// The first model's figures after the run, for the JSON report (zeros and
// NaNs if it could not be read).
nlohmann::json ModelJson(const LearnPlan& plan,
                         const absl::StatusOr<v1::Model>& after,
                         const PooledAnswers& answers) {
  const auto mean = [&after](auto field) {
    return after.ok() ? MeanOverTargets(field(after->stats())) : NAN;
  };
  const auto count = [&after](auto field) -> std::uint64_t {
    return after.ok() ? field(after->stats()) : 0;
  };
  using Stats = v1::ModelStats;
  return {
      {"name", plan.models.front()},
      {"models", plan.models},
      {"num_samples_before", plan.before.stats().num_samples()},
      {"num_samples_after",
       count([](const Stats& s) { return s.num_samples(); })},
      {"prequential_nmse_mean",
       mean([](const Stats& s) { return s.prequential_nmse(); })},
      {"honest_nmse_mean",
       mean([](const Stats& s) { return s.honest_nmse(); })},
      {"honest_lag", count([](const Stats& s) { return s.honest_lag(); })},
      {"answers_sent", count([](const Stats& s) { return s.answers_sent(); })},
      {"answer_nmse_mean",
       mean([](const Stats& s) { return s.answer_nmse(); })},
      {"ahead_scored", count([](const Stats& s) { return s.ahead_scored(); })},
      {"ahead_nmse_mean", mean([](const Stats& s) { return s.ahead_nmse(); })},
      {"ahead_coverage_mean",
       mean([](const Stats& s) { return s.ahead_interval_coverage(); })},
      {"answers_received", answers.error.count()},
      {"answers_received_nmse_mean", answers.error.MeanNmse()}};
}

// Everything measured, as `--json` writes it.
struct LearnFigures {
  const FleetFigures& fleet;
  const Lags& lags;
  const PredictorFigures& predictors;
  const Coverages& coverages;
};

nlohmann::json LearnReportJson(Client& client, const CliOptions& options,
                               const LearnPlan& plan, const LearnRuns& runs,
                               const LearnFigures& figures,
                               const absl::StatusOr<v1::Model>& after) {
  const FleetFigures& fleet = figures.fleet;
  const PredictorFigures& predictors = figures.predictors;
  return {
      {"kind", "learn"},
      {"rpc", "stream"},
      {"server", client.options().address},
      {"model", ModelJson(plan, after, runs.first_models_answers)},
      {"robots", plan.robots},
      {"model_per_robot", options.bench.model_per_robot},
      {"concurrency", plan.robots},
      {"rate_hz", plan.rate},
      {"duration_s", plan.seconds},
      {"elapsed_s", fleet.elapsed},
      {"start_s", plan.start_s},
      {"throughput_per_s", fleet.sent / fleet.elapsed},
      {"latency_us", LatencyJson(fleet.latencies)},
      {"latency_histogram", HistogramJson(fleet.latencies)},
      {"fell_behind", fleet.any_fell_behind},
      {"fell_behind_rule",
       absl::StrCat("a message started more than ", kFellBehindPeriods,
                    " periods after its tick")},
      {"learn_lag_samples", QuantilesJson(figures.lags.samples)},
      {"learn_lag_us", QuantilesJson(figures.lags.us)},
      {"answer_when_durable", options.bench.answer_when_durable},
      {"batch_ticks", options.bench.batch_ticks},
      {"ahead_ticks", options.bench.batch_ticks > 0
                          ? nlohmann::json(options.bench.ahead_ticks)
                          : nlohmann::json(nullptr)},
      {"durability_lag_us", QuantilesJson(figures.lags.durability_us)},
      {"durable_samples", figures.lags.durability_us.size()},
      {"over_time", OverTime(runs.robots)},
      {"per_robot", fleet.per_robot},
      {"nmse_over_time", fleet.nmse_over_time},
      {"intervals",
       {{"level", plan.before.spec().interval_level()},
        {"window_samples", kCoverageWindowSamples},
        {"answers", CoverageJson(figures.coverages.answers)},
        {"predictions", CoverageJson(figures.coverages.queries)}}},
      {"payload",
       {{"mass_kg", options.bench.payload_kg},
        {"from_s", options.bench.payload_at}}},
      {"predictors",
       {{"clients", plan.predictors},
        {"rate_hz", plan.predict_rate},
        {"predictions", predictors.predictions},
        {"min_learned", options.min_learned.has_value()
                            ? nlohmann::json(*options.min_learned)
                            : nlohmann::json(nullptr)},
        {"late_ticks", predictors.late_ticks},
        {"max_lag_ms", absl::ToDoubleMilliseconds(predictors.max_lag)},
        {"latency_us", LatencyJson(predictors.latencies)}}},
      {"metric", MetricJson(client, plan.models.front())},
  };
}

}  // namespace

absl::Status ReportLearn(Client& client, const CliOptions& options,
                         const LearnPlan& plan, const LearnRuns& runs,
                         std::FILE* out) {
  const FleetFigures fleet = ReportRobots(out, plan, runs.robots);
  const Lags lags = ReportLags(out, options, plan, runs.robots);
  const PredictorFigures predictors =
      ReportFleetAndPredictors(out, plan, fleet, runs.predictors);
  const Coverages coverages = ReportCoverage(out, plan, runs);
  const absl::StatusOr<v1::Model> after = client.GetModel(plan.models.front());
  if (after.ok()) ReportModel(out, plan, *after, runs.first_models_answers);
  if (options.json.empty()) return absl::OkStatus();
  const nlohmann::json report = LearnReportJson(
      client, options, plan, runs, {fleet, lags, predictors, coverages}, after);
  if (absl::Status status = WriteJsonReport(report, options.json);
      !status.ok()) {
    return status;
  }
  return PlotIfAsked(report, options.bench, out);
}

}  // namespace streamreg
