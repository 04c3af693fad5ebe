// streamreg create / list / info / delete / metric / refit / health.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli_commands.h"
#include "client/cli/csv_columns.h"
#include "client/cli/model_summary.h"
#include "client/cli/spec_names.h"
#include "client/cli/target_mean.h"
#include "client/cli/tuning_flag.h"
#include "client/tools/terminal.h"
#include "common/command_line.h"
#include "common/nearest_name.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"

namespace streamreg {
namespace {

template <class Enum>
absl::StatusOr<Enum> ParseChoice(const std::string& flag,
                                 const std::string& value,
                                 SpecNames<Enum> choices) {
  std::vector<std::string> names;
  for (const auto& [name, choice] : choices) {
    if (value == name) return choice;
    names.emplace_back(name);
  }
  return UsageError(absl::StrCat("--", flag, ": unknown value '", value, "'",
                                 DidYouMean(value, names), " (expected one of ",
                                 absl::StrJoin(names, ", "), ")"));
}

absl::Status ParseCapacity(const std::string& text, v1::Capacity* capacity) {
  if (text.empty() || text == "unbounded") {
    capacity->set_policy(v1::CAPACITY_POLICY_UNBOUNDED);
    return absl::OkStatus();
  }
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  std::uint64_t limit = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &limit) ||
      (parts[0] != "window" && parts[0] != "reservoir")) {
    return UsageError(
        absl::StrCat("--capacity: '", text,
                     "' (expected unbounded, window:N or reservoir:N)"));
  }
  capacity->set_policy(parts[0] == "window" ? v1::CAPACITY_POLICY_WINDOW
                                            : v1::CAPACITY_POLICY_RESERVOIR);
  capacity->set_limit(limit);
  return absl::OkStatus();
}

// Comma-separated numbers of a list flag into `out`.
absl::Status ParseNumbers(const std::string& flag,
                          const std::vector<std::string>& values,
                          google::protobuf::RepeatedField<double>* out) {
  for (const std::string& value : values) {
    double number = 0;
    if (!absl::SimpleAtod(value, &number)) {
      return UsageError(
          absl::StrCat("--", flag, ": '", value, "' is not a number"));
    }
    out->Add(number);
  }
  return absl::OkStatus();
}

// The message as JSON (with --json) or protobuf text.
std::string Text(const google::protobuf::Message& message, bool json_format) {
  if (json_format) {
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    options.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(message, &json, options);
    return json;
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(message, &text);
  return text;
}

// What a learned metric's weights are.
const char* MetricWeightsTitle(v1::Metric kind) {
  switch (kind) {
    case v1::METRIC_EGOP:
      return "EGOP diagonal";
    case v1::METRIC_MLKR:
      return "MLKR input weights (diagonal of A^T A)";
    case v1::METRIC_EUCLIDEAN:
      return "Euclidean (every input alike)";
    case v1::METRIC_GLML:
      return "GLML: a metric per query; its index searches standardized "
             "inputs (every input alike)";
    default:
      return "gradient weights";
  }
}

// GLML: each target's gradient under the global Gaussian, in standardized
// inputs (the direction its metrics stretch along), as magnitudes.
void PrintGlmlGradients(const v1::LearnedMetric& metric,
                        const std::vector<std::string>& labels,
                        std::FILE* out) {
  const std::size_t d = labels.size();
  if (d == 0 || metric.gradient_size() == 0) return;
  for (std::size_t t = 0;
       t * d < static_cast<std::size_t>(metric.gradient_size()); ++t) {
    std::vector<double> magnitudes;
    for (std::size_t i = 0; i < d; ++i) {
      magnitudes.push_back(std::abs(metric.gradient(t * d + i)));
    }
    std::fprintf(out, "|gradient of target %zu| under the Gaussian\n%s", t,
                 BarChart(labels, magnitudes).c_str());
  }
}

}  // namespace

absl::StatusOr<std::string> ModelName(const CliOptions& options) {
  if (options.model.empty()) {
    return UsageError("--model NAME is required");
  }
  return options.model;
}

