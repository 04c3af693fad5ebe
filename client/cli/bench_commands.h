#ifndef STREAMREG_CLIENT_CLI_BENCH_COMMANDS_H_
#define STREAMREG_CLIENT_CLI_BENCH_COMMANDS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/lib/client.h"
#include "nlohmann/json.hpp"

// `streamreg bench`'s flags (defined in cli_main.cc).
ABSL_DECLARE_FLAG(std::uint32_t, concurrency);
ABSL_DECLARE_FLAG(double, duration);
ABSL_DECLARE_FLAG(bool, unary);
ABSL_DECLARE_FLAG(bool, stream);
ABSL_DECLARE_FLAG(std::uint32_t, queries);
ABSL_DECLARE_FLAG(std::uint32_t, robots);
ABSL_DECLARE_FLAG(std::uint32_t, predictors);
ABSL_DECLARE_FLAG(double, predict_rate);
ABSL_DECLARE_FLAG(double, payload_kg);
ABSL_DECLARE_FLAG(double, payload_at);
ABSL_DECLARE_FLAG(double, start_s);
ABSL_DECLARE_FLAG(std::string, plots);

namespace streamreg {

// streamreg bench predict | learn | plot.
absl::Status BenchPredictCommand(Client& client);
absl::Status BenchLearnCommand(Client& client);
absl::Status BenchPlotCommand(Client& client);

enum class BenchRpc { kUnary, kStream };
// --unary (the default) or --stream.
absl::StatusOr<BenchRpc> BenchRpcFlag();

// With --plots DIR, draws the report's PNGs there (gnuplot).
absl::Status PlotIfAsked(const nlohmann::json& report);
// Draws the report's PNGs into dir: latency.png (histogram; predict reports
// beside the empty RPC's), and for learn reports nmse.png (prequential nMSE
// over time) and weights.png (the learned gradient weights). Returns the
// files written.
absl::StatusOr<std::vector<std::string>> PlotReport(
    const nlohmann::json& report, const std::string& dir);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_BENCH_COMMANDS_H_
