#include "client/lib/internal/tick_answer_table.h"

#include <algorithm>
#include <bit>

namespace streamreg {

TickAnswerTable::TickAnswerTable(std::size_t slots, std::size_t targets)
    : mask_(std::bit_ceil(std::max<std::size_t>(slots, 2)) - 1),
      targets_(targets),
      slots_(std::make_unique<Slot[]>(mask_ + 1)),
      values_(
          std::make_unique<std::atomic<double>[]>((mask_ + 1) * 3 * targets)) {}

void TickAnswerTable::Put(std::uint64_t tick, const TickAnswerOrigin& origin,
                          std::span<const double> y,
                          std::span<const double> lower,
                          std::span<const double> upper) {
  const std::size_t index = tick & mask_;
  Slot& slot = slots_[index];
  if (slot.tick.load(std::memory_order_relaxed) > tick + 1) return;
  const std::uint64_t sequence = slot.sequence.load(std::memory_order_relaxed);
  // Each field a release store after the odd count (no fence: sanitizers
  // do not model them): a reader that sees any of them sees the count odd
  // or changed when it reads the count again.
  slot.sequence.store(sequence + 1, std::memory_order_relaxed);
  slot.tick.store(tick + 1, std::memory_order_release);
  slot.learned.store(origin.learned, std::memory_order_release);
  slot.asked_at_tick.store(origin.asked_at_tick, std::memory_order_release);
  std::atomic<double>* values = ValuesOf(index);
  for (const std::span<const double> part : {y, lower, upper}) {
    for (std::size_t i = 0; i < targets_; ++i) {
      values[i].store(i < part.size() ? part[i] : 0.0,
                      std::memory_order_release);
    }
    values += targets_;
  }
  slot.sequence.store(sequence + 2, std::memory_order_release);
}

TickAnswerTable::Lookup TickAnswerTable::Get(std::uint64_t tick,
                                             TickAnswerOrigin* origin,
                                             std::span<double> y,
                                             std::span<double> lower,
                                             std::span<double> upper) const {
  const std::size_t index = tick & mask_;
  const Slot& slot = slots_[index];
  for (int attempt = 0; attempt < kTries; ++attempt) {
    const std::uint64_t before = slot.sequence.load(std::memory_order_acquire);
    if (before % 2 == 1) continue;
    // Acquire loads, so that the count is read again after them.
    const bool held = slot.tick.load(std::memory_order_acquire) == tick + 1;
    if (held) {
      origin->learned = slot.learned.load(std::memory_order_acquire);
      origin->asked_at_tick =
          slot.asked_at_tick.load(std::memory_order_acquire);
      const std::atomic<double>* values = ValuesOf(index);
      for (const std::span<double> part : {y, lower, upper}) {
        for (std::size_t i = 0; i < part.size() && i < targets_; ++i) {
          part[i] = values[i].load(std::memory_order_acquire);
        }
        values += targets_;
      }
    }
    if (slot.sequence.load(std::memory_order_relaxed) == before) {
      return held ? Lookup::kFound : Lookup::kAbsent;
    }
  }
  return Lookup::kBusy;
}

}  // namespace streamreg
