#ifndef STREAMREG_CORE_MODEL_SAMPLE_STORE_H_
#define STREAMREG_CORE_MODEL_SAMPLE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"
#include "core/base/chunked_rows.h"

namespace streamreg {

// Which samples a model keeps (docs/estimators.md, "Memory bound").
enum class CapacityPolicy {
  kUnbounded,  // every sample
  kWindow,     // the last `limit` samples (the oldest is evicted)
  kReservoir,  // a uniform random sample of `limit` of all seen (Vitter's R)
};

absl::string_view CapacityPolicyName(CapacityPolicy policy);
absl::StatusOr<CapacityPolicy> ParseCapacityPolicy(absl::string_view name);

struct Capacity {
  CapacityPolicy policy = CapacityPolicy::kUnbounded;
  std::size_t limit = 0;  // ignored when unbounded
};

// The samples a model keeps, in numbered slots: the raw inputs x (d), the
// targets y (m) and the caller's sample id. A slot number is also the
// sample's id in the model's indexes; an evicted sample's slot is reused by
// the sample that replaces it. Storage grows in chunks; a row only ever
// appended never moves or changes (an unbounded store's rows: indexes may
// point at them), while a reused slot's chunk is copied if a snapshot
// shares it.
//
// Where each new sample goes is decided by Place(), deterministically for a
// given seed: unbounded and window need no randomness; the reservoir draws
// from a 64-bit Mersenne twister with a portable bounded draw.
class SampleStore {
 public:
  SampleStore(std::size_t dim, std::size_t num_targets, Capacity capacity,
              std::uint64_t seed);

  struct Placement {
    bool keep = false;      // false: a reservoir passing the sample over
    std::size_t slot = 0;   // where it goes
    bool replaces = false;  // slot held a sample that is evicted
  };
  // Where sample number seen() goes; counts it as seen.
  Placement Place();
  void Put(std::size_t slot, std::span<const double> x,
           std::span<const double> y, std::uint64_t sample_id);

  std::size_t dim() const { return x_.width(); }
  std::size_t num_targets() const { return y_.width(); }
  const Capacity& capacity() const { return capacity_; }
  // Samples offered so far / stored now.
  std::uint64_t seen() const { return seen_; }
  std::size_t size() const { return x_.size(); }
  const double* x(std::size_t slot) const { return x_.Row(slot); }
  const double* y(std::size_t slot) const { return y_.Row(slot); }
  std::uint64_t sample_id(std::size_t slot) const { return ids_[slot]; }
  std::size_t MemoryUsage() const;

  // The stored rows as they are now, unchanged by later writes (shared
  // copy-on-write: cheap to take, a chunk is copied only when written).
  struct Rows {
    ChunkedRows<double>::Shared x;
    ChunkedRows<double>::Shared y;
    ChunkedRows<std::uint64_t>::Shared ids;
  };
  Rows Share() const { return Rows{x_.Share(), y_.Share(), ids_.Share()}; }
  // The count seen and the random state (not the rows), for snapshots.
  void SaveCounters(ByteWriter& out) const;
  bool LoadCounters(ByteReader& in);

 private:
  std::uint64_t UniformBelow(std::uint64_t bound);

  Capacity capacity_;
  std::uint64_t seen_ = 0;
  std::mt19937_64 random_;
  ChunkedRows<double> x_;
  ChunkedRows<double> y_;
  ChunkedRows<std::uint64_t> ids_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_SAMPLE_STORE_H_
