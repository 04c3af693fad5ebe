#ifndef STREAMREG_TESTS_SOAK_FAULT_CONTROL_H_
#define STREAMREG_TESTS_SOAK_FAULT_CONTROL_H_

#include <atomic>
#include <cstdint>

namespace streamreg {

// The switches of the fault shim (fault_shim.cc), shared between the soak
// and the server it preloads the shim into: a file both map, so the soak
// turns a fault on or off in the running server with one store, and reads
// back what the shim counted. Every field is a lock-free atomic (the same
// layout in both processes: x86-64 and AArch64 alike).
struct FaultControl {
  // Each fsync and fdatasync first sleeps this long (a slow disk).
  std::atomic<std::int64_t> fsync_delay_us{0};
  // Added to CLOCK_REALTIME (clock_gettime, gettimeofday, time): a wall
  // clock stepped by an administrator or NTP. The monotonic clock, which
  // cannot jump, is left alone.
  std::atomic<std::int64_t> realtime_offset_ns{0};
  // Bytes the server may still write under its data directory before
  // write() fails with ENOSPC (a short write first, as a filling disk
  // gives); -1: no limit.
  std::atomic<std::int64_t> free_bytes{-1};
  // Counted by the shim: fsyncs and fdatasyncs that returned, and writes
  // refused with ENOSPC.
  std::atomic<std::uint64_t> syncs{0};
  std::atomic<std::uint64_t> writes_refused{0};
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// The environment variables the shim reads when it loads: the control
// file's path, and the data directory whose files the free-space limit
// applies to.
inline constexpr char kFaultControlVariable[] = "STREAMREG_FAULT_CONTROL";
inline constexpr char kFaultDataDirVariable[] = "STREAMREG_FAULT_DATA_DIR";

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SOAK_FAULT_CONTROL_H_
