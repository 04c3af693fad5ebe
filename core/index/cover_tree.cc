#include "core/index/cover_tree.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/index/point_validation.h"

namespace streamreg {
namespace {

// Short names for the scale's two maps between levels and distances.
double Radius(int level) { return CoverScale::Radius(level); }
int LevelCovering(double distance) {
  return CoverScale::LevelCovering(distance);
}

// Seed of the insertion order of batch builds: fixed, so a build is
// reproducible.
constexpr std::uint64_t kBuildOrderSeed = 0x5eed'c0de'2006'0001;

}  // namespace

CoverTree::CoverTree(std::size_t dim) : dim_(dim), coordinates_(dim) {}

absl::StatusOr<CoverTree> CoverTree::Build(std::size_t dim,
                                           std::span<const double> coordinates,
                                           std::span<const std::uint64_t> ids,
                                           InsertionOrder insertion_order) {
  if (dim == 0) return absl::InvalidArgumentError("dim: must be at least 1");
  if (coordinates.size() != ids.size() * dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinates: ", coordinates.size(), " values for ",
                     ids.size(), " ids of dimension ", dim));
  }
  absl::flat_hash_set<std::uint64_t> seen;
  seen.reserve(ids.size());
  auto what = [&](std::size_t i) {
    return absl::StrCat("point ", i, " (id ", ids[i], ")");
  };
  for (std::size_t i = 0; i < ids.size(); ++i) {
    // The message is only made for a point that fails.
    const std::span<const double> point = coordinates.subspan(i * dim, dim);
    if (!ValidatePoint(point, dim, "").ok()) {
      return ValidatePoint(point, dim, what(i));
    }
    if (!seen.insert(ids[i]).second) {
      return absl::AlreadyExistsError(absl::StrCat(what(i), ": repeated id"));
    }
  }
  // Inserting in a random order makes the tree independent of how the input
  // happens to be sorted (e.g. a trajectory in time order); sorting by id
  // first makes the same points give the same tree in any input order.
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (insertion_order == InsertionOrder::kShuffled) {
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
    std::shuffle(order.begin(), order.end(), std::mt19937_64(kBuildOrderSeed));
  }
  CoverTree tree(dim);
  tree.nodes_.Reserve(ids.size());
  tree.coordinates_.Reserve(ids.size());
  tree.node_of_id_.reserve(ids.size());
  for (std::size_t i : order) {
    tree.InsertValidated(ids[i], coordinates.data() + i * dim);
  }
  tree.CompactLayout();
  return tree;
}

absl::Status CoverTree::Insert(std::uint64_t id,
                               std::span<const double> point) {
  if (absl::Status s =
          ValidatePoint(point, dim_, absl::StrCat("point id ", id));
      !s.ok()) {
    return s;
  }
  if (node_of_id_.contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("point id ", id, ": already stored"));
  }
  InsertValidated(id, point.data());
  return absl::OkStatus();
}

absl::Status CoverTree::Remove(std::uint64_t id) {
  const auto it = node_of_id_.find(id);
  if (it == node_of_id_.end()) {
    return absl::NotFoundError(absl::StrCat("point id ", id, ": not stored"));
  }
  const NodeIndex node = it->second;
  node_of_id_.erase(it);
  --size_;
  if (nodes_[node].id_count > 1) {
    RemoveId(node, id);
  } else if (nodes_[node].unindexed_at != kIndexed) {
    RemoveUnindexed(node);
  } else {
    RemoveNode(node);
  }
  return absl::OkStatus();
}

absl::Status CoverTree::Knn(std::span<const double> query, std::size_t k,
                            std::vector<Neighbor>* out) const {
  if (absl::Status s = ValidatePoint(query, dim_, "query"); !s.ok()) return s;
  if (k == 0) {
    out->clear();
    return absl::OkStatus();
  }
  // First with the radius recent queries needed (twice it), which prunes
  // hard from the root; if the k-th neighbour lies beyond, again without.
  if (const double cap = knn_radius_.Cap(k);
      cap < std::numeric_limits<double>::infinity()) {
    KnnRules capped(k, out, cap);
    Search(query.data(), capped);
    capped.Finish();
    if (capped.CapHeld(size_)) {
      if (!out->empty()) knn_radius_.Record(k, out->back().distance);
      return absl::OkStatus();
    }
  }
  KnnRules rules(k, out);
  Search(query.data(), rules);
  rules.Finish();
  if (!out->empty()) knn_radius_.Record(k, out->back().distance);
  return absl::OkStatus();
}