absl::StatusOr<v1::ModelSpec> SpecFromOptions(const SpecOptions& options,
                                              const CsvTable* table) {
  v1::ModelSpec spec;
  if (table != nullptr) spec = SpecFromCsv(*table);
  if (const std::uint32_t inputs = options.inputs; inputs != 0) {
    if (inputs != spec.input_dim()) spec.clear_input_names();
    spec.set_input_dim(inputs);
  }
  if (const std::string& targets = options.targets; !targets.empty()) {
    spec.clear_target_names();
    std::uint32_t count = 0;
    if (absl::SimpleAtoi(targets, &count)) {
      for (std::uint32_t t = 0; t < count; ++t) {
        spec.add_target_names(absl::StrCat("y", t));
      }
    } else {
      for (absl::string_view name : absl::StrSplit(targets, ',')) {
        spec.add_target_names(std::string(name));
      }
    }
  }
  absl::StatusOr<v1::Metric> metric =
      ParseChoice<v1::Metric>("metric", options.metric, kMetricNames);
  if (!metric.ok()) return metric.status();
  spec.set_metric(*metric);
  if (options.mlkr_rank != 0) {
    spec.mutable_tuning()->set_mlkr_rank(options.mlkr_rank);
  }
  absl::StatusOr<v1::Regressor> regressor = ParseChoice<v1::Regressor>(
      "regressor", options.regressor, kRegressorNames);
  if (!regressor.ok()) return regressor.status();
  spec.set_regressor(*regressor);
  absl::StatusOr<v1::Kernel> kernel =
      ParseChoice<v1::Kernel>("kernel", options.kernel, kKernelNames);
  if (!kernel.ok()) return kernel.status();
  spec.set_kernel(*kernel);
  if (absl::Status status =
          ParseCapacity(options.capacity, spec.mutable_capacity());
      !status.ok()) {
    return status;
  }
  spec.set_per_target_metric(options.per_target);
  // On is the server's default (where the inputs allow it).
  if (!options.linear_base) spec.set_linear_base(false);
  if (options.per_target_base) spec.set_per_target_base(true);
  if (options.combine) spec.set_combine(true);
  if (options.base_ridge >= 0) {
    spec.mutable_tuning()->set_base_ridge(options.base_ridge);
  }
  if (options.base_relative_ridge >= 0) {
    spec.mutable_tuning()->set_base_relative_ridge(options.base_relative_ridge);
  }
  if (options.base_forgetting >= 0) {
    spec.mutable_tuning()->set_base_forgetting(options.base_forgetting);
  }
  const bool random_feature_options =
      options.random_feature_frequencies != 0 ||
      !options.random_feature_lengthscales.empty() ||
      !options.random_feature_ridges.empty();
  if (random_feature_options && !options.random_feature_base) {
    return UsageError(
        "--random_feature_frequencies, _lengthscales and _ridges: only with "
        "--random_feature_base");
  }
  if (options.random_feature_base) {
    v1::RandomFeatureBase& base = *spec.mutable_random_feature_base();
    base.set_frequencies(options.random_feature_frequencies);
    if (absl::Status status = ParseNumbers("random_feature_lengthscales",
                                           options.random_feature_lengthscales,
                                           base.mutable_lengthscales());
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            ParseNumbers("random_feature_ridges", options.random_feature_ridges,
                         base.mutable_ridges());
        !status.ok()) {
      return status;
    }
  }
  if (options.interval_level != 0) {
    spec.set_interval_level(options.interval_level);
  }
  if (options.interval_window != 0) {
    spec.mutable_tuning()->set_interval_window(options.interval_window);
  }
  if (options.interval_step >= 0) {
    spec.mutable_tuning()->set_interval_step(options.interval_step);
  }
  spec.set_seed(options.seed);
  if (absl::Status status = ParseTuning(options.tuning, spec.mutable_tuning());
      !status.ok()) {
    return status;
  }
  return spec;
}

