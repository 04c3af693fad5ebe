// streamreg ingest / predict: CSV files in, predictions out.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli_commands.h"
#include "client/cli/csv_columns.h"
#include "client/cli/used_neighbors_csv.h"
#include "client/lib/ingester.h"
#include "client/lib/terminal.h"
#include "common/command_line.h"
#include "common/normalized_error.h"

namespace streamreg {

absl::StatusOr<CsvTable> ReadCsvOption(const CliOptions& options) {
  if (options.csv.empty()) {
    return UsageError("--csv FILE is required");
  }
  return CsvTable::Read(options.csv);
}

std::size_t RowLimit(const CliOptions& options, const CsvTable& table) {
  return options.limit == 0
             ? table.num_rows()
             : std::min<std::size_t>(table.num_rows(), options.limit);
}

ColumnMatching ColumnMatchingOf(const CliOptions& options) {
  return options.by_position ? ColumnMatching::kByPosition
                             : ColumnMatching::kByName;
}

absl::Status IngestCommand(Client& client, const CliOptions& options,
                           std::FILE* out) {
  absl::StatusOr<std::string> model = ModelName(options);
  if (!model.ok()) return model.status();
  absl::StatusOr<CsvTable> table = ReadCsvOption(options);
  if (!table.ok()) return table.status();
  absl::StatusOr<v1::ModelSpec> spec =
      ModelSpecFor(client, options, *model, *table);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<CsvColumns> columns =
      MatchColumns(*table, *spec, true, ColumnMatchingOf(options));
  if (!columns.ok()) return columns.status();

  const std::size_t rows = RowLimit(options, *table);
  ProgressBar bar(absl::StrCat("ingest ", *model), rows);
  std::unique_ptr<Ingester> ingester = client.StartIngest(*model);
  std::vector<double> x;
  std::vector<double> y;
  for (std::size_t row = 0; row < rows; ++row) {
    x.clear();
    y.clear();
    AppendRow(*table, row, columns->inputs, &x);
    AppendRow(*table, row, columns->targets, &y);
    if (absl::Status status = ingester->Add(x, y); !status.ok()) {
      return status;
    }
    bar.Update(row + 1);
  }
  absl::StatusOr<IngestSummary> summary = ingester->Finish();
  if (!summary.ok()) return summary.status();
  bar.Done(rows);
  std::fprintf(
      out,
      "ingested %llu samples into %s (%llu duplicates skipped, %llu retries); "
      "the model has %llu samples\n",
      static_cast<unsigned long long>(summary->accepted), model->c_str(),
      static_cast<unsigned long long>(summary->duplicates),
      static_cast<unsigned long long>(summary->retries),
      static_cast<unsigned long long>(summary->num_samples));
  return absl::OkStatus();
}

absl::Status PredictCommand(Client& client, const CliOptions& options,
                            std::FILE* out) {
  absl::StatusOr<std::string> model = ModelName(options);
  if (!model.ok()) return model.status();
  absl::StatusOr<CsvTable> table = ReadCsvOption(options);
  if (!table.ok()) return table.status();
  absl::StatusOr<v1::Model> found = client.GetModel(*model);
  if (!found.ok()) return found.status();
  const v1::ModelSpec& spec = found->spec();
  absl::StatusOr<CsvColumns> columns =
      MatchColumns(*table, spec, false, ColumnMatchingOf(options));
  if (!columns.ok()) return columns.status();

  const std::size_t rows = RowLimit(options, *table);
  std::vector<double> x;
  x.reserve(rows * spec.input_dim());
  for (std::size_t row = 0; row < rows; ++row) {
    AppendRow(*table, row, columns->inputs, &x);
  }
  const PredictCallOptions asked = {
      .interval_level = options.spec.interval_level != 0
                            ? std::optional<double>(options.spec.interval_level)
                            : std::nullopt,
      .with_neighbors = !options.neighbors_out.empty(),
      .min_learned = options.min_learned};
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client.Predict(*model, x, spec.input_dim(), asked);
  if (!predictions.ok()) return predictions.status();
  if (asked.with_neighbors) {
    if (absl::Status status =
            WriteUsedNeighborsCsv(options.neighbors_out, spec, *predictions);
        !status.ok()) {
      return status;
    }
  }

  // The predictions' CSV goes to --out, or with "-" to the output.
  const std::string& out_path = options.out;
  std::FILE* file = out;
  if (!out_path.empty() && out_path != "-") {
    file = std::fopen(out_path.c_str(), "w");
    if (file == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("--out ", out_path, ": cannot write"));
    }
  }
  absl::Cleanup close_file = [file, out] {
    if (file != out) std::fclose(file);
  };
  // The data convention: predictions as target_<name>, then each one's
  // spread, interval (lower_, upper_), with the random-feature base each
  // one's base variance, and the neighbour count.
  const bool with_variance = spec.has_random_feature_base();
  std::string header;
  for (const std::string& name : spec.target_names()) {
    absl::StrAppend(&header, header.empty() ? "" : ",", "target_", name);
  }
  std::vector<std::string> columns_per_target = {"spread_", "lower_", "upper_"};
  if (with_variance) columns_per_target.push_back("base_variance_");
  for (const std::string& column : columns_per_target) {
    for (const std::string& name : spec.target_names()) {
      absl::StrAppend(&header, ",", column, name);
    }
  }
  std::fprintf(file, "%s,neighbors\n", header.c_str());
  NormalizedError error(columns->targets.size());
  std::vector<double> truth(columns->targets.size());
  std::vector<std::size_t> within(truth.size(), 0);
  for (std::size_t row = 0; row < predictions->size(); ++row) {
    const v1::Prediction& p = (*predictions)[row];
    std::string line;
    for (double v : p.y()) {
      absl::StrAppend(&line, line.empty() ? "" : ",",
                      absl::StrFormat("%.17g", v));
    }
    for (const auto* values :
         {&p.spread(), &p.lower(), &p.upper(), &p.base_variance()}) {
      for (double v : *values) {
        absl::StrAppend(&line, ",", absl::StrFormat("%.17g", v));
      }
    }
    std::fprintf(file, "%s,%u\n", line.c_str(), p.neighbors());
    if (truth.empty()) continue;
    for (std::size_t t = 0; t < truth.size(); ++t) {
      truth[t] = table->value(row, columns->targets[t]);
      within[t] += p.lower(t) <= truth[t] && truth[t] <= p.upper(t);
    }
    error.Add(PredictedValues(p), truth);
  }
  const bool written = std::fflush(file) == 0 && std::ferror(file) == 0;
  // With the true targets in the file: how good the predictions were, per
  // target, as nMSE (mean squared error / variance of the targets), and the
  // fraction of rows within their intervals.
  std::string scores;
  for (std::size_t t = 0; t < truth.size(); ++t) {
    absl::StrAppend(&scores, t == 0 ? "; nMSE " : ", ", spec.target_names(t),
                    " ", absl::StrFormat("%.4g", error.Nmse(t)));
  }
  for (std::size_t t = 0; t < truth.size() && !predictions->empty(); ++t) {
    absl::StrAppend(
        &scores, t == 0 ? "; within the intervals " : ", ",
        spec.target_names(t), " ",
        absl::StrFormat("%.4g", static_cast<double>(within[t]) /
                                    static_cast<double>(predictions->size())));
  }
  std::fprintf(stderr, "predicted %zu rows%s\n", predictions->size(),
               scores.c_str());
  return written ? absl::OkStatus()
                 : absl::DataLossError(
                       absl::StrCat("--out ", out_path, ": write failed"));
}

}  // namespace streamreg
