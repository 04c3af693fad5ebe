#include "core/index/cover_tree.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/index/neighbor_sort.h"
#include "core/index/point_validation.h"

namespace streamreg {
namespace {

// Seed of the insertion order of batch builds: fixed, so a build is
// reproducible.
constexpr std::uint64_t kBuildOrderSeed = 0x5eed'c0de'2006'0001;

}  // namespace

CoverTree::CoverTree(std::size_t dim)
    : dim_(dim), points_(dim), neighborhoods_(dim) {}

CoverTree::CoverTree(DiagonalMap map)
    : dim_(map.dim()), points_(std::move(map)), neighborhoods_(dim_) {}

template <class RowOf>
absl::StatusOr<CoverTree> CoverTree::BuildFrom(
    CoverTree tree, std::size_t n, const RowOf& row_of,
    std::span<const std::uint64_t> ids, InsertionOrder insertion_order,
    std::stop_token stop) {
  const std::size_t dim = tree.dim_;
  if (dim == 0) return absl::InvalidArgumentError("dim: must be at least 1");
  absl::flat_hash_set<std::uint64_t> seen;
  seen.reserve(ids.size());
  auto what = [&](std::size_t i) {
    return absl::StrCat("point ", i, " (id ", ids[i], ")");
  };
  std::vector<double> z(dim);
  for (std::size_t i = 0; i < n; ++i) {
    // The message is only made for a point that fails.
    tree.points_.ToCoordinates(row_of(i), z.data());
    if (!ValidatePoint(z, dim, "").ok()) return ValidatePoint(z, dim, what(i));
    if (!seen.insert(ids[i]).second) {
      return absl::AlreadyExistsError(absl::StrCat(what(i), ": repeated id"));
    }
  }
  // Inserting in a random order makes the tree independent of how the input
  // happens to be sorted (e.g. a trajectory in time order); sorting by id
  // first makes the same points give the same tree in any input order.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (insertion_order == InsertionOrder::kShuffled) {
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
    std::shuffle(order.begin(), order.end(), std::mt19937_64(kBuildOrderSeed));
  }
  tree.nodes_.Reserve(n);
  tree.points_.Reserve(n);
  constexpr std::size_t kStopCheckEvery = 4096;
  for (std::size_t done = 0; done < n; ++done) {
    if (done % kStopCheckEvery == 0 && stop.stop_requested()) {
      return absl::CancelledError(absl::StrCat("tree build abandoned after ",
                                               done, " of ", n, " points"));
    }
    const std::size_t i = order[done];
    const double* row = row_of(i);
    tree.points_.ToCoordinates(row, z.data());
    tree.InsertValidated(ids[i], {z.data(), row});
  }
  tree.CompactLayout();
  return tree;
}

absl::StatusOr<CoverTree> CoverTree::Build(std::size_t dim,
                                           std::span<const double> coordinates,
                                           std::span<const std::uint64_t> ids,
                                           InsertionOrder insertion_order,
                                           std::stop_token stop) {
  if (dim == 0) return absl::InvalidArgumentError("dim: must be at least 1");
  if (coordinates.size() != ids.size() * dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinates: ", coordinates.size(), " values for ",
                     ids.size(), " ids of dimension ", dim));
  }
  return BuildFrom(
      CoverTree(dim), ids.size(),
      [&](std::size_t i) { return coordinates.data() + i * dim; }, ids,
      insertion_order, std::move(stop));
}

absl::StatusOr<CoverTree> CoverTree::BuildReferencing(
    DiagonalMap map, std::span<const double* const> rows,
    std::span<const std::uint64_t> ids, InsertionOrder insertion_order,
    std::stop_token stop) {
  if (map.dim() == 0) {
    return absl::InvalidArgumentError("dim: must be at least 1");
  }
  if (rows.size() != ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows: ", rows.size(), " rows for ", ids.size(), " ids"));
  }
  return BuildFrom(
      CoverTree(std::move(map)), ids.size(),
      [&](std::size_t i) { return rows[i]; }, ids, insertion_order,
      std::move(stop));
}

absl::Status CoverTree::Insert(std::uint64_t id,
                               std::span<const double> point) {
  if (point.size() != dim_) {
    return ValidatePoint(point, dim_, absl::StrCat("point id ", id));
  }
  const double* z = point.data();
  if (referencing()) {
    insert_point_.resize(dim_);
    points_.ToCoordinates(point.data(), insert_point_.data());
    z = insert_point_.data();
  }
  if (absl::Status s =
          ValidatePoint({z, dim_}, dim_, absl::StrCat("point id ", id));
      !s.ok()) {
    return s;
  }
  if (node_of_id_.Contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("point id ", id, ": already stored"));
  }
  InsertValidated(id, {z, point.data()});
  return absl::OkStatus();
}

