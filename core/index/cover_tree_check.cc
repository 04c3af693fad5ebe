// CoverTree: the invariant check the tests run.
#include <cmath>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/index/cover_tree.h"

namespace streamreg {

absl::Status CoverTree::CheckInvariants() const {
  auto fail = [](auto&&... parts) {
    return absl::InternalError(absl::StrCat(parts...));
  };
  // The ids of a node (tree or unindexed) map back to it.
  auto check_ids = [&](NodeIndex node) {
    const Node& n = nodes_[node];
    if (n.id_count == 0) return fail("node ", node, ": no ids");
    if (node_of_id_.Find(n.id) != node) {
      return fail("node ", node, ": id ", n.id, " not mapped to it");
    }
    if ((n.id_count > 1) != extra_ids_.contains(node) ||
        (n.id_count > 1 && extra_ids_.at(node).size() + 1 != n.id_count)) {
      return fail("node ", node, ": id_count ", n.id_count, " mismatch");
    }
    return absl::OkStatus();
  };
  std::size_t ids = 0;
  std::vector<double> point(dim_);  // a node's coordinates
  for (std::size_t at = 0; at < unindexed_.size(); ++at) {
    const NodeIndex node = unindexed_[at];
    const Node& n = nodes_[node];
    if (n.unindexed_at != at || n.parent != kNoNode ||
        n.first_child != kNoNode || node == root_) {
      return fail("unindexed node ", node, ": inconsistent");
    }
    if (absl::Status s = check_ids(node); !s.ok()) return s;
    ids += n.id_count;
  }
  // Reachable nodes, with their ancestors' chains walked for the bounds.
  std::vector<NodeIndex> reachable;
  std::vector<NodeIndex> pending;
  if (root_ != kNoNode) {
    if (nodes_[root_].parent != kNoNode) return fail("root has a parent");
    pending.push_back(root_);
  }
  while (!pending.empty()) {
    const NodeIndex node = pending.back();
    pending.pop_back();
    reachable.push_back(node);
    const Node& n = nodes_[node];
    ids += n.id_count;
    if (n.unindexed_at != kIndexed) return fail("node ", node, ": in both");
    if (absl::Status s = check_ids(node); !s.ok()) return s;
    int previous_level = INT_MAX;
    std::size_t chain = 0;
    for (NodeIndex child = n.first_child; child != kNoNode;
         child = nodes_[child].next_sibling) {
      if (++chain > nodes_.size()) return fail("children of ", node, " loop");
      const Node& c = nodes_[child];
      if (c.parent != node) return fail("node ", child, ": wrong parent link");
      // Nesting: a child's top level is below its parent's, so the implicit
      // copies of the parent cover every level down to the child's.
      if (c.level >= n.level) {
        return fail("nesting: child ", child, " level ", c.level,
                    " not below parent level ", n.level);
      }
      if (c.level > previous_level)
        return fail("children of ", node, " unsorted");
      previous_level = c.level;
      const double d = DistanceTo(Coordinates(node, point.data()), child);
      if (d != c.parent_distance)
        return fail("node ", child, ": stale parent distance");
      if (d > CoverScale::Radius(c.level + 1)) {
        return fail("covering: child ", child, " at level ", c.level, " is ", d,
                    " from its parent");
      }
      pending.push_back(child);
    }
    // The descendant bound.
    for (NodeIndex a = n.parent; a != kNoNode; a = nodes_[a].parent) {
      const double d = DistanceTo(Coordinates(node, point.data()), a);
      if (BeyondBound(d, nodes_[a].max_distance, d)) {
        return fail("node ", a, ": max_distance ", nodes_[a].max_distance,
                    " < ", d, " to descendant ", node);
      }
    }
  }
  if (ids != size_ || node_of_id_.size() != size_) {
    return fail("size ", size_, " but ", ids, " ids in the tree and ",
                node_of_id_.size(), " mapped");
  }
  if (reachable.size() + unindexed_.size() != node_count()) {
    return fail(reachable.size(), " reachable and ", unindexed_.size(),
                " unindexed nodes of ", node_count());
  }
  // Separation: distinct nodes p, q are both in C_j for j <= min(levels).
  for (std::size_t i = 0; i < reachable.size(); ++i) {
    for (std::size_t j = i + 1; j < reachable.size(); ++j) {
      const Node& p = nodes_[reachable[i]];
      const Node& q = nodes_[reachable[j]];
      const int level = std::min(p.level, q.level);
      const double* first = Coordinates(reachable[i], point.data());
      const double d = DistanceTo(first, reachable[j]);
      if (d == 0.0 && SameLocation(first, reachable[j])) {
        return fail("nodes ", reachable[i], " and ", reachable[j],
                    " share a location");
      }
      if (level > kMinLevel && !(d > CoverScale::Radius(level))) {
        return fail("separation: nodes ", reachable[i], " and ", reachable[j],
                    " at level ", level, " are ", d, " apart");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
