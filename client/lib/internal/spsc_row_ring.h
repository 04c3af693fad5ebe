#ifndef STREAMREG_CLIENT_LIB_INTERNAL_SPSC_ROW_RING_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_SPSC_ROW_RING_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>

namespace streamreg {

// A bounded queue of rows of doubles, each with a tag, from one producer
// thread to one consumer thread: lock-free and wait-free, and free of
// allocation and system calls once constructed (a row is copied into
// storage reserved at construction). It hands a control loop's data to a
// thread that may block on the network (RealtimeChannel). The producer owns
// the write index and the consumer the read index; each publishes its own
// with a release store and reads the other's with an acquire load, so a
// row's values are visible once its index is.
class SpscRowRing {
 public:
  // Holds at least `capacity` rows (a power of two) of `width` values.
  SpscRowRing(std::size_t capacity, std::size_t width)
      : mask_(std::bit_ceil(std::max<std::size_t>(capacity, 2)) - 1),
        width_(width),
        tags_(std::make_unique<std::uint64_t[]>(mask_ + 1)),
        values_(std::make_unique<double[]>((mask_ + 1) * width)) {}
  SpscRowRing(const SpscRowRing&) = delete;
  SpscRowRing& operator=(const SpscRowRing&) = delete;

  std::size_t width() const { return width_; }
  std::size_t capacity() const { return mask_ + 1; }

  // Producer: appends the concatenation of `parts` (whose sizes must sum
  // to width()) as one row tagged `tag`; false when the ring is full.
  bool Push(std::uint64_t tag,
            std::initializer_list<std::span<const double>> parts) {
    const std::size_t write = write_.load(std::memory_order_relaxed);
    if (write - read_seen_ > mask_) {
      read_seen_ = read_.load(std::memory_order_acquire);
      if (write - read_seen_ > mask_) return false;
    }
    const std::size_t slot = write & mask_;
    tags_[slot] = tag;
    double* row = &values_[slot * width_];
    for (const std::span<const double> part : parts) {
      row = std::copy(part.begin(), part.end(), row);
    }
    write_.store(write + 1, std::memory_order_release);
    return true;
  }

  // Consumer: the oldest row and its tag, or false when the ring is empty.
  // The row stays valid until Pop().
  bool Front(std::uint64_t* tag, std::span<const double>* row) {
    const std::size_t read = read_.load(std::memory_order_relaxed);
    if (read == write_seen_) {
      write_seen_ = write_.load(std::memory_order_acquire);
      if (read == write_seen_) return false;
    }
    const std::size_t slot = read & mask_;
    *tag = tags_[slot];
    *row = {&values_[slot * width_], width_};
    return true;
  }
  // Consumer: drops the row Front() returned.
  void Pop() {
    read_.store(read_.load(std::memory_order_relaxed) + 1,
                std::memory_order_release);
  }

 private:
  // Each index on its own cache line, next to the copy its owner keeps of
  // the other's (read again only when the copy says full or empty).
  static constexpr std::size_t kLine = 64;

  const std::size_t mask_;
  const std::size_t width_;
  const std::unique_ptr<std::uint64_t[]> tags_;
  const std::unique_ptr<double[]> values_;
  alignas(kLine) std::atomic<std::size_t> write_ = 0;
  std::size_t read_seen_ = 0;  // the producer's copy of read_
  alignas(kLine) std::atomic<std::size_t> read_ = 0;
  std::size_t write_seen_ = 0;  // the consumer's copy of write_
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_SPSC_ROW_RING_H_
