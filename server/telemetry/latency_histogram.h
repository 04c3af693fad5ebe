#ifndef STREAMREG_SERVER_TELEMETRY_LATENCY_HISTOGRAM_H_
#define STREAMREG_SERVER_TELEMETRY_LATENCY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace streamreg {

// Durations counted into fixed buckets, for the Prometheus histograms of
// /metrics (RPC handling time, fsync time). Observe() is wait-free — a
// search over the bounds and three relaxed atomic adds — so hot paths may
// call it from any thread; a scrape reads the counts without stopping them
// (a read may see one observation in the sum and not yet in its bucket,
// which Prometheus tolerates).
class LatencyHistogram {
 public:
  // Upper bounds in seconds, ascending: 50 µs to 10 min, covering a
  // predict, an fsync, a refit and a robot's whole stream.
  static constexpr std::array<double, 22> kBounds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,   0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,
      10.0,    30.0,   60.0,    120.0,  300.0, 600.0};

  void Observe(std::chrono::nanoseconds duration);

  // What a scrape writes: per bound, the observations at or below it
  // (cumulative); then the total count (the +Inf bucket) and their sum.
  struct Counts {
    std::array<std::uint64_t, kBounds.size()> cumulative{};
    std::uint64_t count = 0;
    double sum_seconds = 0.0;
  };
  Counts Read() const;

 private:
  // buckets_[i] counts durations in (kBounds[i-1], kBounds[i]]; the last
  // one those above every bound.
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> sum_nanoseconds_{0};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_TELEMETRY_LATENCY_HISTOGRAM_H_
