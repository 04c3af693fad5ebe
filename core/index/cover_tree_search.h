#ifndef STREAMREG_CORE_INDEX_COVER_TREE_SEARCH_H_
#define STREAMREG_CORE_INDEX_COVER_TREE_SEARCH_H_

// The traversal of a CoverTree for any search rules (core/index/
// search_rules.h): the tree walk, branch and bound, and the scan it falls
// back to where the tree prunes too little. Included by cover_tree.h.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/index/cover_tree.h"
#include "core/index/euclidean_distance.h"

namespace streamreg {

template <SearchRules Rules>
void CoverTree::Search(const double* query, Rules& rules) const {
  if (size_ == 0) return;
  bool measure = false;
  if (!WalkTree(search_monitor_, &measure)) {
    Scan(query, rules);
    return;
  }
  SearchState state{ThreadSearchStack(), 0};
  if (root_ != kNoNode) {
    const double distance = DistanceTo(query, root_);
    ++state.distances;
    VisitIds(root_, distance, rules);
    if (const NodeIndex first = nodes_[root_].first_child; first != kNoNode) {
      SearchBelow(root_, distance, first, query, rules, state);
    }
  }
  for (NodeIndex node : unindexed_) {
    const double d = DistanceTo(query, node);
    ++state.distances;
    if (d <= rules.Bound()) VisitIds(node, d, rules);
  }
  if (measure) search_monitor_.Record(state.distances, node_count());
}

// Every stored point, in node order (freed slots hold +infinity).
template <SearchRules Rules>
void CoverTree::Scan(const double* query, Rules& rules) const {
  for (NodeIndex node = 0; node < nodes_.size(); ++node) {
    // No early stop here: over all points its branch is a coin toss, and
    // measured it doubled the scan's time.
    const double d = DistanceTo(query, node);
    // A free slot, or beyond the bound: skip without reading the node.
    if (d == std::numeric_limits<double>::infinity() || d > rules.Bound()) {
      continue;
    }
    VisitIds(node, d, rules);
  }
}

template <SearchRules Rules>
void CoverTree::VisitIds(NodeIndex node, double distance, Rules& rules) const {
  const Node& n = nodes_[node];
  rules.Visit(n.id, distance);
  if (n.id_count > 1) {
    for (std::uint64_t id : extra_ids_.find(node)->second) {
      rules.Visit(id, distance);
    }
  }
}

// Depth first, nearest first, one level at a time. A node's children have
// many levels (the compressed tree leaves out a node's copies of itself at
// lower levels); taking all of them at once would compute distances to
// children near the node before the bound is tight. So a call takes only the
// children at the highest level from `first_child` on, and the node's own
// lower copy — the node with the remaining children — competes with them as
// one more candidate at the node's distance. Each child's own point goes to
// the rules as soon as its distance is known, so the bound tightens early.
template <SearchRules Rules>
void CoverTree::SearchBelow(NodeIndex node, double distance,
                            NodeIndex first_child, const double* query,
                            Rules& rules, SearchState& state) const {
  std::vector<SearchCandidate>& stack = state.stack;
  const int level = nodes_[first_child].level;
  const std::size_t begin = stack.size();
  if (points_.referencing()) {
    for (NodeIndex c = first_child; c != kNoNode && nodes_[c].level == level;
         c = nodes_[c].next_sibling) {
      points_.Prefetch(c);
    }
  }
  NodeIndex child = first_child;
  for (; child != kNoNode && nodes_[child].level == level;
       child = nodes_[child].next_sibling) {
    const Node& c = nodes_[child];
    const double bound = BoundBelow(rules, child);
    const double lower = std::fabs(distance - c.parent_distance);
    if (BeyondNodeBound(lower - c.max_distance, bound,
                        distance + c.parent_distance + c.max_distance)) {
      continue;
    }
    // Reading all coordinates is needed only if the child or its subtree can
    // still be within the bound. (Beyond it, `d` is only some value past it:
    // the rules reject the child's ids, and its subtree is pruned below.)
    const double d = points_.DistanceUpTo(query, child, bound + c.max_distance);
    ++state.distances;
    if (d == std::numeric_limits<double>::infinity()) continue;
    VisitIds(child, d, rules);
    if (c.first_child != kNoNode) {
      __builtin_prefetch(&nodes_[c.first_child]);  // likely read soon
      stack.push_back({d, child, c.first_child});
    }
  }
  if (child != kNoNode) stack.push_back({distance, node, child});
  const std::size_t end = stack.size();
  // Nearest first tightens a shrinking bound soonest; a fixed one (a range
  // search) prunes the same whatever the order.
  if constexpr (!kHasFixedBound<Rules>) {
    std::sort(stack.begin() + begin, stack.begin() + end,
              [](const SearchCandidate& a, const SearchCandidate& b) {
                return a.distance < b.distance;
              });
  }
  for (std::size_t j = begin; j < end; ++j) {
    const SearchCandidate candidate = stack[j];
    const double extent = Extent(candidate.node, candidate.first_child);
    if (BeyondBound(candidate.distance - extent,
                    BoundBelow(rules, candidate.node),
                    candidate.distance + extent)) {
      continue;
    }
    SearchBelow(candidate.node, candidate.distance, candidate.first_child,
                query, rules, state);
  }
  stack.resize(begin);
}

// In node order: rows are read front to back.
template <class Fn>
void CoverTree::ForEachStoredId(Fn&& fn) const {
  for (NodeIndex node = 0; node < nodes_.size(); ++node) {
    const Node& n = nodes_[node];
    if (n.id_count == 0) continue;  // a free slot
    fn(node, n.id);
    if (n.id_count > 1) {
      for (std::uint64_t id : extra_ids_.find(node)->second) fn(node, id);
    }
  }
}

template <class Fn>
void CoverTree::ForEachPoint(Fn&& fn) const {
  std::vector<double> scratch(dim_);
  ForEachStoredId([&](NodeIndex node, std::uint64_t id) {
    fn(id, std::span<const double>(Coordinates(node, scratch.data()), dim_));
  });
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_COVER_TREE_SEARCH_H_
