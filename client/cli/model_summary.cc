#include "client/cli/model_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/spec_names.h"

namespace streamreg {
namespace {

constexpr char kUnknown[] = "-";

absl::Time FromWire(const google::protobuf::Timestamp& time) {
  return absl::FromUnixSeconds(time.seconds()) +
         absl::Nanoseconds(time.nanos());
}

// "2h 14m", "5m 22s", "3d 4h": the two largest units.
std::string Age(absl::Duration age) {
  std::int64_t seconds = std::max<std::int64_t>(0, absl::ToInt64Seconds(age));
  const std::int64_t days = seconds / 86400, hours = seconds / 3600 % 24,
                     minutes = seconds / 60 % 60;
  seconds %= 60;
  if (days > 0) return absl::StrFormat("%dd %dh", days, hours);
  if (hours > 0) return absl::StrFormat("%dh %dm", hours, minutes);
  if (minutes > 0) return absl::StrFormat("%dm %ds", minutes, seconds);
  return absl::StrFormat("%ds", seconds);
}

std::string DateAndAge(absl::Time time, absl::Time now) {
  return absl::StrCat(
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", time, absl::UTCTimeZone()),
      " (", Age(now - time), " ago)");
}

std::string Bytes(std::uint64_t bytes) {
  const double value = static_cast<double>(bytes);
  if (value >= 1 << 30) return absl::StrFormat("%.1f GiB", value / (1 << 30));
  if (value >= 1 << 20) return absl::StrFormat("%.1f MiB", value / (1 << 20));
  return absl::StrFormat("%.1f KiB", value / 1024);
}

// "q1, q2, q3, ..., qdd7" past six names.
std::string Names(
    const google::protobuf::RepeatedPtrField<std::string>& names) {
  if (names.size() <= 6) return absl::StrJoin(names, ", ");
  return absl::StrCat(names[0], ", ", names[1], ", ", names[2], ", ..., ",
                      names[names.size() - 1]);
}

std::string Capacity(const v1::Capacity& capacity) {
  switch (capacity.policy()) {
    case v1::CAPACITY_POLICY_WINDOW:
      return absl::StrCat("the latest ", capacity.limit(), " kept");
    case v1::CAPACITY_POLICY_RESERVOIR:
      return absl::StrCat("a reservoir of ", capacity.limit());
    default:
      return "unbounded";
  }
}

// The model's choices that hold for every target.
std::string Learns(const v1::ModelSpec& spec, const v1::ModelStats& stats) {
  std::string line = absl::StrCat(
      "metric ", SpecName<v1::Metric>(kMetricNames, spec.metric()),
      spec.per_target_metric() ? " (one per target)" : "", ", regressor ",
      SpecName<v1::Regressor>(kRegressorNames, spec.regressor()));
  if (spec.regressor() == v1::REGRESSOR_KERNEL ||
      spec.regressor() == v1::REGRESSOR_AUTO) {
    absl::StrAppend(&line, " (",
                    SpecName<v1::Kernel>(kKernelNames, spec.kernel()),
                    " kernel)");
  }
  if (spec.linear_base()) {
    absl::StrAppend(&line, spec.has_random_feature_base()
                               ? ", random-feature base"
                               : ", linear base");
    // With the metric chosen per target, the base follows their choice.
    if (spec.has_random_feature_base() && spec.metric() == v1::METRIC_AUTO &&
        stats.base_metric() != v1::METRIC_UNSPECIFIED) {
      absl::StrAppend(&line, " (in ",
                      SpecName<v1::Metric>(kMetricNames, stats.base_metric()),
                      "'s coordinates)");
    }
    absl::StrAppend(&line,
                    spec.per_target_base() ? " where it helps a target" : "");
  } else {
    absl::StrAppend(&line, ", no base");
  }
  if (spec.combine()) absl::StrAppend(&line, ", candidates combined");
  absl::StrAppend(&line, ", intervals at ",
                  absl::StrFormat("%g%%", 100 * spec.interval_level()));
  return line;
}

bool Known(double value) { return std::isfinite(value); }

std::string Error(double nmse) {
  return Known(nmse) ? absl::StrFormat("%.4f", nmse) : kUnknown;
}

std::string HalfWidth(double width) {
  return Known(width) ? absl::StrFormat("%.4g", width) : kUnknown;
}

std::string Percent(double fraction) {
  return Known(fraction) ? absl::StrFormat("%.1f%%", 100 * fraction) : kUnknown;
}

// values[t], or `otherwise` where the server sent fewer.
template <class Field, class Value>
Value At(const Field& values, int t, Value otherwise) {
  return t < values.size() ? values[t] : otherwise;
}

// What target t predicts with now: its k (and the coordinates its local
// linear fits use) or its bandwidth.
std::string Chose(const v1::ModelStats& stats, int t) {
  if (const std::uint32_t k = At(stats.k(), t, 0u); k != 0) {
    const std::uint32_t coordinates = At(stats.coordinates(), t, 0u);
    return coordinates == 0 ? absl::StrCat("k=", k)
                            : absl::StrCat("k=", k, " r=", coordinates);
  }
  if (const double h = At(stats.bandwidth(), t, 0.0); h != 0) {
    return absl::StrFormat("h=%.3g", h);
  }
  return kUnknown;
}

std::vector<std::string> TargetRow(const v1::Model& model, int t) {
  const v1::ModelStats& stats = model.stats();
  const double nan = std::nan("");
  std::string base = kUnknown;
  if (t < stats.uses_base_size()) base = stats.uses_base(t) ? "yes" : "no";
  return {model.spec().target_names(t),
          Error(At(stats.prequential_nmse(), t, nan)),
          Error(At(stats.honest_nmse(), t, nan)),
          Error(At(stats.answer_nmse(), t, nan)),
          t < stats.regressor_size()
              ? SpecName<v1::Regressor>(kRegressorNames, stats.regressor(t))
              : kUnknown,
          t < stats.metric_size()
              ? SpecName<v1::Metric>(kMetricNames, stats.metric(t))
              : kUnknown,
          Chose(stats, t),
          base,
          HalfWidth(At(stats.interval_half_width(), t, nan)),
          Percent(At(stats.interval_coverage(), t, nan))};
}

// Rows as columns padded to their widest cell, two spaces apart.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&line, " ", row[c],
                      std::string(widths[c] - row[c].size() + 1, ' '));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

// The predictions ahead of their ticks scored (LearnRequest.ahead naming
// their ticks' samples), per target: nMSE and interval coverage; nothing
// when none was.
std::string AheadLine(const v1::Model& model) {
  const v1::ModelStats& stats = model.stats();
  if (stats.ahead_scored() == 0) return "";
  const double nan = std::nan("");
  std::vector<std::string> targets;
  for (int t = 0; t < model.spec().target_names_size(); ++t) {
    targets.push_back(absl::StrCat(
        model.spec().target_names(t), " ",
        Error(At(stats.ahead_nmse(), t, nan)), " (",
        Percent(At(stats.ahead_interval_coverage(), t, nan)), ")"));
  }
  return absl::StrCat("\n  predictions ahead, ", stats.ahead_scored(),
                      " scored against their ticks' samples: nMSE "
                      "(coverage) ",
                      absl::StrJoin(targets, ", "), "\n");
}

// With candidates combined (ModelSpec.combine): each target's weights, a
// row per target; nothing otherwise.
std::string CandidateWeights(const v1::Model& model) {
  const v1::ModelStats& stats = model.stats();
  const int n = stats.candidates_size();
  if (n == 0) return "";
  std::vector<std::vector<std::string>> rows = {{"target", "for"}};
  for (const std::string& name : stats.candidates()) rows[0].push_back(name);
  for (int t = 0; t < model.spec().target_names_size(); ++t) {
    for (const auto& [label, weights] :
         {std::pair{"queries", &stats.candidate_weights()},
          std::pair{"answers", &stats.answer_candidate_weights()}}) {
      std::vector<std::string> row = {model.spec().target_names(t), label};
      for (int c = 0; c < n; ++c) {
        const int at = t * n + c;
        row.push_back(at < weights->size()
                          ? absl::StrFormat("%.3f", weights->Get(at))
                          : kUnknown);
      }
      rows.push_back(std::move(row));
    }
  }
  const std::uint32_t recency = model.spec().tuning().combination_recency();
  const std::string weighed =
      recency == 0 ? ""
                   : absl::StrCat(
                         " (the stream's s-th sample's errors weighing "
                         "s^",
                         recency, ")");
  return absl::StrCat(
      "\n  each target's prediction combines these candidates (each at its "
      "best k or h),\n  weighed for queries by their honest errors, for "
      "Learn answers by their\n  prequential ones",
      weighed, ":\n", Table(rows));
}

// How the queries' intervals are calibrated, if not on the honest
// predictions: by the current model's errors with each sample left out,
// or on predictions made without the interval lag's samples.
std::string QueryCalibrationNote(const v1::ModelStats& stats) {
  if (stats.interval_recalibrated()) {
    return "  (a query's interval, calibrated on the current model's errors "
           "on the samples it\n  learned, each predicted without itself: "
           "they came in no order in time.)\n";
  }
  if (stats.interval_lag() == 0) return "";
  return absl::StrCat(
      "  (a query's interval, calibrated on predictions made as a query's "
      "without\n  the ",
      stats.interval_lag(),
      " samples seen before each: queries may be where the stream has\n  "
      "not been lately.)\n");
}

// What the table's figures mean, with the model's honest and interval lags.
std::string Footnote(const v1::ModelStats& stats) {
  const std::uint64_t honest_lag = stats.honest_lag();
  const std::string honest =
      honest_lag == 0
          ? "  honest nMSE: the same until the model has seen enough to leave "
            "out the samples\n  just before each one (on a fast stream, near "
            "copies of it); then nearer the\n  error on data not seen yet, "
            "and what chooses k or the bandwidth h.\n"
          : absl::StrCat(
                "  honest nMSE: predicted also without the ", honest_lag,
                " samples seen just before it (on a\n  fast stream, near "
                "copies of it): nearer the error on data not seen yet, and\n"
                "  what chooses k or the bandwidth h.\n");
  return absl::StrCat(
      "\n  prequential nMSE: each sample predicted just before it was "
      "learned (of a\n  store past 4096 samples, one in 2, 4, ... up to "
      "max_scoring_stride).\n",
      honest, "  answers' nMSE: the ", stats.answers_sent(),
      " Learn answers this server sent, each against its own\n  sample as "
      "sent (from the model as it stood, however far learning lagged).\n",
      "  interval: half its width at the model's level; coverage: how often "
      "the truth\n  fell inside. \"-\": not known yet.\n",
      QueryCalibrationNote(stats));
}

}  // namespace

