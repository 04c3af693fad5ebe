#ifndef STREAMREG_CORE_INDEX_KNN_RADIUS_ESTIMATE_H_
#define STREAMREG_CORE_INDEX_KNN_RADIUS_ESTIMATE_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace streamreg {

// Remembers how far the k-th neighbour of recent queries was, so that the
// next k-NN search can start with a radius cap (see KnnRules) instead of an
// infinite bound: a cover tree's top levels then fall to the bound at once,
// as in a range search. A cap that proves too small costs one more search
// without it; answers are exact either way.
//
// Keeps an exponential average of the k-th distance for the most recent k
// and suggests kSlack times it. Safe to share between threads (lost updates
// only blur the average); copying copies the estimate.
class KnnRadiusEstimate {
 public:
  static constexpr double kSlack = 2.0;

  KnnRadiusEstimate() = default;
  KnnRadiusEstimate(const KnnRadiusEstimate& other)
      : k_(other.k_.load(std::memory_order_relaxed)),
        average_(other.average_.load(std::memory_order_relaxed)) {}
  KnnRadiusEstimate& operator=(const KnnRadiusEstimate& other) {
    k_.store(other.k_.load(std::memory_order_relaxed),
             std::memory_order_relaxed);
    average_.store(other.average_.load(std::memory_order_relaxed),
                   std::memory_order_relaxed);
    return *this;
  }

  // The cap to try for a k-NN search; +infinity when there is no estimate.
  double Cap(std::size_t k) const {
    if (k_.load(std::memory_order_relaxed) != k) {
      return std::numeric_limits<double>::infinity();
    }
    return kSlack *
           std::bit_cast<double>(average_.load(std::memory_order_relaxed));
  }

  // A finished k-NN search found its k-th neighbour at `distance`.
  void Record(std::size_t k, double distance) const {
    if (!(distance < std::numeric_limits<double>::infinity())) return;
    double average = distance;
    if (k_.load(std::memory_order_relaxed) == k) {
      const double old =
          std::bit_cast<double>(average_.load(std::memory_order_relaxed));
      average = old + (distance - old) / 8.0;
    }
    average_.store(std::bit_cast<std::uint64_t>(average),
                   std::memory_order_relaxed);
    k_.store(k, std::memory_order_relaxed);
  }

 private:
  mutable std::atomic<std::size_t> k_{0};
  mutable std::atomic<std::uint64_t> average_{0};
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_KNN_RADIUS_ESTIMATE_H_
