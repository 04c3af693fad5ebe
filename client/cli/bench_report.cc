#include "client/cli/bench_report.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"

namespace streamreg {

nlohmann::json LatencyJson(const LatencyRecorder& latencies) {
  return {{"p50", latencies.PercentileMicros(0.5)},
          {"p90", latencies.PercentileMicros(0.9)},
          {"p99", latencies.PercentileMicros(0.99)},
          {"p999", latencies.PercentileMicros(0.999)},
          {"max", latencies.PercentileMicros(1.0)},
          {"mean", latencies.MeanMicros()},
          {"count", latencies.size()}};
}

nlohmann::json HistogramJson(const LatencyRecorder& latencies) {
  constexpr double kBucketsPerDecade = 10.0;
  std::map<int, std::uint64_t> counts;
  for (double us : latencies.samples_us()) {
    const int bucket = static_cast<int>(
        std::ceil(std::log10(std::max(us, 1.0)) * kBucketsPerDecade));
    ++counts[bucket];
  }
  nlohmann::json histogram = nlohmann::json::array();
  for (const auto& [bucket, count] : counts) {
    histogram.push_back(
        {{"us", std::pow(10.0, bucket / kBucketsPerDecade)}, {"count", count}});
  }
  return histogram;
}

absl::Status WriteJsonReport(const nlohmann::json& report,
                             const std::string& path) {
  if (path == "-") {
    std::cout << report.dump(2) << "\n";
    return absl::OkStatus();
  }
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  out.close();
  if (!out) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> ReadJsonReport(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
  if (report.is_discarded() || !report.is_object() ||
      !report.contains("kind")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a streamreg bench report"));
  }
  return report;
}

}  // namespace streamreg
