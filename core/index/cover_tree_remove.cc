// CoverTree: removing points and re-homing the subtrees they leave.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "core/index/cover_tree.h"

namespace streamreg {

void CoverTree::RemoveId(NodeIndex node, std::uint64_t id) {
  Node& n = nodes_.Mutable(node);
  auto extra = extra_ids_.find(node);
  std::vector<std::uint64_t>& ids = extra->second;
  if (n.id == id) {
    n.id = ids.back();
    ids.pop_back();
  } else {
    const auto it = std::find(ids.begin(), ids.end(), id);
    *it = ids.back();
    ids.pop_back();
  }
  if (--n.id_count == 1) extra_ids_.erase(extra);
}

void CoverTree::RemoveNode(NodeIndex node) {
  std::vector<NodeIndex> orphans;
  for (NodeIndex child = nodes_[node].first_child; child != kNoNode;) {
    orphans.push_back(child);
    child = std::exchange(nodes_.Mutable(child).next_sibling, kNoNode);
  }
  const NodeIndex parent = nodes_[node].parent;
  if (parent != kNoNode) {
    NodeIndex* link = &nodes_.Mutable(parent).first_child;
    while (*link != node) link = &nodes_.Mutable(*link).next_sibling;
    *link = nodes_[node].next_sibling;
  }
  FreeNode(node);
  if (node == root_) {
    if (orphans.empty()) {
      root_ = kNoNode;
      return;
    }
    // The highest child becomes the root; it keeps its subtree.
    root_ = orphans.front();
    nodes_.Mutable(root_).parent = kNoNode;
    nodes_.Mutable(root_).parent_distance = 0.0f;
    orphans.erase(orphans.begin());
  } else {
    TightenMaxDistances(parent);
  }
  for (NodeIndex orphan : orphans) Rehome(orphan);  // highest level first
}

// Finds a home for a detached subtree rooted at `orphan` (top level j). It
// was separated from every node at the levels <= j it occupied, and stays so;
// it must now hang below a node of level >= j + 1. As for insertion, the
// nearest node y* of level >= j + 1 that covers it at its own level is a
// valid parent, at level max(j, LevelCovering(d*) - 1): promotion above j is
// safe because no such node lies within 2^level. Orphans not yet re-homed
// have levels <= j and never conflict with a promotion; nor can a search
// (walk or scan) pick a node of a detached subtree as the parent, since all
// of those have levels <= j.
void CoverTree::Rehome(NodeIndex orphan) {
  std::vector<double> scratch(dim_);
  const double* point = Coordinates(orphan, scratch.data());
  const int level = nodes_[orphan].level;
  RaiseRootToCover(DistanceTo(point, root_), level + 1);
  double distance = 0.0;
  bool measure = false;
  const bool walk = WalkTree(insert_monitor_, &measure);
  const NodeIndex parent = NearestCoveringNode(
      point, level + 1, std::numeric_limits<double>::infinity(),
      {walk, measure}, &distance, nullptr);
  nodes_.Mutable(orphan).level =
      std::max(level, CoverScale::LevelCovering(distance) - 1);
  Attach(orphan, parent, distance);
}

// After a subtree left `from`: the bounds of `from` and its ancestors may
// shrink to what their remaining children imply.
void CoverTree::TightenMaxDistances(NodeIndex from) {
  for (NodeIndex a = from; a != kNoNode; a = nodes_[a].parent) {
    double reach = 0.0;
    for (NodeIndex c = nodes_[a].first_child; c != kNoNode;
         c = nodes_[c].next_sibling) {
      // The parent distance's float above it: a bound on the distance.
      const double distance = NodeDistance::NextUp(nodes_[c].parent_distance);
      reach = std::max(reach, distance + nodes_[c].max_distance);
    }
    const float bound = NodeDistance::Above(reach);
    if (bound >= nodes_[a].max_distance) return;
    nodes_.Mutable(a).max_distance = bound;
  }
}

}  // namespace streamreg
