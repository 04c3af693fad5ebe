#ifndef STREAMREG_CORE_MODEL_RECENT_SLOTS_H_
#define STREAMREG_CORE_MODEL_RECENT_SLOTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "core/base/byte_coding.h"
#include "core/index/id_range.h"

namespace streamreg {

// Which store slots hold one of the last `lag()` samples seen: the samples
// the honest (leave-recent-out) error leaves out of a prediction's
// neighbours (docs/estimators.md, "Honest error"). On a stream sampled
// fast, the last few samples lie next to the next one in input space (a
// robot's previous tick) and make every local method look as good as a
// lookup table; leaving them out asks how well the model predicts where it
// has not just been. The lag grows with the stream, one in
// `seen_per_lagged` of the samples seen (a tenth for the honest lag) up to
// `max_lag`: leaving out a fixed W of a young stream would predict from a
// small part of it (from 50 of a 250-row set at W = 200).
class RecentSlots {
 public:
  // A slot number that stands for "not stored" (a reservoir passing the
  // sample over).
  static constexpr std::uint64_t kNotStored = ~std::uint64_t{0};
  // The lag is one sample per this many seen, up to max_lag (the honest
  // lag's share).
  static constexpr std::uint64_t kSeenPerLaggedSample = 10;

  explicit RecentSlots(std::size_t max_lag,
                       std::uint64_t seen_per_lagged = kSeenPerLaggedSample)
      : max_lag_(max_lag),
        seen_per_lagged_(std::max<std::uint64_t>(seen_per_lagged, 1)) {}

  // Sample number `seen` (1-based) went into `slot` (or kNotStored); the
  // samples more than LagAfter(seen) before the next stop being recent.
  void Add(std::uint64_t slot, std::uint64_t seen);
  // Whether `slot` holds one of the last lag() samples.
  bool Contains(std::uint64_t slot) const {
    // An unbounded store's recent slots are all in the run: two
    // comparisons instead of a hash lookup per neighbour a search visits.
    if (run_last_ - run_first_ + 1 == count_.size()) {
      return slot >= run_first_ && slot <= run_last_;
    }
    return count_.contains(slot);
  }
  bool empty() const { return count_.empty(); }
  // The samples the next honest prediction leaves out, and at most.
  std::size_t lag() const { return order_.size(); }
  std::size_t max_lag() const { return max_lag_; }
  // Consecutive slots that are all recent: the latest run of samples stored
  // one slot after another (an unbounded store's whole lag, a window's
  // since it last wrapped), or none. A search skips an index's subtrees
  // of these slots wholesale (SplitKnnRules).
  IdRange run() const { return IdRange::Between(run_first_, run_last_); }
  // The lag once `seen` samples have been seen:
  // min(max_lag, seen / seen_per_lagged).
  std::size_t LagAfter(std::uint64_t seen) const;

  // The exact state, for snapshots; Load fails on a malformed encoding.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in);

 private:
  std::size_t max_lag_;
  std::uint64_t seen_per_lagged_;    // >= 1
  std::deque<std::uint64_t> order_;  // the last lag() slots, oldest first
  // How many entries of order_ name each slot (a reservoir may store two
  // recent samples in one slot, one after the other).
  absl::flat_hash_map<std::uint64_t, std::uint32_t> count_;
  // Extends the run with a slot just stored, or starts a new one.
  void ExtendRun(std::uint64_t slot);
  // A slot that stopped being recent leaves the run.
  void ShrinkRun(std::uint64_t slot);
  // Every slot in [run_first_, run_last_] is recent (empty: first > last).
  std::uint64_t run_first_ = 1;
  std::uint64_t run_last_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_RECENT_SLOTS_H_
