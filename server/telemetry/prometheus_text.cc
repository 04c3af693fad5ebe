#include "server/telemetry/prometheus_text.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"

namespace streamreg {
namespace {

absl::string_view TypeName(PrometheusText::Type type) {
  switch (type) {
    case PrometheusText::Type::kCounter:
      return "counter";
    case PrometheusText::Type::kGauge:
      return "gauge";
    case PrometheusText::Type::kHistogram:
      return "histogram";
    case PrometheusText::Type::kSummary:
      return "summary";
  }
  return "untyped";
}

// The format's spelling of a float: Go's ParseFloat reads it back exactly.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

}  // namespace

void PrometheusText::Family(absl::string_view name, Type type,
                            absl::string_view help) {
  absl::StrAppend(&text_, "# HELP ", name, " ");
  AppendEscaped(help, /*is_label_value=*/false);
  absl::StrAppend(&text_, "\n# TYPE ", name, " ", TypeName(type), "\n");
}

void PrometheusText::Sample(absl::string_view name, Labels labels,
                            double value) {
  BeginSample(name, labels);
  absl::StrAppend(&text_, " ", FormatValue(value), "\n");
}

void PrometheusText::Sample(absl::string_view name, Labels labels,
                            std::uint64_t value) {
  BeginSample(name, labels);
  absl::StrAppend(&text_, " ", value, "\n");
}

void PrometheusText::Histogram(absl::string_view name, Labels labels,
                               const LatencyHistogram::Counts& counts) {
  const std::string bucket = absl::StrCat(name, "_bucket");
  for (std::size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
    BeginSample(bucket, labels, "le",
                FormatValue(LatencyHistogram::kBounds[i]));
    absl::StrAppend(&text_, " ", counts.cumulative[i], "\n");
  }
  BeginSample(bucket, labels, "le", "+Inf");
  absl::StrAppend(&text_, " ", counts.count, "\n");
  Sample(absl::StrCat(name, "_sum"), labels, counts.sum_seconds);
  Sample(absl::StrCat(name, "_count"), labels, counts.count);
}

void PrometheusText::BeginSample(absl::string_view name, Labels labels,
                                 absl::string_view extra_label,
                                 absl::string_view extra_value) {
  text_.append(name.data(), name.size());
  if (labels.empty() && extra_label.empty()) return;
  char separator = '{';
  auto append_label = [&](absl::string_view label, absl::string_view value) {
    text_.push_back(separator);
    absl::StrAppend(&text_, label, "=\"");
    AppendEscaped(value, /*is_label_value=*/true);
    text_.push_back('"');
    separator = ',';
  };
  for (const auto& [label, value] : labels) append_label(label, value);
  if (!extra_label.empty()) append_label(extra_label, extra_value);
  text_.push_back('}');
}

// Label values escape \, " and newline; help text \ and newline.
void PrometheusText::AppendEscaped(absl::string_view text,
                                   bool is_label_value) {
  for (const char c : text) {
    if (c == '\\') {
      text_.append("\\\\");
    } else if (c == '\n') {
      text_.append("\\n");
    } else if (c == '"' && is_label_value) {
      text_.append("\\\"");
    } else {
      text_.push_back(c);
    }
  }
}

}  // namespace streamreg
