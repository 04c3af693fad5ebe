#include "server/telemetry/latency_histogram.h"

#include <algorithm>

namespace streamreg {

void LatencyHistogram::Observe(std::chrono::nanoseconds duration) {
  const std::int64_t nanoseconds = std::max<std::int64_t>(0, duration.count());
  const double seconds = static_cast<double>(nanoseconds) * 1e-9;
  const std::size_t bucket =
      std::lower_bound(kBounds.begin(), kBounds.end(), seconds) -
      kBounds.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_nanoseconds_.fetch_add(static_cast<std::uint64_t>(nanoseconds),
                             std::memory_order_relaxed);
}

LatencyHistogram::Counts LatencyHistogram::Read() const {
  Counts counts;
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    counts.cumulative[i] = running;
  }
  counts.count = running + buckets_.back().load(std::memory_order_relaxed);
  counts.sum_seconds =
      static_cast<double>(sum_nanoseconds_.load(std::memory_order_relaxed)) *
      1e-9;
  return counts;
}

}  // namespace streamreg