absl::Status CoverTree::Remove(std::uint64_t id) {
  const NodeIndex node = node_of_id_.Find(id);
  if (node == kNoNode) {
    return absl::NotFoundError(absl::StrCat("point id ", id, ": not stored"));
  }
  {
    thread_local std::vector<double> scratch;
    scratch.resize(dim_);
    neighborhoods_.Removed(id, Coordinates(node, scratch.data()));
  }
  node_of_id_.Erase(id);
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
  // A caller moving along (a controller's ticks) is answered from the
  // stored points kept around its recent queries.
  double kth = 0.0;
  const double reach = recent_answers_.Cap(query, k, 0, &kth);
  const bool following = std::isfinite(reach) && reach <= kFollowingReach * kth;
  if (following && (neighborhoods_.Knn(query, k, reach, kth, out) ||
                    KnnKeepingNeighborhood(query, k, reach, out))) {
    RecordKnnAnswer(query, k, *out);
    return absl::OkStatus();
  }
  // Else capped, which prunes hard from the root: at the smaller of twice
  // the radius recent queries needed and the reach of a recent answer near
  // this query (which holds while its points are stored); if the k-th
  // neighbour lies beyond, at the reach, and then without a cap. (A range
  // search at the reach that found fewer than k showed it does not hold.)
  const double untried_reach =
      following ? std::numeric_limits<double>::infinity() : reach;
  const bool held =
      SearchWithCaps(knn_radius_.Cap(k), untried_reach, [&](double cap) {
        KnnRules capped(k, out, cap);
        Search(query.data(), capped);
        capped.Finish();
        return capped.CapHeld(size_);
      });
  if (!held) {
    KnnRules rules(k, out);
    Search(query.data(), rules);
    rules.Finish();
  }
  RecordKnnAnswer(query, k, *out);
  return absl::OkStatus();
}

void CoverTree::RecordKnnAnswer(std::span<const double> query, std::size_t k,
                                const std::vector<Neighbor>& found) const {
  if (found.empty()) return;
  knn_radius_.Record(k, found.back().distance);
  if (found.size() == k)
    recent_answers_.Record(query, k, found.back().distance);
}

bool CoverTree::KnnKeepingNeighborhood(std::span<const double> query,
                                       std::size_t k, double reach,
                                       std::vector<Neighbor>* out) const {
  RangeRules rules(reach, out);
  Search(query.data(), rules);
  // Every stored point within the reach: its k nearest are the answer.
  if (out->size() < k) return false;
  if (out->size() <= kMaxKeptPerNeighbor * k + 64) {
    thread_local std::vector<double> scratch;
    scratch.resize(dim_);
    neighborhoods_.Keep(query, reach, *out, [&](std::uint64_t id) {
      return PointOf(id, scratch.data()).data();
    });
  }
  KeepNearest(k, out);
  return true;
}

