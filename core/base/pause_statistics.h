#ifndef STREAMREG_CORE_BASE_PAUSE_STATISTICS_H_
#define STREAMREG_CORE_BASE_PAUSE_STATISTICS_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace streamreg {

// How often one kind of pause happened and how long it lasted: the count,
// the sum and the longest, for the statistics and /metrics (e.g. how long
// predictions waited for an index take-over). Record may be called from any
// thread; the figures are read without a lock (each exact, the three not
// necessarily from the same instant).
class PauseStatistics {
 public:
  using Clock = std::chrono::steady_clock;

  void Record(Clock::duration pause);
  // Records the time since `start`.
  void RecordSince(Clock::time_point start) { Record(Clock::now() - start); }

  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double total_seconds() const;
  double longest_seconds() const;

 private:
  std::atomic<std::uint64_t> count_ = 0;
  std::atomic<std::uint64_t> total_nanoseconds_ = 0;
  std::atomic<std::uint64_t> longest_nanoseconds_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_PAUSE_STATISTICS_H_