absl::StatusOr<v1::ModelSpec> ModelSpecFor(Client& client,
                                           const CliOptions& options,
                                           const std::string& model,
                                           const CsvTable& table) {
  absl::StatusOr<v1::Model> found = client.GetModel(model);
  if (found.ok()) return found->spec();
  if (found.status().code() != absl::StatusCode::kNotFound || !options.create) {
    return found.status();
  }
  absl::StatusOr<v1::ModelSpec> spec = SpecFromOptions(options.spec, &table);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<v1::Model> created = client.CreateModel(model, *spec);
  if (!created.ok()) return created.status();
  std::fprintf(stderr, "created model %s: %u inputs, %d targets\n",
               model.c_str(), created->spec().input_dim(),
               created->spec().target_names_size());
  return created->spec();
}

absl::Status CreateCommand(Client& client, const CliOptions& options,
                           std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  std::optional<CsvTable> table;
  if (const std::string& csv = options.csv; !csv.empty()) {
    absl::StatusOr<CsvTable> read = CsvTable::Read(csv);
    if (!read.ok()) return read.status();
    table = *std::move(read);
  }
  absl::StatusOr<v1::ModelSpec> spec =
      SpecFromOptions(options.spec, table.has_value() ? &*table : nullptr);
  if (!spec.ok()) return spec.status();
  if (options.replace) {
    const absl::Status deleted = client.DeleteModel(*name);
    if (deleted.ok()) {
      std::fprintf(out, "deleted the earlier model %s\n", name->c_str());
    } else if (!absl::IsNotFound(deleted)) {
      return deleted;
    }
  }
  absl::StatusOr<v1::Model> model = client.CreateModel(*name, *spec);
  if (!model.ok()) return model.status();
  std::fprintf(
      out, "created %s: %u inputs, %d targets, metric %s, regressor %s\n",
      model->name().c_str(), model->spec().input_dim(),
      model->spec().target_names_size(),
      SpecName<v1::Metric>(kMetricNames, model->spec().metric()),
      SpecName<v1::Regressor>(kRegressorNames, model->spec().regressor()));
  return absl::OkStatus();
}

absl::Status ListCommand(Client& client, const CliOptions& /*options*/,
                         std::FILE* out) {
  absl::StatusOr<std::vector<v1::Model>> models = client.ListModels();
  if (!models.ok()) return models.status();
  // The errors are means over the targets: prequential, and honest (leaving
  // out the samples just before each one scored).
  std::fprintf(out, "%-24s %6s %7s %-9s %-12s %10s %10s %11s\n", "NAME",
               "INPUTS", "TARGETS", "METRIC", "REGRESSOR", "SAMPLES", "NMSE",
               "HONEST_NMSE");
  for (const v1::Model& model : *models) {
    std::fprintf(
        out, "%-24s %6u %7d %-9s %-12s %10llu %10.4g %11.4g\n",
        model.name().c_str(), model.spec().input_dim(),
        model.spec().target_names_size(),
        SpecName<v1::Metric>(kMetricNames, model.spec().metric()),
        SpecName<v1::Regressor>(kRegressorNames, model.spec().regressor()),
        static_cast<unsigned long long>(model.stats().num_samples()),
        MeanOverTargets(model.stats().prequential_nmse()),
        MeanOverTargets(model.stats().honest_nmse()));
  }
  return absl::OkStatus();
}

absl::Status InfoCommand(Client& client, const CliOptions& options,
                         std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  absl::StatusOr<v1::Model> model = client.GetModel(*name);
  if (!model.ok()) return model.status();
  const std::string text = !options.json.empty() || options.raw
                               ? Text(*model, !options.json.empty())
                               : ModelSummary(*model, absl::Now());
  std::fprintf(out, "%s", text.c_str());
  return absl::OkStatus();
}

absl::Status DeleteCommand(Client& client, const CliOptions& options,
                           std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  if (absl::Status status = client.DeleteModel(*name); !status.ok()) {
    return status;
  }
  std::fprintf(out, "deleted %s\n", name->c_str());
  return absl::OkStatus();
}

