#include "client/tools/latency_recorder.h"

#include "common/percentile.h"

namespace streamreg {

double LatencyRecorder::PercentileMicros(double q) const {
  return Percentile(samples_us_, q);
}

double LatencyRecorder::MeanMicros() const {
  if (samples_us_.empty()) return 0.0;
  double sum = 0.0;
  for (double us : samples_us_) sum += us;
  return sum / samples_us_.size();
}

}  // namespace streamreg
