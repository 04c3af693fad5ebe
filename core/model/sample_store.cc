#include "core/model/sample_store.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/base/enum_names.h"

namespace streamreg {

absl::string_view CapacityPolicyName(CapacityPolicy policy) {
  switch (policy) {
    case CapacityPolicy::kUnbounded:
      return "unbounded";
    case CapacityPolicy::kWindow:
      return "window";
    case CapacityPolicy::kReservoir:
      return "reservoir";
  }
  return "unknown";
}

absl::StatusOr<CapacityPolicy> ParseCapacityPolicy(absl::string_view name) {
  return ParseEnumName("capacity", name,
                       {CapacityPolicy::kUnbounded, CapacityPolicy::kWindow,
                        CapacityPolicy::kReservoir},
                       &CapacityPolicyName);
}

SampleStore::SampleStore(std::size_t dim, std::size_t num_targets,
                         Capacity capacity, std::uint64_t seed)
    : capacity_(capacity), random_(seed), x_(dim), y_(num_targets), ids_(1) {}

std::uint64_t SampleStore::UniformBelow(std::uint64_t bound) {
  // Rejection keeps every value equally likely (and the sequence portable,
  // unlike std::uniform_int_distribution).
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                              std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t draw;
  do {
    draw = random_();
  } while (draw >= limit);
  return draw % bound;
}

SampleStore::Placement SampleStore::Place() {
  const std::uint64_t number = seen_++;
  const bool bounded = capacity_.policy != CapacityPolicy::kUnbounded;
  if (!bounded || number < capacity_.limit) {
    return Placement{true, static_cast<std::size_t>(number), false};
  }
  if (capacity_.policy == CapacityPolicy::kWindow) {
    return Placement{true, static_cast<std::size_t>(number % capacity_.limit),
                     true};
  }
  // Reservoir: keep sample number n (0-based) with probability limit/(n+1),
  // in a uniformly chosen slot.
  const std::uint64_t draw = UniformBelow(number + 1);
  if (draw >= capacity_.limit) return Placement{};
  return Placement{true, static_cast<std::size_t>(draw), true};
}

void SampleStore::Put(std::size_t slot, std::span<const double> x,
                      std::span<const double> y, std::uint64_t sample_id) {
  // A new slot is appended in place: its row, like every row before it,
  // never moves (indexes may keep pointers to x). A reused slot is written
  // copy-on-write.
  const bool append = slot == x_.size();
  std::copy(x.begin(), x.end(), append ? x_.AppendRow() : x_.WritableRow(slot));
  std::copy(y.begin(), y.end(), append ? y_.AppendRow() : y_.WritableRow(slot));
  *(append ? ids_.AppendRow() : ids_.WritableRow(slot)) = sample_id;
}

std::size_t SampleStore::MemoryUsage() const {
  return x_.MemoryUsage() + y_.MemoryUsage() + ids_.MemoryUsage();
}

}  // namespace streamreg

namespace streamreg {

void SampleStore::SaveCounters(ByteWriter& out) const {
  out.U64(seen_);
  // The standard defines the engine's textual state; it reads back exactly.
  std::ostringstream random_state;
  random_state << random_;
  out.String(random_state.str());
}

bool SampleStore::LoadCounters(ByteReader& in) {
  seen_ = in.U64();
  std::istringstream random_state(in.String());
  random_state >> random_;
  return in.ok() && !random_state.fail();
}

}  // namespace streamreg
