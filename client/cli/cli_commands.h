#ifndef STREAMREG_CLIENT_CLI_CLI_COMMANDS_H_
#define STREAMREG_CLIENT_CLI_CLI_COMMANDS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/lib/client.h"
#include "common/csv_table.h"

// The streamreg CLI's flags (defined in cli_main.cc).
ABSL_DECLARE_FLAG(std::string, name);
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::uint32_t, inputs);
ABSL_DECLARE_FLAG(std::string, targets);
ABSL_DECLARE_FLAG(std::string, metric);
ABSL_DECLARE_FLAG(std::string, regressor);
ABSL_DECLARE_FLAG(std::string, kernel);
ABSL_DECLARE_FLAG(std::string, capacity);
ABSL_DECLARE_FLAG(bool, per_target);
ABSL_DECLARE_FLAG(std::uint64_t, seed);
ABSL_DECLARE_FLAG(std::string, csv);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(double, rate);
ABSL_DECLARE_FLAG(std::uint64_t, limit);
ABSL_DECLARE_FLAG(bool, create);
ABSL_DECLARE_FLAG(std::string, json);
ABSL_DECLARE_FLAG(std::uint64_t, robot_seed);

namespace streamreg {

// One function per subcommand; each prints its result to stdout and
// returns an error to report.
absl::Status CreateCommand(Client& client);
absl::Status ListCommand(Client& client);
absl::Status InfoCommand(Client& client);
absl::Status DeleteCommand(Client& client);
absl::Status MetricCommand(Client& client);
absl::Status RefitCommand(Client& client);
absl::Status HealthCommand(Client& client);
absl::Status IngestCommand(Client& client);
absl::Status PredictCommand(Client& client);
absl::Status ReplayCommand(Client& client);

// --model, or --name; an error if neither is set.
absl::StatusOr<std::string> ModelFlag();
// The spec of the flags --inputs/--targets/--metric/... (and of the CSV's
// columns where --inputs or --targets is not given).
absl::StatusOr<v1::ModelSpec> SpecFromFlags(const CsvTable* table);
// The model's spec; with --create, creates it from the CSV and the flags
// if it does not exist.
absl::StatusOr<v1::ModelSpec> ModelSpecFor(Client& client,
                                           const std::string& model,
                                           const CsvTable& table);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_CLI_COMMANDS_H_
