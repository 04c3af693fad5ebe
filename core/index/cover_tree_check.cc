// CoverTree: the invariant check the tests run.
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/index/cover_tree.h"

namespace streamreg {
namespace {

template <class... Parts>
absl::Status Violation(const Parts&... parts) {
  return absl::InternalError(absl::StrCat(parts...));
}

}  // namespace

absl::Status CoverTree::CheckInvariants() const {
  std::size_t ids = 0;
  if (absl::Status s = CheckUnindexed(&ids); !s.ok()) return s;
  std::vector<NodeIndex> reachable;
  if (absl::Status s = CheckTreeFromRoot(&reachable, &ids); !s.ok()) return s;
  if (ids != size_ || node_of_id_.size() != size_) {
    return Violation("size ", size_, " but ", ids, " ids in the tree and ",
                     node_of_id_.size(), " mapped");
  }
  if (reachable.size() + unindexed_.size() != node_count()) {
    return Violation(reachable.size(), " reachable and ", unindexed_.size(),
                     " unindexed nodes of ", node_count());
  }
  if (absl::Status s = CheckIdRanges(); !s.ok()) return s;
  return CheckSeparation(reachable);
}

// Every id lies in the interval of its node and of each ancestor.
absl::Status CoverTree::CheckIdRanges() const {
  absl::Status status;
  ForEachStoredId([&](NodeIndex node, std::uint64_t id) {
    const IdRange own = IdRange::Of(id);
    for (NodeIndex a = node; a != kNoNode && status.ok();
         a = nodes_[a].parent) {
      const IdRange range = id_ranges_[a];
      if (range.empty() || own.lo < range.lo || own.hi > range.hi) {
        status = Violation("node ", a, ": ids [", range.lo, ", ", range.hi,
                           "] miss id ", id, " of node ", node);
      }
    }
  });
  return status;
}

absl::Status CoverTree::CheckIdsOf(NodeIndex node) const {
  const Node& n = nodes_[node];
  if (n.id_count == 0) return Violation("node ", node, ": no ids");
  if (node_of_id_.Find(n.id) != node) {
    return Violation("node ", node, ": id ", n.id, " not mapped to it");
  }
  if ((n.id_count > 1) != extra_ids_.contains(node) ||
      (n.id_count > 1 && extra_ids_.at(node).size() + 1 != n.id_count)) {
    return Violation("node ", node, ": id_count ", n.id_count, " mismatch");
  }
  return absl::OkStatus();
}

absl::Status CoverTree::CheckUnindexed(std::size_t* ids) const {
  for (std::size_t at = 0; at < unindexed_.size(); ++at) {
    const NodeIndex node = unindexed_[at];
    const Node& n = nodes_[node];
    if (n.unindexed_at != at || n.parent != kNoNode ||
        n.first_child != kNoNode || node == root_) {
      return Violation("unindexed node ", node, ": inconsistent");
    }
    if (absl::Status s = CheckIdsOf(node); !s.ok()) return s;
    *ids += n.id_count;
  }
  return absl::OkStatus();
}

absl::Status CoverTree::CheckTreeFromRoot(std::vector<NodeIndex>* reachable,
                                          std::size_t* ids) const {
  std::vector<double> point(dim_);  // a node's coordinates
  std::vector<NodeIndex> pending;
  if (root_ != kNoNode) {
    if (nodes_[root_].parent != kNoNode) return Violation("root has a parent");
    pending.push_back(root_);
  }
  while (!pending.empty()) {
    const NodeIndex node = pending.back();
    pending.pop_back();
    reachable->push_back(node);
    const Node& n = nodes_[node];
    *ids += n.id_count;
    if (n.unindexed_at != kIndexed) {
      return Violation("node ", node, ": in both");
    }
    if (absl::Status s = CheckIdsOf(node); !s.ok()) return s;
    int previous_level = INT_MAX;
    std::size_t chain = 0;
    for (NodeIndex child = n.first_child; child != kNoNode;
         child = nodes_[child].next_sibling) {
      if (++chain > nodes_.size()) {
        return Violation("children of ", node, " loop");
      }
      const Node& c = nodes_[child];
      if (c.parent != node) {
        return Violation("node ", child, ": wrong parent link");
      }
      // Nesting: a child's top level is below its parent's, so the implicit
      // copies of the parent cover every level down to the child's.
      if (c.level >= n.level) {
        return Violation("nesting: child ", child, " level ", c.level,
                         " not below parent level ", n.level);
      }
      if (c.level > previous_level) {
        return Violation("children of ", node, " unsorted");
      }
      previous_level = c.level;
      const double d = DistanceTo(Coordinates(node, point.data()), child);
      if (NodeDistance::Nearest(d) != c.parent_distance) {
        return Violation("node ", child, ": stale parent distance");
      }
      if (d > CoverScale::Radius(c.level + 1)) {
        return Violation("covering: child ", child, " at level ", c.level,
                         " is ", d, " from its parent");
      }
      pending.push_back(child);
    }
    // The descendant bound.
    for (NodeIndex a = n.parent; a != kNoNode; a = nodes_[a].parent) {
      const double d = DistanceTo(Coordinates(node, point.data()), a);
      if (BeyondBound(d, nodes_[a].max_distance, d)) {
        return Violation("node ", a, ": max_distance ", nodes_[a].max_distance,
                         " < ", d, " to descendant ", node);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CoverTree::CheckSeparation(
    const std::vector<NodeIndex>& reachable) const {
  // Distinct nodes p, q are both in C_j for j <= min(levels).
  std::vector<double> point(dim_);
  for (std::size_t i = 0; i < reachable.size(); ++i) {
    for (std::size_t j = i + 1; j < reachable.size(); ++j) {
      const Node& p = nodes_[reachable[i]];
      const Node& q = nodes_[reachable[j]];
      const int level = std::min(p.level, q.level);
      const double* first = Coordinates(reachable[i], point.data());
      const double d = DistanceTo(first, reachable[j]);
      if (d == 0.0 && SameLocation(first, reachable[j])) {
        return Violation("nodes ", reachable[i], " and ", reachable[j],
                         " share a location");
      }
      if (level > kMinLevel && !(d > CoverScale::Radius(level))) {
        return Violation("separation: nodes ", reachable[i], " and ",
                         reachable[j], " at level ", level, " are ", d,
                         " apart");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
