// CoverTree: inserting points, and the points kept outside the tree.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/index/cover_tree.h"

namespace streamreg {

// Insertion. A point p may take top level l under parent q iff
//   separation: every node y is more than 2^min(l, level(y)) from p (p joins
//               every C_j with j <= l, y every C_j with j <= level(y));
//   covering:   q has level >= l + 1 and lies within 2^(l+1) of p.
// Only nodes that "cover p at their own level" (d(p, y) <= 2^level(y)) can
// break separation, and each caps l below LevelCovering(d(p, y)). So let y* be
// the nearest such node at distance d*: l = LevelCovering(d*) - 1 keeps
// separation, and y* (level >= LevelCovering(d*) = l + 1, d* <= 2^(l+1)) is a
// valid parent. The root always covers p once its level is raised, so y*
// exists. This is the highest level BKL's Insert (Algorithm 2) could give p;
// we find y* by branch and bound instead of BKL's level-by-level cover sets,
// which in high dimension hold almost every node.

void CoverTree::InsertValidated(std::uint64_t id, Incoming point) {
  ++size_;
  neighborhoods_.Inserted(id, point.z);
  bool measure = false;
  const bool walk = WalkTree(insert_monitor_, &measure);
  if (!walk && (strategy_ == Strategy::kScan ||
                node_count() - unindexed_.size() >= kMinTreeToDefer)) {
    AddUnindexed(id, point);
    return;
  }
  AddToTree(id, point, {walk, measure});
  if (walk) IndexUnindexed(kIndexPerInsert);
}

void CoverTree::AddToTree(std::uint64_t id, Incoming incoming,
                          ParentSearch how) {
  if (root_ == kNoNode) {
    root_ = NewNode(id, incoming.row, kMinLevel);
    return;
  }
  const double* point = incoming.z;
  const double root_distance = DistanceTo(point, root_);
  if (root_distance == 0.0 && SameLocation(point, root_)) {
    AddId(root_, id);
    return;
  }
  // Floor-level nodes cannot have children, so the root stays above them.
  RaiseRootToCover(root_distance, kMinLevel + 1);
  // Look near first: within twice the parent distance recent insertions
  // found, the wide upper levels fall to the bound as in a range search. A
  // covering node found there is the nearest one overall.
  NodeIndex same_location = kNoNode;
  double distance = 0.0;
  NodeIndex parent =
      NearestCoveringNode(point, kMinLevel + 1, parent_radius_.Cap(1), how,
                          &distance, &same_location);
  if (parent == kNoNode) {
    parent = NearestCoveringNode(point, kMinLevel + 1,
                                 std::numeric_limits<double>::infinity(),
                                 {how.walk, false}, &distance, &same_location);
  }
  if (same_location != kNoNode) {
    AddId(same_location, id);
    return;
  }
  parent_radius_.Record(1, distance);
  const int level =
      std::max(CoverScale::LevelCovering(distance) - 1, kMinLevel);
  Attach(NewNode(id, incoming.row, level), parent, distance);
}

// ---------------------------------------------------------------------------
// Unindexed points: where the tree cannot prune (PruningMonitor), finding a
// parent costs a scan of the tree, so insertions keep the point outside the
// tree instead — O(1) — and every search scans those points as well. They
// join the tree a few at a time whenever insertions walk the tree again.

void CoverTree::AddUnindexed(std::uint64_t id, Incoming point) {
  const NodeIndex node = NewNode(id, point.row, kMinLevel);
  nodes_.Mutable(node).unindexed_at =
      static_cast<std::uint32_t>(unindexed_.size());
  unindexed_.push_back(node);
}

void CoverTree::RemoveUnindexed(NodeIndex node) {
  const std::uint32_t at = nodes_[node].unindexed_at;
  unindexed_[at] = unindexed_.back();
  nodes_.Mutable(unindexed_[at]).unindexed_at = at;
  unindexed_.pop_back();
  FreeNode(node);
}

// Moves up to `count` unindexed locations (with all their ids) into the tree.
void CoverTree::IndexUnindexed(std::size_t count) {
  std::vector<double> point(dim_);
  for (; count > 0 && !unindexed_.empty(); --count) {
    const NodeIndex node = unindexed_.back();
    // The coordinates, copied: the node is freed below. A referenced row
    // outlives it.
    const double* row = points_.Row(node);
    points_.ToCoordinates(row, point.data());
    const double* z = point.data();
    if (!referencing()) row = z;
    std::vector<std::uint64_t> ids = {nodes_[node].id};
    if (const auto extra = extra_ids_.find(node); extra != extra_ids_.end()) {
      ids.insert(ids.end(), extra->second.begin(), extra->second.end());
      extra_ids_.erase(extra);
    }
    RemoveUnindexed(node);
    for (std::uint64_t id : ids) AddToTree(id, {z, row}, {true, false});
  }
}

void CoverTree::RaiseRootToCover(double distance, int min_level) {
  Node& root = nodes_.Mutable(root_);
  root.level =
      std::max({root.level, CoverScale::LevelCovering(distance), min_level});
}

// The nearest node of level >= min_level within `within` of `point` that
// covers `point` at its own level, or kNoNode if none is that near; ties go
// to the lower node index, so the tree walk and the scan pick the same node.
// With `same_location`, stops at a node at exactly `point`.
CoverTree::NodeIndex CoverTree::NearestCoveringNode(
    const double* point, int min_level, double within, ParentSearch how,
    double* distance, NodeIndex* same_location) {
  if (!how.walk) {
    return NearestCoveringNodeByScan(point, min_level, within, distance,
                                     same_location);
  }
  std::size_t distances = 1;
  const NodeIndex found = NearestCoveringNodeInTree(
      point, min_level, within, distance, same_location, &distances);
  if (how.measure) {
    insert_monitor_.Record(distances, node_count() - unindexed_.size());
  }
  return found;
}

bool CoverTree::CloserCandidate(double distance, NodeIndex node,
                                double best_distance, NodeIndex best) {
  return distance < best_distance || (distance == best_distance && node < best);
}

// Branch and bound from the root, nearest child first. A subtree below child
// c holds only levels <= level(c), so it can hold a covering node only within
// 2^level(c) of p; with the best distance so far that bounds the search.
CoverTree::NodeIndex CoverTree::NearestCoveringNodeInTree(
    const double* point, int min_level, double within, double* distance,
    NodeIndex* same_location, std::size_t* distances) {
  NodeIndex best = kNoNode;
  double best_distance = within;
  std::vector<SearchCandidate>& stack = insert_stack_;
  stack.assign(1, {DistanceTo(point, root_), root_, nodes_[root_].first_child});
  while (!stack.empty()) {
    const SearchCandidate x = stack.back();
    stack.pop_back();
    const Node& n = nodes_[x.node];
    if (BeyondBound(x.distance - n.max_distance,
                    std::min(best_distance, CoverScale::Radius(n.level)),
                    x.distance + n.max_distance)) {
      continue;  // a nearer covering node was found meanwhile
    }
    if (x.distance <= CoverScale::Radius(n.level) &&
        CloserCandidate(x.distance, x.node, best_distance, best)) {
      best = x.node;
      best_distance = x.distance;
    }
    const std::size_t begin = stack.size();
    if (points_.referencing()) {
      for (NodeIndex c = n.first_child; c != kNoNode;
           c = nodes_[c].next_sibling) {
        points_.Prefetch(c);
      }
    }
    for (NodeIndex child = n.first_child; child != kNoNode;
         child = nodes_[child].next_sibling) {
      const Node& c = nodes_[child];
      if (c.level < min_level) {  // too low to be the parent
        // Only floor nodes (leaves) lie below an insertion's min_level; p
        // may still sit exactly on one.
        if (same_location != nullptr && SameLocation(point, child)) {
          *same_location = child;
          return child;
        }
        continue;
      }
      const double bound = std::min(best_distance, CoverScale::Radius(c.level));
      const double lower = std::fabs(x.distance - c.parent_distance);
      if (BeyondNodeBound(lower - c.max_distance, bound,
                          x.distance + c.parent_distance + c.max_distance)) {
        continue;
      }
      const double d =
          points_.DistanceUpTo(point, child, bound + c.max_distance);
      ++*distances;
      if (d == std::numeric_limits<double>::infinity()) continue;
      if (same_location != nullptr && d == 0.0 && SameLocation(point, child)) {
        *same_location = child;
        return child;
      }
      if (c.first_child == kNoNode) {  // a leaf: decide now, nothing below
        if (d <= CoverScale::Radius(c.level) &&
            CloserCandidate(d, child, best_distance, best)) {
          best = child;
          best_distance = d;
        }
      } else if (!BeyondBound(d - c.max_distance, bound, d + c.max_distance)) {
        stack.push_back({d, child, c.first_child});
      }
    }
    // Farthest first onto the stack, so the nearest child is explored next.
    std::sort(stack.begin() + begin, stack.end(),
              [](const SearchCandidate& a, const SearchCandidate& b) {
                return a.distance > b.distance;
              });
  }
  *distance = best_distance;
  return best;
}

CoverTree::NodeIndex CoverTree::NearestCoveringNodeByScan(
    const double* point, int min_level, double within, double* distance,
    NodeIndex* same_location) const {
  NodeIndex best = kNoNode;
  double best_distance = within;
  for (NodeIndex node = 0; node < nodes_.size(); ++node) {
    const Node& n = nodes_[node];
    if (n.id_count == 0) continue;  // a free slot
    if (n.level < min_level) {      // too low to be the parent
      if (same_location != nullptr && SameLocation(point, node)) {
        *same_location = node;
        return node;
      }
      continue;
    }
    const double radius = CoverScale::Radius(n.level);
    const double d =
        points_.DistanceUpTo(point, node, std::min(best_distance, radius));
    if (same_location != nullptr && d == 0.0 && SameLocation(point, node)) {
      *same_location = node;
      return node;
    }
    if (d <= radius && CloserCandidate(d, node, best_distance, best)) {
      best = node;
      best_distance = d;
    }
  }
  *distance = best_distance;
  return best;
}

CoverTree::NodeIndex CoverTree::NewNode(std::uint64_t id, const double* row,
                                        int level) {
  NodeIndex node;
  if (!free_nodes_.empty()) {
    node = free_nodes_.back();
    free_nodes_.pop_back();
    nodes_.Mutable(node) = Node{};
    points_.Set(node, row);
    id_ranges_[node] = IdRange::Of(id);
  } else {
    node = static_cast<NodeIndex>(nodes_.size());
    nodes_.Append();
    points_.Append(row);
    *id_ranges_.AppendRow() = IdRange::Of(id);
  }
  Node& n = nodes_.Mutable(node);
  n.id = id;
  n.id_count = 1;
  n.level = level;
  node_of_id_.Set(id, node);
  return node;
}

void CoverTree::AddId(NodeIndex node, std::uint64_t id) {
  extra_ids_[node].push_back(id);
  ++nodes_.Mutable(node).id_count;
  node_of_id_.Set(id, node);
  WidenIdRanges(node, IdRange::Of(id));
}

void CoverTree::Attach(NodeIndex node, NodeIndex parent, double distance) {
  Node& n = nodes_.Mutable(node);
  n.parent = parent;
  n.parent_distance = NodeDistance::Nearest(distance);
  InsertChild(parent, node);
  GrowMaxDistances(parent, node);
  WidenIdRanges(parent, id_ranges_[node]);
}

// Up from `from` while an interval grows (an ancestor's holds its
// descendant's, so one that already holds `ids` ends the walk).
void CoverTree::WidenIdRanges(NodeIndex from, IdRange ids) {
  for (NodeIndex a = from; a != kNoNode && id_ranges_[a].Widen(ids);
       a = nodes_[a].parent) {
  }
}

// Keeps the chain of children sorted by level, descending; equal levels in
// arrival order.
void CoverTree::InsertChild(NodeIndex parent, NodeIndex child) {
  const int level = nodes_[child].level;
  NodeIndex* link = &nodes_.Mutable(parent).first_child;
  while (*link != kNoNode && nodes_[*link].level >= level) {
    link = &nodes_.Mutable(*link).next_sibling;
  }
  nodes_.Mutable(child).next_sibling = *link;
  *link = child;
}

// After `subtree` was hung below `from`: every ancestor's bound must cover
// the subtree's root plus the subtree's own extent.
void CoverTree::GrowMaxDistances(NodeIndex from, NodeIndex subtree) {
  subtree_point_.resize(dim_);
  const double* point = Coordinates(subtree, subtree_point_.data());
  const double extent = nodes_[subtree].max_distance;
  for (NodeIndex a = from; a != kNoNode; a = nodes_[a].parent) {
    const double reach = DistanceTo(point, a) + extent;
    if (reach > nodes_[a].max_distance) {
      nodes_.Mutable(a).max_distance = NodeDistance::Above(reach);
    }
  }
}

}  // namespace streamreg
