#include "core/cover_tree.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/point_validation.h"

namespace streamreg {
namespace {

double Pow2(int level) { return std::ldexp(1.0, level); }

// The smallest level j with distance <= 2^j.
int LevelCovering(double distance) {
  if (distance <= 0.0) return CoverTree::kMinLevel;
  int exponent = 0;
  const double mantissa = std::frexp(distance, &exponent);  // in [0.5, 1)
  const int level = mantissa == 0.5 ? exponent - 1 : exponent;
  return std::max(level, CoverTree::kMinLevel);
}

// Seed of the insertion order of batch builds: fixed, so a build is
// reproducible.
constexpr std::uint64_t kBuildOrderSeed = 0x5eed'c0de'2006'0001;

}  // namespace

CoverTree::CoverTree(std::size_t dim) : dim_(dim) {}

absl::StatusOr<CoverTree> CoverTree::Build(std::size_t dim,
                                           std::span<const double> coordinates,
                                           std::span<const std::uint64_t> ids) {
  if (dim == 0) return absl::InvalidArgumentError("dim: must be at least 1");
  if (coordinates.size() != ids.size() * dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinates: ", coordinates.size(), " values for ",
                     ids.size(), " ids of dimension ", dim));
  }
  absl::flat_hash_set<std::uint64_t> seen;
  seen.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string what = absl::StrCat("point ", i, " (id ", ids[i], ")");
    if (absl::Status s =
            ValidatePoint(coordinates.subspan(i * dim, dim), dim, what);
        !s.ok()) {
      return s;
    }
    if (!seen.insert(ids[i]).second) {
      return absl::AlreadyExistsError(absl::StrCat(what, ": repeated id"));
    }
  }
  // Inserting in a random order makes the tree independent of how the input
  // happens to be sorted (e.g. a trajectory in time order).
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(kBuildOrderSeed));
  CoverTree tree(dim);
  tree.nodes_.reserve(ids.size());
  tree.coordinates_.reserve(ids.size() * dim);
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
  } else {
    RemoveNode(node);
  }
  return absl::OkStatus();
}

absl::Status CoverTree::Knn(std::span<const double> query, std::size_t k,
                            std::vector<Neighbor>* out) const {
  if (absl::Status s = ValidatePoint(query, dim_, "query"); !s.ok()) return s;
  KnnRules rules(k, out);
  if (k > 0) Search(query.data(), rules);
  rules.Finish();
  return absl::OkStatus();
}

