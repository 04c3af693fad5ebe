#ifndef STREAMREG_CLIENT_CLI_BENCH_REPORT_H_
#define STREAMREG_CLIENT_CLI_BENCH_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/tools/latency_recorder.h"
#include "nlohmann/json.hpp"

namespace streamreg {

// The pieces of a `streamreg bench` JSON report.

// {"p50", "p90", "p99", "p999", "max", "mean", "count"} in µs.
nlohmann::json LatencyJson(const LatencyRecorder& latencies);

// Log-spaced latency histogram: [{"us": bucket upper bound, "count": n}],
// 10 buckets per decade from 1 µs, empty buckets left out.
nlohmann::json HistogramJson(const LatencyRecorder& latencies);

// Writes the report to path ("-" = stdout), pretty-printed.
absl::Status WriteJsonReport(const nlohmann::json& report,
                             const std::string& path);

// Reads a report written by WriteJsonReport.
absl::StatusOr<nlohmann::json> ReadJsonReport(const std::string& path);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_BENCH_REPORT_H_
