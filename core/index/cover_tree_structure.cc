// CoverTree: its structure shared for saving, encoded, and read back into a
// tree without inserting a single point.
#include <algorithm>
#include <atomic>
#include <climits>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/index/cover_tree.h"
#include "core/index/point_validation.h"

namespace streamreg {
namespace {

// The error of a structure that does not fit: InvalidArgument, naming it.
template <class... Parts>
absl::Status StructureError(const Parts&... parts) {
  return absl::InvalidArgumentError(
      absl::StrCat("cover tree structure: ", parts...));
}

// Far above any level a finite distance can need (2^1024 overflows).
constexpr int kMaxLevel = 1100;

}  // namespace

CoverTree::Structure CoverTree::ShareStructure() const {
  Structure structure;
  structure.dim_ = dim_;
  structure.size_ = size_;
  structure.root_ = root_;
  structure.nodes_ = nodes_.Share();
  structure.extra_ids_.assign(extra_ids_.begin(), extra_ids_.end());
  std::sort(structure.extra_ids_.begin(), structure.extra_ids_.end());
  return structure;
}

void CoverTree::Structure::EncodeHeader(ByteWriter& out) const {
  out.U64(dim_);
  out.U64(size_);
  out.U64(nodes_.size);
  out.U32(root_);
  out.U64(extra_ids_.size());
  for (const auto& [node, ids] : extra_ids_) {
    out.U32(node);
    out.U64(ids.size());
    for (std::uint64_t id : ids) out.U64(id);
  }
}

void CoverTree::Structure::EncodeNodes(std::size_t first, std::size_t count,
                                       ByteWriter& out) const {
  out.U64(first);
  out.U32(static_cast<std::uint32_t>(count));
  for (std::size_t i = first; i < first + count; ++i) {
    EncodeNode(*nodes_.Row(i), out);
  }
}

void CoverTree::EncodeNode(const Node& node, ByteWriter& out) {
  out.U64(node.id);
  out.Double(node.parent_distance);
  out.Double(node.max_distance);
  out.U32(node.parent);
  out.U32(node.first_child);
  out.U32(node.next_sibling);
  out.U32(static_cast<std::uint32_t>(node.level));
  out.U32(node.id_count);
  out.U32(node.unindexed_at);
}

CoverTree::Node CoverTree::DecodeNode(ByteReader& in) {
  Node node;
  node.id = in.U64();
  // Written from floats; an encoding of doubles (before nodes kept floats)
  // is rounded as a node keeps them, its bound up.
  node.parent_distance = NodeDistance::Nearest(in.Double());
  node.max_distance = NodeDistance::Above(in.Double());
  node.parent = in.U32();
  node.first_child = in.U32();
  node.next_sibling = in.U32();
  node.level = static_cast<int>(in.U32());
  node.id_count = in.U32();
  node.unindexed_at = in.U32();
  return node;
}

bool CoverTree::DecodeExtraIds(
    ByteReader& in, std::size_t slots,
    absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>>* out) {
  const std::uint64_t locations = in.U64();
  // Each location with extra ids takes at least 20 bytes.
  if (!in.ok() || locations > in.remaining() / 20) return false;
  for (std::uint64_t i = 0; i < locations; ++i) {
    const NodeIndex node = in.U32();
    const std::uint64_t count = in.U64();
    if (!in.ok() || count > in.remaining() / 8 || node >= slots) return false;
    std::vector<std::uint64_t> ids(count);
    for (std::uint64_t& id : ids) id = in.U64();
    if (!out->emplace(node, std::move(ids)).second) return false;
  }
  return true;
}

std::uint64_t CoverTree::NodeArray::NewIdentity() {
  static std::atomic<std::uint64_t> next{1};  // 0 names no array
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::uint32_t CoverTree::NodeArray::CloseEpoch() {
  if (epoch_ == std::numeric_limits<std::uint32_t>::max()) {
    // A new number: no earlier mark applies. Slots stamped up to here look
    // changed after every new epoch (sent again, never missed).
    identity_ = NewIdentity();
    epoch_ = 0;
  }
  return epoch_++;
}

CoverTree::ChangeMark CoverTree::MarkChanges() {
  const std::uint32_t epoch = nodes_.CloseEpoch();
  return {.tree = nodes_.identity(),
          .epoch = epoch,
          .size = size_,
          .node_slots = nodes_.size()};
}

std::optional<CoverTree::Changes> CoverTree::ShareChangesSince(
    const ChangeMark& mark) const {
  if (mark.tree == 0 || mark.tree != nodes_.identity()) return std::nullopt;
  Changes changes;
  changes.now_ = ShareStructure();
  changes.stamps_ = nodes_.ShareStamps();
  changes.since_ = mark;
  return changes;
}

std::vector<std::uint32_t> CoverTree::Changes::ChangedNodes() const {
  std::vector<std::uint32_t> changed;
  for (std::size_t slot = 0; slot < now_.node_slots(); ++slot) {
    if (Changed(static_cast<std::uint32_t>(slot))) {
      changed.push_back(static_cast<std::uint32_t>(slot));
    }
  }
  return changed;
}

void CoverTree::Changes::EncodeHeader(std::span<const std::uint32_t> changed,
                                      ByteWriter& out) const {
  out.U64(now_.dim_);
  out.U64(now_.size_);
  out.U64(now_.node_slots());
  out.U32(now_.root_);
  out.U64(since_.size);
  out.U64(since_.node_slots);
  out.U64(changed.size());
  const auto changed_location = [&](const auto& location) {
    return Changed(location.first);
  };
  out.U64(std::count_if(now_.extra_ids_.begin(), now_.extra_ids_.end(),
                        changed_location));
  for (const auto& location : now_.extra_ids_) {
    if (!changed_location(location)) continue;
    out.U32(location.first);
    out.U64(location.second.size());
    for (std::uint64_t id : location.second) out.U64(id);
  }
}

void CoverTree::Changes::EncodeNodes(std::span<const std::uint32_t> changed,
                                     ByteWriter& out) const {
  out.U32(static_cast<std::uint32_t>(changed.size()));
  for (std::uint32_t slot : changed) {
    out.U32(slot);
    EncodeNode(*now_.nodes_.Row(slot), out);
  }
}

bool CoverTree::StructureReader::ReadHeader(ByteReader& in) {
  if (header_read_ || in.U64() != dim_) return Check(false);
  size_ = in.U64();
  slots_ = in.U64();
  root_ = in.U32();
  if (!in.ok() || slots_ >= kNoNode ||
      !DecodeExtraIds(in, slots_, &extra_ids_)) {
    return Check(false);
  }
  header_read_ = in.done();
  return Check(header_read_);
}

bool CoverTree::StructureReader::ReadNodes(ByteReader& in) {
  const std::uint64_t first = in.U64();
  const std::uint32_t count = in.U32();
  if (!header_read_ || changes_pending_ > 0 || !in.ok() ||
      first != nodes_.size() || count > slots_ - first ||
      in.remaining() != count * kEncodedNode) {
    return Check(false);
  }
  for (std::uint32_t i = 0; i < count; ++i) nodes_.Append() = DecodeNode(in);
  return Check(in.done());
}

bool CoverTree::StructureReader::ReadChangesHeader(ByteReader& in) {
  if (!complete() || in.U64() != dim_) return Check(false);
  const std::uint64_t size = in.U64();
  const std::uint64_t slots = in.U64();
  const NodeIndex root = in.U32();
  const std::uint64_t size_at_mark = in.U64();
  const std::uint64_t slots_at_mark = in.U64();
  const std::uint64_t changed = in.U64();
  // Every slot added since the mark is among the changed ones.
  if (!in.ok() || size_at_mark != size_ || slots_at_mark != slots_ ||
      slots < slots_ || slots >= kNoNode || changed > slots ||
      changed < slots - slots_ ||
      !DecodeExtraIds(in, slots, &changed_extra_ids_) || !in.done()) {
    return Check(false);
  }
  size_ = size;
  slots_ = slots;
  root_ = root;
  changes_pending_ = changed;
  next_changed_ = 0;
  return Check(changes_pending_ > 0 || changed_extra_ids_.empty());
}

bool CoverTree::StructureReader::ReadChangedNodes(ByteReader& in) {
  return Check(!spoilt_ && ApplyChangedNodes(in));
}

bool CoverTree::StructureReader::ApplyChangedNodes(ByteReader& in) {
  const std::uint32_t count = in.U32();
  if (!in.ok() || count > changes_pending_ ||
      in.remaining() != count * (sizeof(std::uint32_t) + kEncodedNode)) {
    return false;
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t slot = in.U32();
    // In order; an added slot right after the last.
    if (slot < next_changed_ || slot > nodes_.size() || slot >= slots_) {
      return false;
    }
    const Node node = DecodeNode(in);
    (slot == nodes_.size() ? nodes_.Append() : nodes_.Mutable(slot)) = node;
    extra_ids_.erase(slot);
    if (auto extra = changed_extra_ids_.find(slot);
        extra != changed_extra_ids_.end()) {
      extra_ids_.emplace(slot, std::move(extra->second));
      changed_extra_ids_.erase(extra);
    }
    next_changed_ = slot + 1;
  }
  changes_pending_ -= count;
  // Done: every added slot read, every listed location a changed node's.
  return in.done() && (changes_pending_ > 0 ||
                       (nodes_.size() == slots_ && changed_extra_ids_.empty()));
}

absl::StatusOr<CoverTree> CoverTree::StructureReader::Finish(
    const RowOf& row, std::optional<DiagonalMap> referencing) && {
  if (spoilt_) {
    return absl::InvalidArgumentError(
        "cover tree structure: a record of it was refused as malformed");
  }
  if (!complete()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cover tree structure: ", nodes_.size(), " of ", slots_, " nodes"));
  }
  if (referencing.has_value() && referencing->dim() != dim_) {
    return absl::InvalidArgumentError(
        absl::StrCat("cover tree structure: dimension ", dim_, ", map ",
                     referencing->dim()));
  }
  CoverTree tree = referencing.has_value() ? CoverTree(*std::move(referencing))
                                           : CoverTree(dim_);
  tree.size_ = size_;
  tree.root_ = root_;
  tree.nodes_ = std::move(nodes_);
  tree.extra_ids_ = std::move(extra_ids_);
  if (absl::Status status = CheckAndIndex(tree, row); !status.ok()) {
    return status;
  }
  tree.RecomputeIdRanges();
  return tree;
}

// Checks what searches rely on and fills the tree's derived tables (id map,
// unindexed and free lists) as it goes. O(n d): no pairwise checks.
absl::Status CoverTree::StructureReader::CheckAndIndex(CoverTree& tree,
                                                       const RowOf& row) {
  std::size_t unindexed = 0;
  if (absl::Status status = CheckNodes(tree, row, &unindexed); !status.ok()) {
    return status;
  }
  if (absl::Status status = IndexUnindexed(tree, unindexed); !status.ok()) {
    return status;
  }
  std::size_t reached = 0;
  if (absl::Status status = CheckFromTheRoot(tree, &reached); !status.ok()) {
    return status;
  }
  const std::size_t slots = tree.nodes_.size();
  if (reached + unindexed + tree.free_nodes_.size() != slots) {
    return StructureError(reached, " nodes reached, ", unindexed,
                          " unindexed and ", tree.free_nodes_.size(),
                          " free of ", slots);
  }
  return absl::OkStatus();
}

absl::Status CoverTree::StructureReader::CheckNodes(CoverTree& tree,
                                                    const RowOf& row,
                                                    std::size_t* unindexed) {
  const std::size_t slots = tree.nodes_.size();
  auto valid_link = [&](NodeIndex link) {
    return link == kNoNode || link < slots;
  };
  std::vector<double> coordinates(tree.dim_);
  tree.points_.Reserve(slots);
  for (NodeIndex node = 0; node < slots; ++node) {
    const Node& n = tree.nodes_[node];
    if (!valid_link(n.parent) || !valid_link(n.first_child) ||
        !valid_link(n.next_sibling) || n.level < kMinLevel ||
        n.level > kMaxLevel || !(n.max_distance >= 0.0) ||
        !(n.parent_distance >= 0.0)) {
      return StructureError("node ", node, ": out of range");
    }
    if (n.id_count == 0) {
      if (n.parent != kNoNode || n.first_child != kNoNode ||
          n.next_sibling != kNoNode || n.unindexed_at != kIndexed ||
          node == tree.root_) {
        return StructureError("free node ", node, ": linked");
      }
      tree.points_.AppendFree();
      tree.free_nodes_.push_back(node);
      continue;
    }
    const double* own = row(n.id);
    if (own == nullptr) {
      return StructureError("node ", node, ": id ", n.id, " unknown");
    }
    tree.points_.Append(own);
    if (!ValidatePoint({tree.Coordinates(node, coordinates.data()), tree.dim_},
                       tree.dim_, "")
             .ok()) {
      return StructureError("node ", node, ": id ", n.id,
                            " has no valid point");
    }
    if (absl::Status status = CheckNodeIds(tree, node, row); !status.ok()) {
      return status;
    }
    if (n.unindexed_at != kIndexed) ++*unindexed;
  }
  for (const auto& [node, ids] : tree.extra_ids_) {
    if (tree.nodes_[node].id_count != ids.size() + 1) {
      return StructureError("extra ids of node ", node, " without the node");
    }
  }
  if (tree.node_of_id_.size() != tree.size_) {
    return StructureError(tree.node_of_id_.size(), " ids for size ",
                          tree.size_);
  }
  return absl::OkStatus();
}

// A node's ids: its own, then its extras, each at one node only, the
// extras' points at the node's location.
absl::Status CoverTree::StructureReader::CheckNodeIds(CoverTree& tree,
                                                      NodeIndex node,
                                                      const RowOf& row) {
  const Node& n = tree.nodes_[node];
  const auto extra = tree.extra_ids_.find(node);
  const std::size_t extras =
      extra == tree.extra_ids_.end() ? 0 : extra->second.size();
  if (n.id_count != extras + 1 || (n.id_count > 1) != (extras > 0)) {
    return StructureError("node ", node, ": ", n.id_count, " ids but ", extras,
                          " extra");
  }
  if (tree.node_of_id_.Contains(n.id)) {
    return StructureError("id ", n.id, " at two nodes");
  }
  tree.node_of_id_.Set(n.id, node);
  if (extras == 0) return absl::OkStatus();
  std::vector<double> same(tree.dim_);
  for (std::uint64_t id : extra->second) {
    if (tree.node_of_id_.Contains(id)) {
      return StructureError("id ", id, " at two nodes");
    }
    tree.node_of_id_.Set(id, node);
    const double* other = row(id);
    if (other == nullptr) return StructureError("id ", id, " unknown");
    tree.points_.ToCoordinates(other, same.data());
    if (!tree.SameLocation(same.data(), node)) {
      return StructureError("id ", id, " is not at node ", node);
    }
  }
  return absl::OkStatus();
}

absl::Status CoverTree::StructureReader::IndexUnindexed(CoverTree& tree,
                                                        std::size_t unindexed) {
  tree.unindexed_.assign(unindexed, kNoNode);
  for (NodeIndex node = 0; node < tree.nodes_.size(); ++node) {
    const Node& n = tree.nodes_[node];
    if (n.id_count == 0 || n.unindexed_at == kIndexed) continue;
    if (n.unindexed_at >= unindexed ||
        tree.unindexed_[n.unindexed_at] != kNoNode || n.parent != kNoNode ||
        n.first_child != kNoNode || node == tree.root_) {
      return StructureError("unindexed node ", node, ": inconsistent");
    }
    tree.unindexed_[n.unindexed_at] = node;
  }
  return absl::OkStatus();
}

// Every indexed node reached once, below a parent of a higher level,
// children sorted by level, parent distances exact.
absl::Status CoverTree::StructureReader::CheckFromTheRoot(
    const CoverTree& tree, std::size_t* reached) {
  if (tree.root_ == kNoNode) return absl::OkStatus();
  const std::size_t slots = tree.nodes_.size();
  if (tree.root_ >= slots) {
    return StructureError("root ", tree.root_, ": inconsistent");
  }
  const Node& root = tree.nodes_[tree.root_];
  if (root.id_count == 0 || root.parent != kNoNode ||
      root.unindexed_at != kIndexed || root.parent_distance != 0.0) {
    return StructureError("root ", tree.root_, ": inconsistent");
  }
  std::vector<double> coordinates(tree.dim_);
  std::vector<NodeIndex> pending{tree.root_};
  while (!pending.empty()) {
    const NodeIndex node = pending.back();
    pending.pop_back();
    if (++*reached > slots) return StructureError("a node is reached twice");
    const Node& n = tree.nodes_[node];
    int previous_level = INT_MAX;
    for (NodeIndex child = n.first_child; child != kNoNode;
         child = tree.nodes_[child].next_sibling) {
      const Node& c = tree.nodes_[child];
      if (c.id_count == 0 || c.parent != node || c.level >= n.level ||
          c.level > previous_level || c.unindexed_at != kIndexed) {
        return StructureError("node ", child, ": inconsistent below ", node);
      }
      if (NodeDistance::Nearest(tree.DistanceTo(
              tree.Coordinates(node, coordinates.data()), child)) !=
          c.parent_distance) {
        return StructureError("node ", child,
                              ": its parent distance does not match the "
                              "points");
      }
      previous_level = c.level;
      pending.push_back(child);
      if (pending.size() > slots) {
        return StructureError("children of ", node, " loop");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
