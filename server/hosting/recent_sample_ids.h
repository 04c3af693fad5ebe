#ifndef STREAMREG_SERVER_HOSTING_RECENT_SAMPLE_IDS_H_
#define STREAMREG_SERVER_HOSTING_RECENT_SAMPLE_IDS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace streamreg {

// The ids of the most recent samples a model learned, with the position
// each was learned at, so that a retried batch is recognised and not
// learned twice. Remembers at most `capacity` ids (0: none); the oldest is
// forgotten first. Not thread-safe: its HostedModel guards it.
class RecentSampleIds {
 public:
  explicit RecentSampleIds(std::size_t capacity) : capacity_(capacity) {}

  // The sequence number `id` was learned at, if it is remembered.
  std::optional<std::uint64_t> Find(std::uint64_t id) const;
  // Remembers that `id` was learned as sample number `sequence`.
  void Remember(std::uint64_t id, std::uint64_t sequence);

  // (id, sequence) of every remembered id, oldest first (for snapshots;
  // remembering them in this order rebuilds the same window).
  const std::deque<std::pair<std::uint64_t, std::uint64_t>>& entries() const {
    return order_;
  }
  std::size_t size() const { return order_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t capacity_;
  absl::flat_hash_map<std::uint64_t, std::uint64_t> sequence_of_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> order_;  // oldest first
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_RECENT_SAMPLE_IDS_H_
