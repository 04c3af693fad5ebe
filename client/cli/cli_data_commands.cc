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
#include "client/cli/predictions_csv.h"
#include "client/cli/used_neighbors_csv.h"
#include "client/lib/ingester.h"
#include "client/tools/terminal.h"
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

namespace {

// With the true targets in the file: how good the predictions were, per
// target, as nMSE (mean squared error / variance of the targets), and the
// fraction of rows within their intervals.
class PredictionScores {
 public:
  explicit PredictionScores(std::size_t targets)
      : error_(targets), within_(targets, 0) {}

  // Prediction `p` of a row whose true targets are `truth` (none: the file
  // has no targets, nothing is scored).
  void Add(const v1::Prediction& p, const std::vector<double>& truth) {
    if (truth.empty()) return;
    for (std::size_t t = 0; t < truth.size(); ++t) {
      within_[t] += p.lower(t) <= truth[t] && truth[t] <= p.upper(t);
    }
    error_.Add(PredictedValues(p), truth);
    ++rows_;
  }

  // "; nMSE a x, b y; within the intervals a u, b v" and a line that says
  // what they are (the intervals at `level`), or nothing.
  std::string Text(const v1::ModelSpec& spec, double level) const {
    if (rows_ == 0) return "";
    std::string scores;
    for (std::size_t t = 0; t < within_.size(); ++t) {
      absl::StrAppend(&scores, t == 0 ? "; nMSE " : ", ", spec.target_names(t),
                      " ", absl::StrFormat("%.4g", error_.Nmse(t)));
    }
    for (std::size_t t = 0; t < within_.size(); ++t) {
      absl::StrAppend(&scores, t == 0 ? "; within the intervals " : ", ",
                      spec.target_names(t), " ",
                      absl::StrFormat("%.4g", static_cast<double>(within_[t]) /
                                                  static_cast<double>(rows_)));
    }
    absl::StrAppend(
        &scores,
        "\n  (nMSE: these rows' squared error over their variance, the "
        "held-out error when the model has not learned them, what to judge "
        "it by; within: the fraction inside their ",
        absl::StrFormat("%g", 100 * level), "% intervals)");
    return scores;
  }

 private:
  NormalizedError error_;
  std::vector<std::size_t> within_;
  std::size_t rows_ = 0;
};

// The predictions' CSV to --out, or with "-" (or none) to `out`; whether
// every byte was written, and the scores of the rows.
absl::Status WritePredictions(const CliOptions& options, std::FILE* out,
                              const v1::ModelSpec& spec,
                              const std::vector<v1::Prediction>& predictions,
                              const CsvTable& table, const CsvColumns& columns,
                              PredictionScores* scores) {
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
  const PredictionsCsv csv(spec, !columns.targets.empty(),
                           options.legacy_columns);
  std::fprintf(file, "%s\n", csv.Header().c_str());
  std::vector<double> truth;
  for (std::size_t row = 0; row < predictions.size(); ++row) {
    const v1::Prediction& p = predictions[row];
    truth.clear();
    AppendRow(table, row, columns.targets, &truth);
    std::fprintf(file, "%s\n", csv.Row(p, truth).c_str());
    scores->Add(p, truth);
  }
  const bool written = std::fflush(file) == 0 && std::ferror(file) == 0;
  return written ? absl::OkStatus()
                 : absl::DataLossError(
                       absl::StrCat("--out ", out_path, ": write failed"));
}

}  // namespace

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
  PredictionScores scores(columns->targets.size());
  const absl::Status written = WritePredictions(
      options, out, spec, *predictions, *table, *columns, &scores);
  // A file that could not be opened says so alone; one written in part
  // still reports what was predicted.
  if (absl::IsFailedPrecondition(written)) return written;
  // The level predict asked for, else the model's (GetModel reports the
  // one in effect; unset: the default 0.9).
  const double level = options.spec.interval_level != 0
                           ? options.spec.interval_level
                       : spec.has_interval_level() ? spec.interval_level()
                                                   : 0.9;
  std::fprintf(stderr, "predicted %zu rows%s\n", predictions->size(),
               scores.Text(spec, level).c_str());
  return written;
}

}  // namespace streamreg
