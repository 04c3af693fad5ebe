#include "core/index/id_node_map.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace streamreg {

void IdNodeMap::Set(std::uint64_t id, Node node) {
  assert(node != kNone);
  if (id < dense_.size() && dense_[id] != 0) {
    *dense_.WritableRow(id) = node + 1;
    return;
  }
  if (const auto it = sparse_.find(id); it != sparse_.end()) {
    it->second = node;
    return;
  }
  ++size_;
  if (GoesDense(id)) {
    while (dense_.size() <= id) dense_.AppendRow();  // zero: no point
    *dense_.WritableRow(id) = node + 1;
  } else {
    sparse_.emplace(id, node);
  }
}

void IdNodeMap::Erase(std::uint64_t id) {
  if (id < dense_.size() && dense_[id] != 0) {
    *dense_.WritableRow(id) = 0;
  } else {
    const std::size_t erased = sparse_.erase(id);
    assert(erased == 1);
    (void)erased;
  }
  --size_;
}

std::size_t IdNodeMap::MemoryUsage() const {
  // Swiss tables: one control byte per slot plus the slot.
  return dense_.MemoryUsage() +
         sparse_.capacity() * (sizeof(std::pair<std::uint64_t, Node>) + 1);
}

IdNodeMap::SparseMap IdNodeMap::SparseGrown() const {
  SparseMap map;
  map.reserve(2 * std::max<std::size_t>(sparse_.size(), 16));
  map.insert(sparse_.begin(), sparse_.end());
  return map;
}

}  // namespace streamreg
