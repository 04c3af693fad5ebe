#include "client/tools/terminal.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace streamreg {

ProgressBar::ProgressBar(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      start_(absl::Now()),
      last_draw_(absl::InfinitePast()),
      terminal_(isatty(STDERR_FILENO) != 0) {}

std::string ProgressBar::Line(std::uint64_t done) const {
  constexpr int kWidth = 30;
  const double fraction =
      total_ == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / total_);
  const int filled = static_cast<int>(fraction * kWidth);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  return absl::StrFormat("%s [%s%s] %3.0f%% %d/%d %.0f/s", label_,
                         std::string(filled, '#'),
                         std::string(kWidth - filled, ' '), 100 * fraction,
                         done, total_, seconds > 0 ? done / seconds : 0.0);
}

void ProgressBar::Update(std::uint64_t done) {
  if (!terminal_) return;
  const absl::Time now = absl::Now();
  if (now - last_draw_ < absl::Milliseconds(100)) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r%s", Line(done).c_str());
  std::fflush(stderr);
}

void ProgressBar::Done(std::uint64_t done) {
  std::fprintf(stderr, "%s%s\n", terminal_ ? "\r" : "", Line(done).c_str());
}

std::string BarChart(const std::vector<std::string>& labels,
                     const std::vector<double>& values, int width) {
  static const char* const kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  double largest = 0.0;
  std::size_t label_width = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    largest = std::max(largest, std::abs(values[i]));
    label_width = std::max(label_width, labels[i].size());
  }
  std::string chart;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double scaled =
        largest > 0 ? std::abs(values[i]) / largest * width : 0.0;
    const int whole = static_cast<int>(scaled);
    const int eighths = static_cast<int>((scaled - whole) * 8);
    std::string bar;
    for (int b = 0; b < whole; ++b) bar += "█";
    bar += kEighths[eighths];
    const int cells = whole + (eighths > 0 ? 1 : 0);
    absl::StrAppend(&chart, labels[i],
                    std::string(label_width - labels[i].size() + 1, ' '), "|",
                    bar, std::string(std::max(0, width - cells), ' '), "| ",
                    absl::StrFormat("%.4g", values[i]), "\n");
  }
  return chart;
}

}  // namespace streamreg
