#include "core/base/pause_statistics.h"

#include <algorithm>

namespace streamreg {

void PauseStatistics::Record(Clock::duration pause) {
  const auto nanoseconds = static_cast<std::uint64_t>(std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(pause).count()));
  count_.fetch_add(1, std::memory_order_relaxed);
  total_nanoseconds_.fetch_add(nanoseconds, std::memory_order_relaxed);
  std::uint64_t longest = longest_nanoseconds_.load(std::memory_order_relaxed);
  while (nanoseconds > longest &&
         !longest_nanoseconds_.compare_exchange_weak(
             longest, nanoseconds, std::memory_order_relaxed)) {
  }
}

double PauseStatistics::total_seconds() const {
  return static_cast<double>(
             total_nanoseconds_.load(std::memory_order_relaxed)) *
         1e-9;
}

double PauseStatistics::longest_seconds() const {
  return static_cast<double>(
             longest_nanoseconds_.load(std::memory_order_relaxed)) *
         1e-9;
}

}  // namespace streamreg
