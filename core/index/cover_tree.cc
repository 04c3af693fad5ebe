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
  if (node_of_id_.Contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("point id ", id, ": already stored"));
  }
  InsertValidated(id, point.data());
  return absl::OkStatus();
}

absl::Status CoverTree::Remove(std::uint64_t id) {
  const NodeIndex node = node_of_id_.Find(id);
  if (node == kNoNode) {
    return absl::NotFoundError(absl::StrCat("point id ", id, ": not stored"));
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
  const NodeIndex node = node_of_id_.Find(id);
  if (node == kNoNode) return {};
  return {Coordinates(node), dim_};
}

int CoverTree::root_level() const {
  return root_ == kNoNode ? kMinLevel : nodes_[root_].level;
}

std::size_t CoverTree::MemoryUsage() const {
  std::size_t bytes = sizeof(*this);
  bytes += nodes_.MemoryUsage() + coordinates_.MemoryUsage();
  bytes += (free_nodes_.capacity() + unindexed_.capacity()) * sizeof(NodeIndex);
  bytes += node_of_id_.MemoryUsage();
  // Swiss tables: one control byte per slot plus the slot.
  bytes += extra_ids_.capacity() *
           (sizeof(std::pair<NodeIndex, std::vector<std::uint64_t>>) + 1);
  for (const auto& [node, ids] : extra_ids_) {
    bytes += ids.capacity() * sizeof(std::uint64_t);
  }
  bytes += insert_stack_.capacity() * sizeof(SearchCandidate);
  return bytes;
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

// A freed slot keeps +infinity coordinates, which no bound admits, so scans
// need not know which slots are free.
void CoverTree::FreeNode(NodeIndex node) {
  nodes_.Mutable(node) = Node{};
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
  ChunkedRows<double> coordinates(dim_);
  nodes.Reserve(order.size());
  coordinates.Reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    Node& n = nodes.Append();
    n = nodes_[order[i]];
    for (NodeIndex* link : {&n.parent, &n.first_child, &n.next_sibling}) {
      if (*link != kNoNode) *link = new_index[*link];
    }
    std::copy_n(Coordinates(order[i]), dim_, coordinates.AppendRow());
  }
  node_of_id_.RemapNodes([&](NodeIndex node) { return new_index[node]; });
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

}  // namespace streamreg