absl::Status MetricCommand(Client& client, const CliOptions& options,
                           std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  absl::StatusOr<v1::MetricReport> report = client.GetMetric(*name);
  if (!report.ok()) return report.status();
  if (!options.json.empty()) {
    std::fprintf(out, "%s", Text(*report, true).c_str());
    return absl::OkStatus();
  }
  std::vector<std::string> labels;
  const std::size_t d =
      report->metrics().empty() ? 0 : report->metrics(0).weights_size();
  for (std::size_t i = 0; i < d; ++i) {
    labels.push_back(static_cast<int>(i) < report->input_names_size()
                         ? report->input_names(i)
                         : absl::StrCat("x", i));
  }
  if (report->kind() == v1::METRIC_MLKR) {
    std::fprintf(out, "%s metric of %s (%s)\n",
                 SpecName<v1::Metric>(kMetricNames, report->kind()),
                 name->c_str(), MlkrMapsSummary(*report).c_str());
  } else if (report->kind() == v1::METRIC_GLML) {
    std::fprintf(out,
                 "%s metric of %s (per query and target, from a global "
                 "Gaussian of inputs and targets)\n",
                 SpecName<v1::Metric>(kMetricNames, report->kind()),
                 name->c_str());
  } else {
    std::fprintf(out, "%s metric of %s (%.0f gradient estimates)\n",
                 SpecName<v1::Metric>(kMetricNames, report->kind()),
                 name->c_str(), report->gradient_samples());
  }
  for (const v1::LearnedMetric& metric : report->metrics()) {
    std::fprintf(
        out, "\n%s — %s\n",
        metric.target().empty() ? "all targets" : metric.target().c_str(),
        MetricWeightsTitle(metric.kind()));
    std::fprintf(
        out, "%s",
        BarChart(labels, {metric.weights().begin(), metric.weights().end()})
            .c_str());
    if (!metric.eigenvalues().empty()) {
      std::vector<std::string> ranks;
      for (int r = 0; r < metric.eigenvalues_size(); ++r) {
        ranks.push_back(absl::StrCat("λ", r + 1));
      }
      std::fprintf(out, "%s\n%s",
                   metric.kind() == v1::METRIC_MLKR
                       ? "MLKR spectrum (squared singular values of A)"
                       : "EGOP spectrum",
                   BarChart(ranks, {metric.eigenvalues().begin(),
                                    metric.eigenvalues().end()})
                       .c_str());
    }
    PrintGlmlGradients(metric, labels, out);
  }
  return absl::OkStatus();
}

absl::Status RefitCommand(Client& client, const CliOptions& options,
                          std::FILE* out) {
  absl::StatusOr<std::string> name = ModelName(options);
  if (!name.ok()) return name.status();
  std::optional<ProgressBar> bar;
  std::uint64_t last = 0;
  absl::StatusOr<v1::ModelStats> stats =
      client.Refit(*name, [&](std::uint64_t done, std::uint64_t total) {
        if (!bar.has_value()) bar.emplace("refit", total);
        bar->Update(done);
        last = done;
      });
  if (bar.has_value()) bar->Done(last);
  if (!stats.ok()) return stats.status();
  std::fprintf(out, "refitted %s: %llu samples, %llu metric refreshes\n",
               name->c_str(),
               static_cast<unsigned long long>(stats->num_stored()),
               static_cast<unsigned long long>(stats->metric_refreshes()));
  return absl::OkStatus();
}

absl::Status HealthCommand(Client& client, const CliOptions& /*options*/,
                           std::FILE* out) {
  absl::StatusOr<std::string> status = client.Health();
  if (!status.ok()) return status.status();
  std::fprintf(out, "%s\n", status->c_str());
  if (*status != "SERVING") {
    return absl::UnavailableError(absl::StrCat("the server is ", *status));
  }
  return absl::OkStatus();
}

}  // namespace streamreg
