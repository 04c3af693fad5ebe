#ifndef STREAMREG_CLIENT_TOOLS_TERMINAL_H_
#define STREAMREG_CLIENT_TOOLS_TERMINAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace streamreg {

// A progress line on stderr — "[#####     ] 52% 2300/4449 1843/s" —
// redrawn at most 10 times a second, when stderr is a terminal; otherwise
// silent until Done, which prints the final line.
class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total);
  void Update(std::uint64_t done);
  void Done(std::uint64_t done);

 private:
  std::string Line(std::uint64_t done) const;

  std::string label_;
  std::uint64_t total_;
  absl::Time start_;
  absl::Time last_draw_;
  bool terminal_;
};

// One horizontal bar per value, scaled to the largest magnitude:
//   "q1      |████████████▌          | 0.412".
std::string BarChart(const std::vector<std::string>& labels,
                     const std::vector<double>& values, int width = 40);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_TOOLS_TERMINAL_H_