absl::Status CoverTree::Range(std::span<const double> query, double radius,
                              std::vector<Neighbor>* out) const {
  if (absl::Status s = RangeUnordered(query, radius, out); !s.ok()) return s;
  std::sort(out->begin(), out->end(), NeighborOrder());
  return absl::OkStatus();
}

absl::Status CoverTree::RangeUnordered(std::span<const double> query,
                                       double radius,
                                       std::vector<Neighbor>* out) const {
  if (absl::Status s = ValidatePoint(query, dim_, "query"); !s.ok()) return s;
  if (!(radius >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius: must be >= 0, got ", radius));
  }
  RangeRules rules(radius, out);
  Search(query.data(), rules);
  return absl::OkStatus();
}

std::span<const double> CoverTree::PointOf(std::uint64_t id) const {
  const auto it = node_of_id_.find(id);
  if (it == node_of_id_.end()) return {};
  return {Coordinates(it->second), dim_};
}

int CoverTree::root_level() const {
  return root_ == kNoNode ? kMinLevel : nodes_[root_].level;
}

std::size_t CoverTree::MemoryUsage() const {
  std::size_t bytes = sizeof(*this);
  bytes += nodes_.MemoryUsage() + coordinates_.MemoryUsage();
  for (std::size_t node = 0; node < nodes_.size(); ++node) {
    bytes += nodes_[node].children.capacity() * sizeof(NodeIndex);
  }
  bytes += (free_nodes_.capacity() + unindexed_.capacity()) * sizeof(NodeIndex);
  // Swiss tables: one control byte per slot plus the slot.
  bytes += node_of_id_.capacity() *
           (sizeof(std::pair<std::uint64_t, NodeIndex>) + 1);
  bytes += extra_ids_.capacity() *
           (sizeof(std::pair<NodeIndex, std::vector<std::uint64_t>>) + 1);
  for (const auto& [node, ids] : extra_ids_) {
    bytes += ids.capacity() * sizeof(std::uint64_t);
  }
  bytes += insert_stack_.capacity() * sizeof(SearchCandidate);
  return bytes;
}

CoverTree::IdMap CoverTree::PreparedIdMap() const {
  IdMap map;
  map.reserve(2 * std::max<std::size_t>(node_of_id_.size(), 16));
  map.insert(node_of_id_.begin(), node_of_id_.end());
  return map;
}

void CoverTree::CopyPoints(std::vector<std::uint64_t>* ids,
                           std::vector<double>* coordinates) const {
  ids->clear();
  coordinates->clear();
  ids->reserve(size_);
  coordinates->reserve(size_ * dim_);
  ForEachPoint([&](std::uint64_t id, std::span<const double> p) {
    ids->push_back(id);
    coordinates->insert(coordinates->end(), p.begin(), p.end());
  });
}

CoverTree CoverTree::Rebuilt() const {
  std::vector<std::uint64_t> ids;
  std::vector<double> coordinates;
  CopyPoints(&ids, &coordinates);
  // The points were validated when they came in; Build cannot fail.
  CoverTree tree = *Build(dim_, coordinates, ids);
  tree.strategy_ = strategy_;
  return tree;
}

std::vector<CoverTree::SearchCandidate>& CoverTree::ThreadSearchStack() {
  thread_local std::vector<SearchCandidate> stack;
  return stack;
}

bool CoverTree::SameLocation(const double* point, NodeIndex node) const {
  const double* q = Coordinates(node);
  for (std::size_t i = 0; i < dim_; ++i) {
    if (point[i] != q[i]) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
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

void CoverTree::InsertValidated(std::uint64_t id, const double* point) {
  ++size_;
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

void CoverTree::AddToTree(std::uint64_t id, const double* point,
                          ParentSearch how) {
  if (root_ == kNoNode) {
    root_ = NewNode(id, point, kMinLevel);
    return;
  }
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
  const int level = std::max(LevelCovering(distance) - 1, kMinLevel);
  Attach(NewNode(id, point, level), parent, distance);
}

// ---------------------------------------------------------------------------
// Unindexed points: where the tree cannot prune (PruningMonitor), finding a
// parent costs a scan of the tree, so insertions keep the point outside the
// tree instead — O(1) — and every search scans those points as well. They
// join the tree a few at a time whenever insertions walk the tree again.

void CoverTree::AddUnindexed(std::uint64_t id, const double* point) {
  const NodeIndex node = NewNode(id, point, kMinLevel);
  nodes_[node].unindexed_at = static_cast<std::uint32_t>(unindexed_.size());
  unindexed_.push_back(node);
}

void CoverTree::RemoveUnindexed(NodeIndex node) {
  const std::uint32_t at = nodes_[node].unindexed_at;
  unindexed_[at] = unindexed_.back();
  nodes_[unindexed_[at]].unindexed_at = at;
  unindexed_.pop_back();
  FreeNode(node);
}

// Moves up to `count` unindexed locations (with all their ids) into the tree.
void CoverTree::IndexUnindexed(std::size_t count) {
  std::vector<double> point(dim_);
  for (; count > 0 && !unindexed_.empty(); --count) {
    const NodeIndex node = unindexed_.back();
    std::copy_n(Coordinates(node), dim_, point.begin());
    std::vector<std::uint64_t> ids = {nodes_[node].id};
    if (const auto extra = extra_ids_.find(node); extra != extra_ids_.end()) {
      ids.insert(ids.end(), extra->second.begin(), extra->second.end());
      extra_ids_.erase(extra);
    }
    RemoveUnindexed(node);
    for (std::uint64_t id : ids) AddToTree(id, point.data(), {true, false});
  }
}

void CoverTree::RaiseRootToCover(double distance, int min_level) {
  Node& root = nodes_[root_];
  root.level = std::max({root.level, LevelCovering(distance), min_level});
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
  stack.assign(1, {DistanceTo(point, root_), root_, 0});
  while (!stack.empty()) {
    const SearchCandidate x = stack.back();
    stack.pop_back();
    const Node& n = nodes_[x.node];
    if (BeyondBound(x.distance - n.max_distance,
                    std::min(best_distance, Radius(n.level)),
                    x.distance + n.max_distance)) {
      continue;  // a nearer covering node was found meanwhile
    }
    if (x.distance <= Radius(n.level) &&
        CloserCandidate(x.distance, x.node, best_distance, best)) {
      best = x.node;
      best_distance = x.distance;
    }
    const std::size_t begin = stack.size();
    for (NodeIndex child : n.children) {
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
      const double bound = std::min(best_distance, Radius(c.level));
      const double lower = std::fabs(x.distance - c.parent_distance);
      if (BeyondBound(lower - c.max_distance, bound,
                      x.distance + c.parent_distance + c.max_distance)) {
        continue;
      }
      const double d = EuclideanDistanceUpTo(point, Coordinates(child), dim_,
                                             bound + c.max_distance);
      ++*distances;
      if (d == std::numeric_limits<double>::infinity()) continue;
      if (same_location != nullptr && d == 0.0 && SameLocation(point, child)) {
        *same_location = child;
        return child;
      }
      if (c.children.empty()) {  // a leaf: decide now, nothing to descend
        if (d <= Radius(c.level) &&
            CloserCandidate(d, child, best_distance, best)) {
          best = child;
          best_distance = d;
        }
      } else if (!BeyondBound(d - c.max_distance, bound, d + c.max_distance)) {
        stack.push_back({d, child, 0});
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
    const double radius = Radius(n.level);
    const double d = EuclideanDistanceUpTo(point, Coordinates(node), dim_,
                                           std::min(best_distance, radius));
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

CoverTree::NodeIndex CoverTree::NewNode(std::uint64_t id, const double* point,
                                        int level) {
  NodeIndex node;
  if (!free_nodes_.empty()) {
    node = free_nodes_.back();
    free_nodes_.pop_back();
    nodes_[node] = Node{};
    std::copy_n(point, dim_, coordinates_.Row(node));
  } else {
    node = static_cast<NodeIndex>(nodes_.size());
    nodes_.AppendRow();
    std::copy_n(point, dim_, coordinates_.AppendRow());
  }
  Node& n = nodes_[node];
  n.id = id;
  n.id_count = 1;
  n.level = level;
  node_of_id_[id] = node;
  return node;
}

void CoverTree::AddId(NodeIndex node, std::uint64_t id) {
  extra_ids_[node].push_back(id);
  ++nodes_[node].id_count;
  node_of_id_[id] = node;
}

void CoverTree::Attach(NodeIndex node, NodeIndex parent, double distance) {
  nodes_[node].parent = parent;
  nodes_[node].parent_distance = distance;
  InsertChild(parent, node);
  GrowMaxDistances(parent, node);
}

// Keeps the child list sorted by level, descending; equal levels in arrival
// order.
void CoverTree::InsertChild(NodeIndex parent, NodeIndex child) {
  std::vector<NodeIndex>& children = nodes_[parent].children;
  const int level = nodes_[child].level;
  const auto at =
      std::find_if(children.begin(), children.end(),
                   [&](NodeIndex c) { return nodes_[c].level < level; });
  children.insert(at, child);
}

// After `subtree` was hung below `from`: every ancestor's bound must cover
// the subtree's root plus the subtree's own extent.
void CoverTree::GrowMaxDistances(NodeIndex from, NodeIndex subtree) {
  const double* point = Coordinates(subtree);
  const double extent = nodes_[subtree].max_distance;
  for (NodeIndex a = from; a != kNoNode; a = nodes_[a].parent) {
    const double reach = DistanceTo(point, a) + extent;
    if (reach > nodes_[a].max_distance) nodes_[a].max_distance = reach;
  }
}

// ---------------------------------------------------------------------------
// Removal.

void CoverTree::RemoveId(NodeIndex node, std::uint64_t id) {
  Node& n = nodes_[node];
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
  std::vector<NodeIndex> orphans = std::move(nodes_[node].children);
  const NodeIndex parent = nodes_[node].parent;
  if (parent != kNoNode) {
    std::erase(nodes_[parent].children, node);
  }
  FreeNode(node);
  if (node == root_) {
    if (orphans.empty()) {
      root_ = kNoNode;
      return;
    }
    // The highest child becomes the root; it keeps its subtree.
    root_ = orphans.front();
    nodes_[root_].parent = kNoNode;
    nodes_[root_].parent_distance = 0.0;
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
  const double* point = Coordinates(orphan);
  const int level = nodes_[orphan].level;
  RaiseRootToCover(DistanceTo(point, root_), level + 1);
  double distance = 0.0;
  bool measure = false;
  const bool walk = WalkTree(insert_monitor_, &measure);
  const NodeIndex parent = NearestCoveringNode(
      point, level + 1, std::numeric_limits<double>::infinity(),
      {walk, measure}, &distance, nullptr);
  nodes_[orphan].level = std::max(level, LevelCovering(distance) - 1);
  Attach(orphan, parent, distance);
}

// After a subtree left `from`: the bounds of `from` and its ancestors may
// shrink to what their remaining children imply.
void CoverTree::TightenMaxDistances(NodeIndex from) {
  for (NodeIndex a = from; a != kNoNode; a = nodes_[a].parent) {
    double reach = 0.0;
    for (NodeIndex c : nodes_[a].children) {
      reach =
          std::max(reach, nodes_[c].parent_distance + nodes_[c].max_distance);
    }
    if (reach >= nodes_[a].max_distance) return;
    nodes_[a].max_distance = reach;
  }
}

// A freed slot keeps +infinity coordinates, which no bound admits, so scans
// need not know which slots are free.
void CoverTree::FreeNode(NodeIndex node) {
  nodes_[node] = Node{};
  std::fill_n(coordinates_.Row(node), dim_,
              std::numeric_limits<double>::infinity());
  free_nodes_.push_back(node);
}

// Renumbers the nodes so that every node's children are adjacent in memory
// and a subtree is close together: a search then reads coordinates mostly in
// order.
void CoverTree::CompactLayout() {
  std::vector<NodeIndex> order;  // order[new] = old
  order.reserve(node_count());
  if (root_ != kNoNode) {
    order.push_back(root_);
    std::vector<NodeIndex> pending{root_};
    while (!pending.empty()) {
      const NodeIndex node = pending.back();
      pending.pop_back();
      const std::vector<NodeIndex>& children = nodes_[node].children;
      order.insert(order.end(), children.begin(), children.end());
      pending.insert(pending.end(), children.rbegin(), children.rend());
    }
  }
  order.insert(order.end(), unindexed_.begin(), unindexed_.end());
  std::vector<NodeIndex> new_index(nodes_.size(), kNoNode);
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = static_cast<NodeIndex>(i);
  }
  ChunkedRows<Node> nodes(1);
  ChunkedRows<double> coordinates(dim_);
  nodes.Reserve(order.size());
  coordinates.Reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    Node& n = *nodes.AppendRow();
    n = std::move(nodes_[order[i]]);
    if (n.parent != kNoNode) n.parent = new_index[n.parent];
    for (NodeIndex& c : n.children) c = new_index[c];
    std::copy_n(Coordinates(order[i]), dim_, coordinates.AppendRow());
  }
  for (auto& [id, node] : node_of_id_) node = new_index[node];
  for (NodeIndex& node : unindexed_) node = new_index[node];
  absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>> extra_ids;
  for (auto& [node, ids] : extra_ids_) {
    extra_ids[new_index[node]] = std::move(ids);
  }
  nodes_ = std::move(nodes);
  coordinates_ = std::move(coordinates);
  extra_ids_ = std::move(extra_ids);
  free_nodes_.clear();
  if (root_ != kNoNode) root_ = 0;
}

// ---------------------------------------------------------------------------
// Invariant check (tests).

absl::Status CoverTree::CheckInvariants() const {
  auto fail = [](auto&&... parts) {
    return absl::InternalError(absl::StrCat(parts...));
  };
  // The ids of a node (tree or unindexed) map back to it.
  auto check_ids = [&](NodeIndex node) {
    const Node& n = nodes_[node];
    if (n.id_count == 0) return fail("node ", node, ": no ids");
    if (node_of_id_.find(n.id) == node_of_id_.end() ||
        node_of_id_.at(n.id) != node) {
      return fail("node ", node, ": id ", n.id, " not mapped to it");
    }
    if ((n.id_count > 1) != extra_ids_.contains(node) ||
        (n.id_count > 1 && extra_ids_.at(node).size() + 1 != n.id_count)) {
      return fail("node ", node, ": id_count ", n.id_count, " mismatch");
    }
    return absl::OkStatus();
  };
  std::size_t ids = 0;
  for (std::size_t at = 0; at < unindexed_.size(); ++at) {
    const NodeIndex node = unindexed_[at];
    const Node& n = nodes_[node];
    if (n.unindexed_at != at || n.parent != kNoNode || !n.children.empty() ||
        node == root_) {
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
    for (NodeIndex child : n.children) {
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
      const double d =
          EuclideanDistance(Coordinates(node), Coordinates(child), dim_);
      if (d != c.parent_distance)
        return fail("node ", child, ": stale parent distance");
      if (d > Radius(c.level + 1)) {
        return fail("covering: child ", child, " at level ", c.level, " is ", d,
                    " from its parent");
      }
      pending.push_back(child);
    }
    // The descendant bound.
    for (NodeIndex a = n.parent; a != kNoNode; a = nodes_[a].parent) {
      const double d =
          EuclideanDistance(Coordinates(node), Coordinates(a), dim_);
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
      const double d = EuclideanDistance(Coordinates(reachable[i]),
                                         Coordinates(reachable[j]), dim_);
      if (d == 0.0 && SameLocation(Coordinates(reachable[i]), reachable[j])) {
        return fail("nodes ", reachable[i], " and ", reachable[j],
                    " share a location");
      }
      if (level > kMinLevel && !(d > Radius(level))) {
        return fail("separation: nodes ", reachable[i], " and ", reachable[j],
                    " at level ", level, " are ", d, " apart");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
