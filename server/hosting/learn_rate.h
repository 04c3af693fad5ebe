#ifndef STREAMREG_SERVER_HOSTING_LEARN_RATE_H_
#define STREAMREG_SERVER_HOSTING_LEARN_RATE_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace streamreg {

// How fast a hosted model learns, as measured on its learning thread: a
// running average of the wall time per sample over about the last
// kMemorySamples samples learned, contention with other work included. It
// turns a wait into a number of samples: the overload limit that keeps a
// model's queue within --max-queue-delay (ModelRegistry::AdmitSamples).
// Record is called by one thread at a time; the rate may be read from any.
class LearnRate {
 public:
  static constexpr double kMemorySamples = 256;
  static constexpr double kFastestSecondsPerSample = 1e-9;

  // `samples` were learned in `took`.
  void Record(std::uint64_t samples, absl::Duration took);
  // Samples per second; 0 until something was learned.
  double samples_per_second() const {
    return samples_per_second_.load(std::memory_order_relaxed);
  }
  // The samples learned in `wait` at that rate, at least 1; 0 (no limit)
  // while the rate is unknown or `wait` is zero.
  std::uint64_t SamplesIn(absl::Duration wait) const;

 private:
  double seconds_per_sample_ = 0.0;  // the learning thread's
  std::atomic<double> samples_per_second_ = 0.0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_LEARN_RATE_H_
