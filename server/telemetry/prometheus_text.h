#ifndef STREAMREG_SERVER_TELEMETRY_PROMETHEUS_TEXT_H_
#define STREAMREG_SERVER_TELEMETRY_PROMETHEUS_TEXT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "server/telemetry/latency_histogram.h"

namespace streamreg {

// Writes the Prometheus text exposition format (version 0.0.4): each
// family's # HELP and # TYPE lines, then its samples, one per line, with
// label values and help text escaped as the format requires and values
// spelled so Prometheus parses them back exactly (NaN, +Inf, integers as
// integers, other numbers in the shortest form that round-trips).
//
// The caller writes all samples of a family right after its Family() line.
class PrometheusText {
 public:
  using Label = std::pair<absl::string_view, absl::string_view>;
  // A sample's labels, for the length of a call: a braced list
  // {{"model", name}}, an array of Label, or {} for none.
  class Labels {
   public:
    Labels() = default;
    Labels(std::initializer_list<Label> list)
        : labels_(list.begin(), list.size()) {}
    template <std::size_t N>
    Labels(const std::array<Label, N>& labels) : labels_(labels) {}
    std::span<const Label>::iterator begin() const { return labels_.begin(); }
    std::span<const Label>::iterator end() const { return labels_.end(); }
    bool empty() const { return labels_.empty(); }

   private:
    std::span<const Label> labels_;
  };
  enum class Type { kCounter, kGauge, kHistogram, kSummary };

  void Family(absl::string_view name, Type type, absl::string_view help);
  // name{labels} value — name is the family's, or for histograms and
  // summaries one of its _bucket/_sum/_count series.
  void Sample(absl::string_view name, Labels labels, double value);
  void Sample(absl::string_view name, Labels labels, std::uint64_t value);
  // A histogram's _bucket (one per bound and +Inf), _sum and _count lines.
  void Histogram(absl::string_view name, Labels labels,
                 const LatencyHistogram::Counts& counts);

  const std::string& text() const { return text_; }
  std::string Take() { return std::move(text_); }

 private:
  void BeginSample(absl::string_view name, Labels labels,
                   absl::string_view extra_label = {},
                   absl::string_view extra_value = {});
  void AppendEscaped(absl::string_view text, bool is_label_value);

  std::string text_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_TELEMETRY_PROMETHEUS_TEXT_H_
