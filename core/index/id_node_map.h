#ifndef STREAMREG_CORE_INDEX_ID_NODE_MAP_H_
#define STREAMREG_CORE_INDEX_ID_NODE_MAP_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "core/base/chunked_rows.h"

namespace streamreg {

// Which node of a CoverTree holds each point id. A model's ids are its slot
// numbers, dense from 0: those live in a flat array of 4-byte entries,
// chunked so that growing it never copies or rehashes anything (a hash
// table takes 17 bytes a slot at up to twice the slots). An id far beyond
// the count (more than twice it, plus a chunk) lives in a hash map instead,
// so arbitrary 64-bit ids cost no more than they would in a hash map.
//
// Not synchronized; only the sparse map ever rehashes, and SparseGrown /
// AdoptSparse let a caller do that on a copy (ConcurrentCoverTree).
class IdNodeMap {
 public:
  using Node = std::uint32_t;
  static constexpr Node kNone = std::numeric_limits<Node>::max();
  using SparseMap = absl::flat_hash_map<std::uint64_t, Node>;

  // The node holding `id`, or kNone.
  Node Find(std::uint64_t id) const {
    if (id < dense_.size()) {
      const Node entry = dense_[id];
      if (entry != 0) return entry - 1;
    }
    if (sparse_.empty()) return kNone;
    const auto it = sparse_.find(id);
    return it == sparse_.end() ? kNone : it->second;
  }
  bool Contains(std::uint64_t id) const { return Find(id) != kNone; }

  // Maps `id` (absent) to `node` (< kNone), or moves a present id.
  void Set(std::uint64_t id, Node node);
  // Removes `id`, which must be present.
  void Erase(std::uint64_t id);

  // Replaces every entry's node by remap(node).
  template <class Fn>
  void RemapNodes(Fn&& remap) {
    for (std::size_t id = 0; id < dense_.size(); ++id) {
      if (const Node entry = dense_[id]; entry != 0) {
        *dense_.WritableRow(id) = remap(entry - 1) + 1;
      }
    }
    for (auto& [id, node] : sparse_) node = remap(node);
  }

  std::size_t size() const { return size_; }
  std::size_t MemoryUsage() const;

  // Whether setting `id` would grow (rehash) the sparse map.
  bool WouldRehash(std::uint64_t id) const {
    return !GoesDense(id) && !sparse_.contains(id) &&
           sparse_.size() + 1 > sparse_.capacity() - sparse_.capacity() / 8;
  }
  // A copy of the sparse map with room for twice as many ids.
  SparseMap SparseGrown() const;
  // Takes `map` (from SparseGrown, with no write in between) as the sparse
  // map.
  void AdoptSparse(SparseMap& map) { sparse_.swap(map); }

 private:
  bool GoesDense(std::uint64_t id) const {
    return id < dense_.size() ||
           id < 2 * size_ + ChunkedRows<Node>::kRowsPerChunk;
  }

  // dense_[id] = node + 1, or 0 where no point has that id.
  ChunkedRows<Node> dense_{1};
  SparseMap sparse_;
  std::size_t size_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_ID_NODE_MAP_H_
