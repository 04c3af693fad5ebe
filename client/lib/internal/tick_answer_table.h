#ifndef STREAMREG_CLIENT_LIB_INTERNAL_TICK_ANSWER_TABLE_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_TICK_ANSWER_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

namespace streamreg {

// What a prediction kept by tick was made from.
struct TickAnswerOrigin {
  // The samples the model had learned when it made the prediction.
  std::uint64_t learned = 0;
  // The loop's newest tick when the prediction was asked for.
  std::uint64_t asked_at_tick = 0;
};

// Predictions kept by tick, each its targets' values and interval, written
// by one thread and read by another without a lock, a wait or a system
// call: the slot of tick t is t mod slots, guarded by a sequence lock (the
// writer makes its count odd while it writes; a reader that saw it odd, or
// changed, reads again). For a control loop reading the prediction of its
// tick while a network thread stores the ones that arrive
// (RealtimeChannel). Every field is an atomic, so that a read racing a
// write is defined behaviour, and detected.
class TickAnswerTable {
 public:
  enum class Lookup {
    kFound,   // copied
    kAbsent,  // no prediction of the tick (never put, or overwritten)
    kBusy,    // being written at every try (rare: a write takes nanoseconds)
  };

  // At least `slots` slots (a power of two) of `targets` targets each.
  TickAnswerTable(std::size_t slots, std::size_t targets);
  TickAnswerTable(const TickAnswerTable&) = delete;
  TickAnswerTable& operator=(const TickAnswerTable&) = delete;

  std::size_t slots() const { return mask_ + 1; }
  std::size_t targets() const { return targets_; }

  // Writer (one thread): keeps tick `tick`'s prediction, each span of
  // targets() values, over whatever its slot held unless that is a later
  // tick's.
  void Put(std::uint64_t tick, const TickAnswerOrigin& origin,
           std::span<const double> y, std::span<const double> lower,
           std::span<const double> upper);

  // Reader (any one thread): copies tick `tick`'s prediction into `y`,
  // and into `lower` and `upper` unless empty (targets() values each).
  Lookup Get(std::uint64_t tick, TickAnswerOrigin* origin, std::span<double> y,
             std::span<double> lower, std::span<double> upper) const;

 private:
  struct Slot {
    std::atomic<std::uint64_t> sequence = 0;  // odd while written
    std::atomic<std::uint64_t> tick = 0;      // held, plus one (0: none)
    std::atomic<std::uint64_t> learned = 0;
    std::atomic<std::uint64_t> asked_at_tick = 0;
  };
  static constexpr int kTries = 4;

  // The slot's values: y, lower, upper.
  std::atomic<double>* ValuesOf(std::size_t slot) const {
    return &values_[slot * 3 * targets_];
  }

  const std::size_t mask_;
  const std::size_t targets_;
  const std::unique_ptr<Slot[]> slots_;
  const std::unique_ptr<std::atomic<double>[]> values_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_TICK_ANSWER_TABLE_H_
