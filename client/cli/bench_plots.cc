// PNG plots of `streamreg bench` reports, drawn by gnuplot from the JSON.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/bench_commands.h"
#include "client/cli/bench_report.h"
#include "client/cli/cli_commands.h"
#include "common/command_line.h"

namespace streamreg {
namespace {

// A gnuplot inline data block: "$name << EOD ... EOD".
std::string DataBlock(const std::string& name,
                      const std::vector<std::string>& rows) {
  std::string block = absl::StrCat("$", name, " << EOD\n");
  for (const std::string& row : rows) absl::StrAppend(&block, row, "\n");
  absl::StrAppend(&block, "EOD\n");
  return block;
}

std::vector<std::string> HistogramRows(const nlohmann::json& histogram) {
  std::vector<std::string> rows;
  for (const nlohmann::json& bucket : histogram) {
    rows.push_back(absl::StrFormat("%.6g %d", bucket["us"].get<double>(),
                                   bucket["count"].get<std::uint64_t>()));
  }
  return rows;
}

std::string Header(const std::string& path) {
  return absl::StrCat(
      "set terminal pngcairo size 1000,560 font 'sans,11'\nset output '", path,
      "'\nset grid\nset key top right\n");
}

std::string LatencyScript(const nlohmann::json& report,
                          const std::string& path) {
  std::string script = Header(path);
  const nlohmann::json& latency = report["latency_us"];
  const bool predict = report["kind"] == "predict";
  absl::StrAppend(
      &script,
      DataBlock("measured", HistogramRows(report["latency_histogram"])),
      predict
          ? DataBlock("empty", HistogramRows(report["empty_latency_histogram"]))
          : "",
      absl::StrFormat(
          "set title '%s %s: %d clients, p50 %.0f µs, p99 %.0f µs'\n",
          predict ? "Predict" : "Learn", report["rpc"].get<std::string>(),
          report["concurrency"].get<int>(), latency["p50"].get<double>(),
          latency["p99"].get<double>()),
      "set logscale x\nset xlabel 'round-trip latency (µs)'\n"
      "set ylabel 'calls'\n",
      "plot $measured using 1:2 with histeps lw 2 title '",
      predict ? "predict" : "learn", "'",
      predict ? ", $empty using 1:2 with histeps lw 2 title 'empty RPC'" : "",
      "\n");
  return script;
}

std::string NmseScript(const nlohmann::json& report, const std::string& path) {
  std::vector<std::string> rows;
  for (const nlohmann::json& point : report["nmse_over_time"]) {
    rows.push_back(absl::StrFormat("%.3f %.6g", point["t_s"].get<double>(),
                                   point["nmse"].get<double>()));
  }
  std::string script = absl::StrCat(
      Header(path), DataBlock("nmse", rows),
      absl::StrFormat("set title 'Prequential nMSE of %d robot(s) at %.0f Hz "
                      "(1 s windows, mean over the 7 torques)'\n",
                      report["robots"].get<int>(),
                      report["rate_hz"].get<double>()),
      "set logscale y\nset xlabel 'time (s)'\nset ylabel 'nMSE'\n");
  const double payload_at = report["payload"]["from_s"].get<double>();
  if (payload_at >= 0) {
    absl::StrAppend(
        &script, absl::StrFormat(
                     "set arrow from %.3f, graph 0 to %.3f, graph 1 "
                     "nohead dt 2 lw 2\nset label '%.1f kg payload' at "
                     "%.3f, graph 0.95 offset 0.5,0\n",
                     payload_at, payload_at,
                     report["payload"]["mass_kg"].get<double>(), payload_at));
  }
  absl::StrAppend(&script,
                  "plot $nmse using 1:2 with lines lw 2 title 'nMSE'\n");
  return script;
}

// A control report's RMS joint tracking error by second, with the learned
// correction and with the controller's model alone (log scale), and the
// server's pause if there was one.
std::string TrackingScript(const nlohmann::json& report,
                           const std::string& path) {
  std::vector<std::string> rows;
  const nlohmann::json& learned = report["learned_rms_by_second"];
  const nlohmann::json& rigid = report["rigid_body_rms_by_second"];
  for (std::size_t s = 0; s < learned.size() && s < rigid.size(); ++s) {
    rows.push_back(absl::StrFormat("%zu %.6g %.6g", s + 1,
                                   learned[s].get<double>(),
                                   rigid[s].get<double>()));
  }
  std::string script = absl::StrCat(
      Header(path), DataBlock("rms", rows),
      absl::StrFormat("set title 'Joint tracking error, %.1f kg payload the "
                      "controller does not know (RMS per second)'\n",
                      report["payload_kg"].get<double>()),
      "set logscale y\nset xlabel 'time (s)'\nset ylabel 'rad'\n");
  if (report["pause"].is_object()) {
    const double from = report["pause"]["at_s"].get<double>();
    const double to = from + report["pause"]["for_s"].get<double>();
    absl::StrAppend(&script,
                    absl::StrFormat("set object 1 rect from %.3f, graph 0 to "
                                    "%.3f, graph 1 fc rgb '#dddddd' behind\n"
                                    "set label 'server paused' at %.3f, graph "
                                    "0.95\n",
                                    from, to, from));
  }
  absl::StrAppend(&script,
                  "plot $rms using 1:2 with lines lw 2 title 'learned "
                  "correction', $rms using 1:3 with lines lw 2 title "
                  "'rigid-body model alone'\n");
  return script;
}

// Per second of a learn report's over_time: `field`'s p50, p99 and max
// (on a log scale for latencies, which are never 0).
std::string OverTimeScript(const nlohmann::json& report,
                           const std::string& field, const std::string& title,
                           const std::string& ylabel, bool log_scale,
                           const std::string& path) {
  std::vector<std::string> rows;
  for (const nlohmann::json& point : report["over_time"]) {
    const nlohmann::json& q = point[field];
    rows.push_back(
        absl::StrFormat("%.3f %.6g %.6g %.6g", point["t_s"].get<double>(),
                        q["p50"].get<double>(), q["p99"].get<double>(),
                        q["max"].get<double>()));
  }
  return absl::StrCat(
      Header(path), DataBlock("series", rows),
      absl::StrFormat("set title '%s: %d robot(s) at %.0f Hz, per second'\n",
                      title, report["robots"].get<int>(),
                      report["rate_hz"].get<double>()),
      "set xlabel 'time (s)'\nset ylabel '", ylabel, "'\n",
      log_scale ? "set logscale y\n" : "set yrange [0:*]\n",
      "plot $series using 1:2 with lines lw 2 title 'p50', "
      "$series using 1:3 with lines lw 2 title 'p99', "
      "$series using 1:4 with lines lw 1 title 'max'\n");
}

// A heat map: one row per target, one column per input, each row scaled
// to its largest weight (targets differ in scale; what matters is which
// inputs move each one).
std::string WeightsScript(const nlohmann::json& metric,
                          const std::string& path) {
  const nlohmann::json& metrics = metric["metrics"];
  const std::vector<std::string> inputs = metric["inputs"];
  std::vector<std::string> rows;
  std::string ytics;
  for (std::size_t r = 0; r < metrics.size(); ++r) {
    const std::vector<double> weights = metrics[r]["weights"];
    const double largest = *std::max_element(weights.begin(), weights.end());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      rows.push_back(absl::StrFormat("%d %d %.6g", i, r,
                                     largest > 0 ? weights[i] / largest : 0.0));
    }
    absl::StrAppend(&ytics, r == 0 ? "" : ", ", "'",
                    metrics[r]["target"].get<std::string>(), "' ", r);
  }
  std::string xtics;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    absl::StrAppend(&xtics, i == 0 ? "" : ", ", "'", inputs[i], "' ", i);
  }
  const std::string kind = metric["kind"].get<std::string>();
  return absl::StrCat(
      Header(path), DataBlock("weights", rows), "set title '",
      kind == "METRIC_EGOP"   ? "EGOP diagonal"
      : kind == "METRIC_MLKR" ? "MLKR input weights"
      : kind == "METRIC_GLML" ? "GLML index weights (a metric per query)"
                              : "Gradient weights",
      " per torque (each row scaled to its largest)' noenhanced\n",
      "set xtics (", xtics, ") rotate by -60 noenhanced\n", "set ytics (",
      ytics, ") noenhanced\nset grid front\nunset grid\n",
      "set palette defined (0 'white', 0.5 '#6baed6', 1 '#08306b')\n"
      "set cbrange [0:1]\nset xrange [-0.5:",
      inputs.size() - 0.5, "]\nset yrange [-0.5:", metrics.size() - 0.5,
      "] reverse\nplot $weights using 1:2:3 with image notitle\n");
}

