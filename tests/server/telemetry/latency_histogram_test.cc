// The latency histogram /metrics exposes (server/telemetry/
// latency_histogram.h): its cumulative counts, count and sum against
// brute-force counting of the same observations.
#include "server/telemetry/latency_histogram.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(LatencyHistogramTest, CountsEqualBruteForceCounting) {
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> log_seconds(-6.0, 3.5);
  std::vector<std::int64_t> nanoseconds;
  LatencyHistogram histogram;
  for (int i = 0; i < 5000; ++i) {
    nanoseconds.push_back(
        static_cast<std::int64_t>(std::pow(10.0, log_seconds(random)) * 1e9));
    histogram.Observe(std::chrono::nanoseconds(nanoseconds.back()));
  }
  // Exactly on a bound counts in that bound's bucket (le = "less or equal").
  nanoseconds.push_back(1'000'000);  // 1 ms
  histogram.Observe(std::chrono::milliseconds(1));
  const LatencyHistogram::Counts counts = histogram.Read();
  std::int64_t total = 0;
  for (std::int64_t n : nanoseconds) total += n;
  for (std::size_t b = 0; b < LatencyHistogram::kBounds.size(); ++b) {
    std::uint64_t expected = 0;
    for (std::int64_t n : nanoseconds) {
      expected += static_cast<double>(n) * 1e-9 <= LatencyHistogram::kBounds[b];
    }
    EXPECT_EQ(counts.cumulative[b], expected)
        << "le=" << LatencyHistogram::kBounds[b];
  }
  EXPECT_EQ(counts.count, nanoseconds.size());
  EXPECT_DOUBLE_EQ(counts.sum_seconds, static_cast<double>(total) * 1e-9);
}

}  // namespace
}  // namespace streamreg