std::string ModelSummary(const v1::Model& model, absl::Time now) {
  const v1::ModelSpec& spec = model.spec();
  const v1::ModelStats& stats = model.stats();
  std::string text =
      absl::StrCat(model.name(), ": ", spec.input_dim(), " inputs",
                   spec.input_names().empty()
                       ? ""
                       : absl::StrCat(" (", Names(spec.input_names()), ")"),
                   " -> ", spec.target_names_size(), " targets (",
                   Names(spec.target_names()), ")\n");
  absl::StrAppend(&text, "  learns    ", Learns(spec, stats), "\n");
  absl::StrAppend(&text, "  samples   ", stats.num_samples(), " learned, ",
                  stats.num_stored(), " stored (", Capacity(spec.capacity()),
                  ")");
  if (stats.duplicate_samples() > 0) {
    absl::StrAppend(&text, ", ", stats.duplicate_samples(),
                    " resent ones skipped");
  }
  if (stats.learn_backlog() > 0) {
    absl::StrAppend(&text, ", ", stats.learn_backlog(),
                    " more queued (learning is behind)");
  }
  absl::StrAppend(&text, "; ", Bytes(stats.memory_bytes()), " in memory\n");
  absl::StrAppend(&text, "  created   ",
                  DateAndAge(FromWire(model.create_time()), now), "\n");
  absl::StrAppend(&text, "  snapshot  ",
                  model.has_snapshot_time()
                      ? DateAndAge(FromWire(model.snapshot_time()), now)
                      : "none (no write-ahead log)",
                  "\n\n");

  std::vector<std::vector<std::string>> rows = {
      {"target", "prequential", "honest", "answers", "regressor", "metric",
       "chose", "base", "interval", "coverage"},
      {"", "nMSE", "nMSE", "nMSE", "", "", "", "", "+/-", ""}};
  for (int t = 0; t < spec.target_names_size(); ++t) {
    rows.push_back(TargetRow(model, t));
  }
  absl::StrAppend(&text, Table(rows));
  absl::StrAppend(&text, AheadLine(model));
  absl::StrAppend(&text, CandidateWeights(model));
  absl::StrAppend(&text, Footnote(stats));
  return text;
}

std::string MlkrMapsSummary(const v1::MetricReport& report) {
  if (report.metrics().empty() || report.metrics(0).rank() == 0) {
    return "no map before the first fit";
  }
  const v1::LearnedMetric& first = report.metrics(0);
  double largest = 0.0;
  for (double value : first.eigenvalues()) largest = std::max(largest, value);
  std::uint32_t used = 0;
  for (double value : first.eigenvalues()) used += value > 1e-9 * largest;
  if (first.eigenvalues().empty() || used == first.rank()) {
    return absl::StrCat("maps of rank ", first.rank());
  }
  return absl::StrCat("maps of rank ", used, " (", first.rank(), " rows)");
}

}  // namespace streamreg
