#ifndef STREAMREG_CLIENT_TOOLS_LATENCY_RECORDER_H_
#define STREAMREG_CLIENT_TOOLS_LATENCY_RECORDER_H_

#include <cstddef>
#include <vector>

#include "absl/time/time.h"

namespace streamreg {

// Latency samples and their percentiles (q in [0, 1]; nearest rank, as
// common/percentile.h defines them).
class LatencyRecorder {
 public:
  void Add(absl::Duration latency) {
    samples_us_.push_back(absl::ToDoubleMicroseconds(latency));
  }
  // Room for `count` samples, so that adding them does not allocate.
  void Reserve(std::size_t count) { samples_us_.reserve(count); }
  double PercentileMicros(double q) const;
  double MeanMicros() const;
  std::size_t size() const { return samples_us_.size(); }
  void Clear() { samples_us_.clear(); }
  void Merge(const LatencyRecorder& other) {
    samples_us_.insert(samples_us_.end(), other.samples_us_.begin(),
                       other.samples_us_.end());
  }
  const std::vector<double>& samples_us() const { return samples_us_; }

 private:
  std::vector<double> samples_us_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_TOOLS_LATENCY_RECORDER_H_
