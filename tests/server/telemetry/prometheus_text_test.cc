// Prometheus's text format as /metrics writes it (server/telemetry/
// prometheus_text.h): labels and help escaped, numbers spelled exactly
// (the shortest text that parses back to the same double), and a
// histogram's cumulative buckets with +Inf, sum and count.
#include "server/telemetry/prometheus_text.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "server/telemetry/latency_histogram.h"

namespace streamreg {
namespace {

TEST(PrometheusTextTest, EscapesLabelsAndHelpAndSpellsNumbersExactly) {
  PrometheusText out;
  out.Family("x_total", PrometheusText::Type::kCounter, "a \\ b\nc \"q\"");
  out.Sample("x_total", {{"model", "a\"b\\c\nd"}, {"target", "t"}},
             std::numeric_limits<std::uint64_t>::max());
  out.Family("y", PrometheusText::Type::kGauge, "h");
  out.Sample("y", {}, std::nan(""));
  out.Sample("y", {{"k", "inf"}}, std::numeric_limits<double>::infinity());
  out.Sample("y", {{"k", "-inf"}}, -std::numeric_limits<double>::infinity());
  out.Sample("y", {{"k", "third"}}, 1.0 / 3.0);
  out.Sample("y", {{"k", "tiny"}}, 4.9e-324);
  EXPECT_EQ(out.text(),
            "# HELP x_total a \\\\ b\\nc \"q\"\n"
            "# TYPE x_total counter\n"
            "x_total{model=\"a\\\"b\\\\c\\nd\",target=\"t\"} "
            "18446744073709551615\n"
            "# HELP y h\n"
            "# TYPE y gauge\n"
            "y NaN\n"
            "y{k=\"inf\"} +Inf\n"
            "y{k=\"-inf\"} -Inf\n"
            "y{k=\"third\"} 0.3333333333333333\n"
            "y{k=\"tiny\"} 5e-324\n");
  // Shortest round trip: parsing the text gives the double back exactly.
  EXPECT_EQ(std::stod("0.3333333333333333"), 1.0 / 3.0);
}

TEST(PrometheusTextTest, HistogramLinesAreCumulativeWithInfSumAndCount) {
  LatencyHistogram histogram;
  histogram.Observe(std::chrono::microseconds(70));  // <= 0.0001
  histogram.Observe(std::chrono::milliseconds(3));   // <= 0.005
  histogram.Observe(std::chrono::seconds(1000));     // above every bound
  PrometheusText out;
  out.Histogram("h", {{"m", "x"}}, histogram.Read());
  const std::string& text = out.text();
  EXPECT_NE(text.find("h_bucket{m=\"x\",le=\"5e-05\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("h_bucket{m=\"x\",le=\"0.0001\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("h_bucket{m=\"x\",le=\"0.0025\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("h_bucket{m=\"x\",le=\"0.005\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("h_bucket{m=\"x\",le=\"600\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("h_bucket{m=\"x\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("h_sum{m=\"x\"} 1000.00307"), std::string::npos);
  EXPECT_NE(text.find("h_count{m=\"x\"} 3\n"), std::string::npos);
}

}  // namespace
}  // namespace streamreg