absl::Status RunGnuplot(const std::string& script) {
  FILE* gnuplot = popen("gnuplot", "w");
  if (gnuplot == nullptr) {
    return absl::FailedPreconditionError("cannot run gnuplot");
  }
  std::fwrite(script.data(), 1, script.size(), gnuplot);
  const int status = pclose(gnuplot);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::FailedPreconditionError(
        "gnuplot failed (is gnuplot-nox installed?)");
  }
  return absl::OkStatus();
}

// A predict or learn report's plots: the latency histogram, and for learn
// the nMSE over time, the latency and learn lag by second, the weights.
void AddLatencyAndLearnPlots(
    const nlohmann::json& report, const std::string& dir,
    std::vector<std::pair<std::string, std::string>>* plots_out) {
  std::vector<std::pair<std::string, std::string>>& plots = *plots_out;
  const std::string latency = (std::filesystem::path(dir) / "latency.png");
  plots.emplace_back(latency, LatencyScript(report, latency));
  if (report["kind"] == "learn") {
    const std::string nmse = std::filesystem::path(dir) / "nmse.png";
    plots.emplace_back(nmse, NmseScript(report, nmse));
    if (report.contains("over_time")) {
      const std::string latency_over_time =
          std::filesystem::path(dir) / "latency_over_time.png";
      plots.emplace_back(
          latency_over_time,
          OverTimeScript(report, "latency_us", "Learn round trip",
                         "latency (µs)", true, latency_over_time));
      const std::string lag = std::filesystem::path(dir) / "learn_lag.png";
      plots.emplace_back(
          lag, OverTimeScript(report, "learn_lag_samples",
                              "Learn lag: samples the answer had not learned",
                              "samples", false, lag));
    }
    if (report["metric"].is_object() && !report["metric"]["metrics"].empty()) {
      const std::string weights = std::filesystem::path(dir) / "weights.png";
      plots.emplace_back(weights, WeightsScript(report["metric"], weights));
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PlotReport(
    const nlohmann::json& report, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  std::vector<std::pair<std::string, std::string>> plots;
  try {
    if (report.value("kind", "") == "control") {
      const std::string tracking = std::filesystem::path(dir) / "tracking.png";
      plots.emplace_back(tracking, TrackingScript(report, tracking));
    } else {
      AddLatencyAndLearnPlots(report, dir, &plots);
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("the report lacks a field: ", e.what()));
  }
  std::vector<std::string> written;
  for (const auto& [path, script] : plots) {
    if (absl::Status status = RunGnuplot(script); !status.ok()) return status;
    written.push_back(path);
  }
  return written;
}

absl::Status PlotIfAsked(const nlohmann::json& report,
                         const BenchOptions& options, std::FILE* out) {
  const std::string& dir = options.plots;
  if (dir.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> written = PlotReport(report, dir);
  if (!written.ok()) return written.status();
  for (const std::string& path : *written)
    std::fprintf(out, "wrote %s\n", path.c_str());
  return absl::OkStatus();
}

absl::Status BenchPlotCommand(Client& /*client*/, const CliOptions& options,
                              std::FILE* out) {
  const std::string& path = options.json;
  if (path.empty() || path == "-") {
    return UsageError("--json FILE: the report to plot");
  }
  if (options.bench.plots.empty()) {
    return UsageError("--plots DIR: where to draw");
  }
  absl::StatusOr<nlohmann::json> report = ReadJsonReport(path);
  if (!report.ok()) return report.status();
  return PlotIfAsked(*report, options.bench, out);
}

}  // namespace streamreg
