#ifndef STREAMREG_CLIENT_CLI_CLI_COMMANDS_H_
#define STREAMREG_CLIENT_CLI_CLI_COMMANDS_H_

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/cli/cli_options.h"
#include "client/cli/csv_columns.h"
#include "client/lib/client.h"
#include "common/csv_table.h"

namespace streamreg {

// Every subcommand is a function of this type: it does what `options` ask
// with `client`, writes its result to `out` (progress and notes go to
// stderr) and returns an error to report.
using Command = absl::Status(Client& client, const CliOptions& options,
                             std::FILE* out);
using CommandFunction = Command*;

Command CreateCommand;
Command ListCommand;
Command InfoCommand;
Command DeleteCommand;
Command MetricCommand;
Command RefitCommand;
Command HealthCommand;
Command IngestCommand;
Command PredictCommand;
Command ReplayCommand;

// options.model; an error if it is empty.
absl::StatusOr<std::string> ModelName(const CliOptions& options);
// The table of --csv (required).
absl::StatusOr<CsvTable> ReadCsvOption(const CliOptions& options);
// The rows of `table` to use: all, or the first --limit.
std::size_t RowLimit(const CliOptions& options, const CsvTable& table);
// How --by_position says to match a CSV's columns to a model's.
ColumnMatching ColumnMatchingOf(const CliOptions& options);
// The spec `spec` asks for (with the CSV's columns where it gives no
// inputs or targets).
absl::StatusOr<v1::ModelSpec> SpecFromOptions(const SpecOptions& spec,
                                              const CsvTable* table);
// The model's spec; with options.create, creates it from the CSV and
// options.spec if it does not exist.
absl::StatusOr<v1::ModelSpec> ModelSpecFor(Client& client,
                                           const CliOptions& options,
                                           const std::string& model,
                                           const CsvTable& table);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_CLI_COMMANDS_H_