absl::Status CoverTree::Range(std::span<const double> query, double radius,
                              std::vector<Neighbor>* out) const {
  if (absl::Status s = RangeUnordered(query, radius, out); !s.ok()) return s;
  SortNeighbors(*out);
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

std::span<const double> CoverTree::PointOf(std::uint64_t id,
                                           double* scratch) const {
  const NodeIndex node = node_of_id_.Find(id);
  if (node == kNoNode) return {};
  return {Coordinates(node, scratch), dim_};
}

int CoverTree::root_level() const {
  return root_ == kNoNode ? kMinLevel : nodes_[root_].level;
}

std::size_t CoverTree::MemoryUsage() const {
  std::size_t bytes = sizeof(*this);
  bytes +=
      nodes_.MemoryUsage() + points_.MemoryUsage() + id_ranges_.MemoryUsage();
  bytes += (free_nodes_.capacity() + unindexed_.capacity()) * sizeof(NodeIndex);
  bytes += node_of_id_.MemoryUsage() + neighborhoods_.MemoryUsage();
  // Swiss tables: one control byte per slot plus the slot.
  bytes += extra_ids_.capacity() *
           (sizeof(std::pair<NodeIndex, std::vector<std::uint64_t>>) + 1);
  for (const auto& [node, ids] : extra_ids_) {
    bytes += ids.capacity() * sizeof(std::uint64_t);
  }
  bytes += insert_stack_.capacity() * sizeof(SearchCandidate);
  bytes +=
      (insert_point_.capacity() + subtree_point_.capacity()) * sizeof(double);
  return bytes;
}

CoverTree::Points CoverTree::CopyPoints() const {
  Points points;
  points.ids.reserve(size_);
  if (referencing()) {
    points.rows.reserve(size_);
  } else {
    points.coordinates.reserve(size_ * dim_);
  }
  ForEachStoredId([&](NodeIndex node, std::uint64_t id) {
    const double* row = points_.Row(node);
    points.ids.push_back(id);
    if (referencing()) {
      points.rows.push_back(row);
    } else {
      points.coordinates.insert(points.coordinates.end(), row, row + dim_);
    }
  });
  return points;
}

absl::StatusOr<CoverTree> CoverTree::BuildLike(const Points& points,
                                               std::stop_token stop) const {
  // The points were validated when they came in: only `stop` fails a build.
  absl::StatusOr<CoverTree> tree =
      referencing()
          ? BuildReferencing(*points_.map(), points.rows, points.ids,
                             InsertionOrder::kShuffled, std::move(stop))
          : Build(dim_, points.coordinates, points.ids,
                  InsertionOrder::kShuffled, std::move(stop));
  if (tree.ok()) tree->strategy_ = strategy_;
  return tree;
}

CoverTree CoverTree::Rebuilt() const { return *BuildLike(CopyPoints()); }

std::vector<CoverTree::SearchCandidate>& CoverTree::ThreadSearchStack() {
  thread_local std::vector<SearchCandidate> stack;
  return stack;
}

// A freed slot is at distance +infinity (NodePoints::Clear), which no bound
// admits, so scans need not know which slots are free.
void CoverTree::FreeNode(NodeIndex node) {
  nodes_.Mutable(node) = Node{};
  points_.Clear(node);
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
      const std::size_t first = order.size();
      for (NodeIndex c = nodes_[node].first_child; c != kNoNode;
           c = nodes_[c].next_sibling) {
        order.push_back(c);
      }
      pending.insert(pending.end(), order.rbegin(),
                     order.rbegin() + (order.size() - first));
    }
  }
  order.insert(order.end(), unindexed_.begin(), unindexed_.end());
  std::vector<NodeIndex> new_index(nodes_.size(), kNoNode);
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = static_cast<NodeIndex>(i);
  }
  NodeArray nodes;
  NodePoints points = points_.EmptyLike();
  nodes.Reserve(order.size());
  points.Reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    Node& n = nodes.Append();
    n = nodes_[order[i]];
    for (NodeIndex* link : {&n.parent, &n.first_child, &n.next_sibling}) {
      if (*link != kNoNode) *link = new_index[*link];
    }
    points.Append(points_.Row(order[i]));
  }
  node_of_id_.RemapNodes([&](NodeIndex node) { return new_index[node]; });
  for (NodeIndex& node : unindexed_) node = new_index[node];
  absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>> extra_ids;
  for (auto& [node, ids] : extra_ids_) {
    extra_ids[new_index[node]] = std::move(ids);
  }
  nodes_ = std::move(nodes);
  points_ = std::move(points);
  extra_ids_ = std::move(extra_ids);
  free_nodes_.clear();
  if (root_ != kNoNode) root_ = 0;
  RecomputeIdRanges();
}

// From scratch (after a renumbering or a restore): each node's own ids,
// then each subtree's into its parent, children before their parents.
void CoverTree::RecomputeIdRanges() {
  ChunkedRows<IdRange> ranges(1);
  ranges.GrowTo(nodes_.size());  // every interval empty
  ForEachStoredId([&](NodeIndex node, std::uint64_t id) {
    ranges[node].Widen(IdRange::Of(id));
  });
  std::vector<NodeIndex> preorder;
  if (root_ != kNoNode) {
    std::vector<NodeIndex> pending{root_};
    while (!pending.empty()) {
      const NodeIndex node = pending.back();
      pending.pop_back();
      preorder.push_back(node);
      for (NodeIndex c = nodes_[node].first_child; c != kNoNode;
           c = nodes_[c].next_sibling) {
        pending.push_back(c);
      }
    }
  }
  for (auto node = preorder.rbegin(); node != preorder.rend(); ++node) {
    const NodeIndex parent = nodes_[*node].parent;
    if (parent != kNoNode) ranges[parent].Widen(ranges[*node]);
  }
  id_ranges_ = std::move(ranges);
}

}  // namespace streamreg
