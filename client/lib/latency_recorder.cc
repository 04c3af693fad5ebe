#include "client/lib/latency_recorder.h"

#include <algorithm>
#include <cmath>

namespace streamreg {

double LatencyRecorder::PercentileMicros(double q) const {
  if (samples_us_.empty()) return 0.0;
  std::vector<double> sorted = samples_us_;
  const std::size_t rank = std::min(
      sorted.size() - 1,
      static_cast<std::size_t>(std::ceil(q * sorted.size())) - (q > 0 ? 1 : 0));
  std::nth_element(sorted.begin(), sorted.begin() + rank, sorted.end());
  return sorted[rank];
}

double LatencyRecorder::MeanMicros() const {
  if (samples_us_.empty()) return 0.0;
  double sum = 0.0;
  for (double us : samples_us_) sum += us;
  return sum / samples_us_.size();
}

}  // namespace streamreg
