#ifndef STREAMREG_CORE_INDEX_PRUNING_MONITOR_H_
#define STREAMREG_CORE_INDEX_PRUNING_MONITOR_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace streamreg {

// Watches how much of a tree its searches touch and advises a linear scan
// when the tree prunes too little to pay for itself — on data of high
// intrinsic dimension (uniform in R^21, say) a search computes distances to
// nearly every node, and walking the tree costs several times a scan of the
// same points. Both ways give the same exact answers; only speed differs.
//
// The first search, and every kMeasureEvery-th search of a thread after it,
// walks the tree regardless and reports the fraction of nodes it computed
// distances to; an exponential average of those fractions decides the
// others. Measured walks are rare enough (< 1%) to stay out of a p99. Safe to
// share between threads (lost updates only blur the average); copying copies
// the average.
class PruningMonitor {
 public:
  // Walking the tree pays when it computes distances to at most this
  // fraction of the nodes: measured, a tree search costs 3-4 times a scan
  // per distance (scattered memory, bookkeeping).
  static constexpr double kScanAbove = 0.25;
  static constexpr std::uint32_t kMeasureEvery = 128;

  PruningMonitor() = default;
  PruningMonitor(const PruningMonitor& other) : average_(other.load()) {}
  PruningMonitor& operator=(const PruningMonitor& other) {
    average_.store(other.load(), std::memory_order_relaxed);
    return *this;
  }

  // Whether the next search should walk the tree; *measure says whether it
  // must then call Record.
  bool WalkTree(bool* measure) const {
    thread_local std::uint32_t tick = 0;
    const std::uint32_t average = load();
    *measure = average == kUnknown || (++tick % kMeasureEvery) == 0;
    return *measure || average <= kScanAbove * kOne;
  }

  // A measured search computed `distances` distances in a tree of `nodes`.
  void Record(std::size_t distances, std::size_t nodes) const {
    const double fraction =
        nodes == 0 ? 0.0 : static_cast<double>(distances) / nodes;
    const std::uint32_t observed =
        static_cast<std::uint32_t>(std::min(fraction, 1.0) * kOne);
    const std::uint32_t old = load();
    // The first observation, then weight 1/4 for each new one.
    average_.store(old == kUnknown ? observed : old - old / 4 + observed / 4,
                   std::memory_order_relaxed);
  }

  // The current average fraction, in [0, 1]; 0 before any measurement.
  double fraction() const {
    const std::uint32_t average = load();
    return average == kUnknown ? 0.0 : static_cast<double>(average) / kOne;
  }

 private:
  static constexpr std::uint32_t kOne = 1u << 20;
  static constexpr std::uint32_t kUnknown = ~0u;

  std::uint32_t load() const {
    return average_.load(std::memory_order_relaxed);
  }

  mutable std::atomic<std::uint32_t> average_{kUnknown};
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_PRUNING_MONITOR_H_