absl::Status CoverTree::Range(std::span<const double> query, double radius,
                              std::vector<Neighbor>* out) const {
  if (absl::Status s = ValidatePoint(query, dim_, "query"); !s.ok()) return s;
  if (!(radius >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius: must be >= 0, got ", radius));
  }
  RangeRules rules(radius, out);
  Search(query.data(), rules);
  rules.Finish();
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
  bytes += nodes_.capacity() * sizeof(Node);
  for (const Node& n : nodes_)
    bytes += n.children.capacity() * sizeof(NodeIndex);
  bytes += coordinates_.capacity() * sizeof(double);
  bytes += free_nodes_.capacity() * sizeof(NodeIndex);
  // Swiss tables: one control byte per slot plus the slot.
  bytes += node_of_id_.capacity() *
           (sizeof(std::pair<std::uint64_t, NodeIndex>) + 1);
  bytes += extra_ids_.capacity() *
           (sizeof(std::pair<NodeIndex, std::vector<std::uint64_t>>) + 1);
  for (const auto& [node, ids] : extra_ids_) {
    bytes += ids.capacity() * sizeof(std::uint64_t);
  }
  bytes += (cover_.capacity() + next_cover_.capacity()) * sizeof(CoverEntry);
  bytes += level_mins_.capacity() * sizeof(LevelMin);
  return bytes;
}

CoverTree CoverTree::Rebuilt() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(size_);
  for (const auto& [id, node] : node_of_id_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // hash order is not reproducible
  std::vector<double> coordinates;
  coordinates.reserve(ids.size() * dim_);
  for (std::uint64_t id : ids) {
    const double* p = Coordinates(node_of_id_.at(id));
    coordinates.insert(coordinates.end(), p, p + dim_);
  }
  // The points were validated when they came in; Build cannot fail.
  return *Build(dim_, coordinates, ids);
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
// Insertion: BKL Algorithm 2, iteratively. cover_ holds Q_j, the nodes of C_j
// within 2^(j+1) of the point. At level j the children with top level j-1
// join; if the point is then more than 2^j from all of them it cannot go
// lower, and Unwind() places it at the highest failed level whose cover set
// has a member within 2^level. Levels where no child joins are skipped in one
// step: the cover set only shrinks there and its minimum is unchanged.

void CoverTree::InsertValidated(std::uint64_t id, const double* point) {
  ++size_;
  if (root_ == kNoNode) {
    root_ = NewNode(id, point, kMinLevel);
    return;
  }
  const double root_distance = DistanceTo(point, root_);
  if (root_distance == 0.0 && SameLocation(point, root_)) {
    AddId(root_, id);
    return;
  }
  // Only the root lives above its level, so raising it breaks nothing. It
  // must cover the point and sit above the floor level to have children.
  Node& root = nodes_[root_];
  root.level =
      std::max({root.level, LevelCovering(root_distance), kMinLevel + 1});

  cover_.assign(1, CoverEntry{root_, root_distance, 0});
  level_mins_.clear();
  int level = root.level;
  while (true) {
    // The nearest member, and the highest level of a child not yet taken in.
    int next_child_level = INT_MIN;
    NodeIndex nearest = kNoNode;
    double nearest_distance = std::numeric_limits<double>::infinity();
    for (const CoverEntry& e : cover_) {
      const Node& n = nodes_[e.node];
      if (e.next_child < n.children.size()) {
        next_child_level =
            std::max(next_child_level, nodes_[n.children[e.next_child]].level);
      }
      if (e.distance < nearest_distance) {
        nearest = e.node;
        nearest_distance = e.distance;
      }
    }
    if (next_child_level < level - 1) {
      // No child joins at levels `level` down to next_child_level + 2: there
      // the cover set keeps its nearest member, and the descent fails at the
      // first level whose radius is below that distance.
      const int lowest_skipped =
          next_child_level == INT_MIN ? kMinLevel : next_child_level + 2;
      const int fail_level =
          std::max(LevelCovering(nearest_distance) - 1, kMinLevel);
      if (fail_level >= level) {
        Unwind(level, point, id);
        return;
      }
      if (fail_level >= lowest_skipped) {
        Attach(NewNode(id, point, fail_level), nearest, nearest_distance);
        return;
      }
      level = next_child_level + 1;
      level_mins_.push_back({level + 1, nearest_distance, nearest});
      const double radius = Pow2(level + 1);
      std::erase_if(cover_, [radius](const CoverEntry& e) {
        return e.distance > radius;
      });
    }
    level_mins_.push_back({level, nearest_distance, nearest});
    if (!AddToCoverSet(level, point, id)) return;  // a duplicate location
    double joined_nearest = std::numeric_limits<double>::infinity();
    for (const CoverEntry& e : next_cover_) {
      joined_nearest = std::min(joined_nearest, e.distance);
    }
    const double radius = Pow2(level);
    if (joined_nearest > radius) {
      Unwind(level, point, id);
      return;
    }
    cover_.clear();
    for (const CoverEntry& e : next_cover_) {
      if (e.distance <= radius) cover_.push_back(e);
    }
    --level;
  }
}

// next_cover_ = cover_ plus the children of its members with top level
// `level - 1`, with their distances. Returns false (and stores the id) if the
// point sits exactly on one of them.
bool CoverTree::AddToCoverSet(int level, const double* point,
                              std::uint64_t id) {
  next_cover_.clear();
  for (CoverEntry& e : cover_) {
    const std::vector<NodeIndex>& children = nodes_[e.node].children;
    while (e.next_child < children.size() &&
           nodes_[children[e.next_child]].level == level - 1) {
      const NodeIndex child = children[e.next_child++];
      const double d = DistanceTo(point, child);
      if (d == 0.0 && SameLocation(point, child)) {
        AddId(child, id);
        return false;
      }
      next_cover_.push_back({child, d, 0});
    }
    next_cover_.push_back(e);
  }
  return true;
}

// The cover set at `failed_level` holds nothing within 2^failed_level: the
// point goes one level below the nearest recorded level whose cover set has
// a member within 2^level (BKL's "parent found" on the way back up).
void CoverTree::Unwind(int failed_level, const double* point,
                       std::uint64_t id) {
  for (auto it = level_mins_.rbegin(); it != level_mins_.rend(); ++it) {
    if (it->level > failed_level && it->distance <= Pow2(it->level)) {
      const NodeIndex node = NewNode(id, point, it->level - 1);
      Attach(node, it->node, it->distance);
      return;
    }
  }
  // Unreachable: the first record is the root's, and the root's level covers
  // the point.
  std::abort();
}

CoverTree::NodeIndex CoverTree::NewNode(std::uint64_t id, const double* point,
                                        int level) {
  NodeIndex node;
  if (!free_nodes_.empty()) {
    node = free_nodes_.back();
    free_nodes_.pop_back();
    nodes_[node] = Node{};
    std::copy(point, point + dim_, coordinates_.begin() + node * dim_);
  } else {
    node = static_cast<NodeIndex>(nodes_.size());
    nodes_.emplace_back();
    coordinates_.insert(coordinates_.end(), point, point + dim_);
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

// Finds a parent for a detached subtree rooted at `orphan` (top level j): the
// nearest node of C_(j+1) within 2^(j+1). If there is none, the orphan is
// more than 2^(j+1) from every node of C_(j+1), so it may itself join that
// level: promote and try again. Orphans that have not been re-homed yet have
// levels <= j, so they never conflict with a promotion.
void CoverTree::Rehome(NodeIndex orphan) {
  const double* point = Coordinates(orphan);
  int level = nodes_[orphan].level;
  while (true) {
    Node& root = nodes_[root_];
    if (root.level < level + 1) root.level = level + 1;
    double distance = 0.0;
    const NodeIndex parent =
        NearestAtOrAbove(point, level + 1, Pow2(level + 1), &distance);
    if (parent != kNoNode) {
      nodes_[orphan].level = level;
      Attach(orphan, parent, distance);
      return;
    }
    ++level;
  }
}

// The nearest node with top level >= min_level within `radius` of `point`,
// or kNoNode.
CoverTree::NodeIndex CoverTree::NearestAtOrAbove(const double* point,
                                                 int min_level, double radius,
                                                 double* distance) const {
  NodeIndex best = kNoNode;
  double best_distance = radius;
  std::vector<SearchCandidate> stack;
  stack.push_back({DistanceTo(point, root_), root_});
  while (!stack.empty()) {
    const SearchCandidate c = stack.back();
    stack.pop_back();
    const Node& n = nodes_[c.node];
    if (BeyondBound(c.distance - n.max_distance, best_distance,
                    c.distance + n.max_distance)) {
      continue;
    }
    if (n.level >= min_level && c.distance <= best_distance &&
        (best == kNoNode || c.distance < best_distance)) {
      best = c.node;
      best_distance = c.distance;
    }
    for (NodeIndex child : n.children) {
      if (nodes_[child].level < min_level) break;  // sorted by level
      stack.push_back({DistanceTo(point, child), child});
    }
  }
  *distance = best_distance;
  return best;
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

void CoverTree::FreeNode(NodeIndex node) {
  nodes_[node] = Node{};
  free_nodes_.push_back(node);
}

// Renumbers the nodes so that every node's children are adjacent in memory
// and a subtree is close together: a search then reads coordinates mostly in
// order.
void CoverTree::CompactLayout() {
  if (root_ == kNoNode) return;
  std::vector<NodeIndex> order;  // order[new] = old
  order.reserve(node_count());
  order.push_back(root_);
  std::vector<NodeIndex> pending{root_};
  while (!pending.empty()) {
    const NodeIndex node = pending.back();
    pending.pop_back();
    const std::vector<NodeIndex>& children = nodes_[node].children;
    order.insert(order.end(), children.begin(), children.end());
    pending.insert(pending.end(), children.rbegin(), children.rend());
  }
  std::vector<NodeIndex> new_index(nodes_.size(), kNoNode);
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = static_cast<NodeIndex>(i);
  }
  std::vector<Node> nodes(order.size());
  std::vector<double> coordinates(order.size() * dim_);
  for (std::size_t i = 0; i < order.size(); ++i) {
    Node& n = nodes[i];
    n = std::move(nodes_[order[i]]);
    if (n.parent != kNoNode) n.parent = new_index[n.parent];
    for (NodeIndex& c : n.children) c = new_index[c];
    std::copy_n(Coordinates(order[i]), dim_, coordinates.begin() + i * dim_);
  }
  for (auto& [id, node] : node_of_id_) node = new_index[node];
  absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>> extra_ids;
  for (auto& [node, ids] : extra_ids_)
    extra_ids[new_index[node]] = std::move(ids);
  nodes_ = std::move(nodes);
  coordinates_ = std::move(coordinates);
  extra_ids_ = std::move(extra_ids);
  free_nodes_.clear();
  root_ = 0;
}

// ---------------------------------------------------------------------------
// Invariant check (tests).

absl::Status CoverTree::CheckInvariants() const {
  auto fail = [](auto&&... parts) {
    return absl::InternalError(absl::StrCat(parts...));
  };
  if (root_ == kNoNode) {
    if (size_ != 0 || !node_of_id_.empty())
      return fail("empty root, size ", size_);
    return absl::OkStatus();
  }
  // Reachable nodes, with their ancestors' chains walked for the bounds.
  std::vector<NodeIndex> reachable;
  std::vector<NodeIndex> pending{root_};
  std::size_t ids = 0;
  if (nodes_[root_].parent != kNoNode) return fail("root has a parent");
  while (!pending.empty()) {
    const NodeIndex node = pending.back();
    pending.pop_back();
    reachable.push_back(node);
    const Node& n = nodes_[node];
    ids += n.id_count;
    if (node_of_id_.find(n.id) == node_of_id_.end() ||
        node_of_id_.at(n.id) != node) {
      return fail("node ", node, ": id ", n.id, " not mapped to it");
    }
    if ((n.id_count > 1) != extra_ids_.contains(node) ||
        (n.id_count > 1 && extra_ids_.at(node).size() + 1 != n.id_count)) {
      return fail("node ", node, ": id_count ", n.id_count, " mismatch");
    }
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
      if (d > Pow2(c.level + 1)) {
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
  if (reachable.size() != node_count()) {
    return fail(reachable.size(), " reachable nodes of ", node_count());
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
      if (level > kMinLevel && !(d > Pow2(level))) {
        return fail("separation: nodes ", reachable[i], " and ", reachable[j],
                    " at level ", level, " are ", d, " apart");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace streamreg
