#ifndef STREAMREG_CLIENT_CLI_BENCH_COMMANDS_H_
#define STREAMREG_CLIENT_CLI_BENCH_COMMANDS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/cli/cli_commands.h"
#include "client/cli/cli_options.h"
#include "client/lib/client.h"
#include "nlohmann/json.hpp"

namespace streamreg {

// streamreg bench predict | learn | flood | control | plot (as the commands of
// client/cli/cli_commands.h).
Command BenchPredictCommand;
Command BenchLearnCommand;
Command BenchFloodCommand;
Command BenchControlCommand;
Command BenchPlotCommand;

// With --create, creates the simulated arm's model `model` (its spec
// from the spec flags) unless it exists.
absl::Status CreateArmModelIfAsked(Client& client, const CliOptions& options,
                                   const std::string& model);

enum class BenchRpc { kUnary, kStream };
// --unary (the default) or --stream.
absl::StatusOr<BenchRpc> ChosenBenchRpc(const BenchOptions& options);

// With --plots DIR, draws the report's PNGs there (gnuplot) and says so on
// `out`.
absl::Status PlotIfAsked(const nlohmann::json& report,
                         const BenchOptions& options, std::FILE* out);
// Draws the report's PNGs into dir: latency.png (histogram; predict reports
// beside the empty RPC's), and for learn reports nmse.png (prequential nMSE
// over time) and weights.png (the learned gradient weights). Returns the
// files written.
absl::StatusOr<std::vector<std::string>> PlotReport(
    const nlohmann::json& report, const std::string& dir);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_BENCH_COMMANDS_H_
