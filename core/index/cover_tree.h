#ifndef STREAMREG_CORE_INDEX_COVER_TREE_H_
#define STREAMREG_CORE_INDEX_COVER_TREE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <stop_token>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/byte_coding.h"
#include "core/base/chunked_rows.h"
#include "core/index/cover_scale.h"
#include "core/index/euclidean_distance.h"
#include "core/index/id_node_map.h"
#include "core/index/id_range.h"
#include "core/index/knn_radius_estimate.h"
#include "core/index/neighbor.h"
#include "core/index/node_distance.h"
#include "core/index/node_points.h"
#include "core/index/pruning_monitor.h"
#include "core/index/recent_knn_answers.h"
#include "core/index/recent_neighborhoods.h"
#include "core/index/search_rules.h"

namespace streamreg {

// An exact nearest-neighbour index over points in R^d under the Euclidean
// distance: the cover tree of Beygelzimer, Kakade & Langford, "Cover Trees for
// Nearest Neighbor" (ICML 2006), in its explicit (compressed) form.
//
// Every distinct location is one node. A node has a top level i; it belongs to
// every level set C_j with j <= i. With base 2 the tree keeps BKL's three
// invariants:
//   nesting:    C_i is a subset of C_{i-1} (a node is present at every level
//               below its top, so a child's top level is below its parent's);
//   covering:   a child with top level j lies within 2^(j+1) of its parent;
//   separation: two distinct nodes both in C_j are more than 2^j apart.
// Insertion puts a point at the highest level that keeps the invariants
// (the highest BKL's Insert could give it), below the nearest node that
// covers it at its own level, found by branch and bound. Removal re-homes the
// removed node's children, highest level first, the same way (a child that no
// node of the level above covers is promoted, which keeps separation).
//
// Points at exactly the same coordinates share a node (any number of ids).
// Below the finest representable radius (2^-1074) separation cannot be
// expressed; distinct points at computed distance 0 share the floor level.
//
// Each node also keeps the distance to its parent and an upper bound on the
// distance to any descendant; searches prune with both (triangle inequality),
// so a search visits far fewer nodes than the covering radii alone allow.
// It also keeps an interval holding the ids of its subtree (IdRange), for
// rules that exclude a run of ids wholesale (kBoundsByIds): a subtree of
// such ids is pruned by their bound without measuring its root.
// Where the data leaves nothing to prune (high intrinsic dimension), a
// PruningMonitor notices: searches scan the points instead, and insertions
// keep new points outside the tree (scanned too) rather than pay a scan to
// place each one. Same answers; never much slower than brute force.
// "Points at the same coordinates share a node" and the invariants concern
// the tree; points kept outside it are single nodes each.
//
// A tree either keeps a copy of each point's coordinates or references rows
// of raw inputs kept elsewhere and maps them through a DiagonalMap when it
// measures (NodePoints): the same answers, 8 bytes per point instead of
// 8 * dim. Queries are in the tree's coordinates either way.
//
// Not synchronized: concurrent const calls are safe, a mutating call needs
// exclusive access (ConcurrentCoverTree provides it).
class CoverTree {
 public:
  // Nodes live at top levels in [kMinLevel, ...]; the floor's radius is 0.
  static constexpr int kMinLevel = CoverScale::kMinLevel;

  // An empty tree over points with `dim` coordinates (dim >= 1), keeping a
  // copy of each.
  explicit CoverTree(std::size_t dim);
  // An empty tree over the images z = map(x) of rows x that the caller keeps
  // unchanged at the same address while the tree holds them: Insert and
  // BuildReferencing take such rows (raw x), searches take coordinates z.
  explicit CoverTree(DiagonalMap map);

  // The order Build inserts points in: shuffled (the same points give the
  // same tree whatever their order), or as given — several times faster for
  // points in stream order, whose neighbours are inserted close in time
  // (a model's index built from its store: restored or rebuilt; 524,288
  // arm samples in a full-rank linear map: 35-37 s shuffled, 7.8-9.7 s as
  // given, its k-NN searches no slower — bench/notes/results-history.md, "A
  // minute's stall at a take-over").
  enum class InsertionOrder { kShuffled, kAsGiven };

  // Builds a tree over the n = ids.size() points stored row-major in
  // `coordinates` (n * dim values). Validates everything first: a bad point or
  // a repeated id fails the whole build with InvalidArgument / AlreadyExists.
  // A build whose `stop` is requested gives up within a few thousand
  // insertions and fails with Cancelled (an owner that goes away abandons
  // its background builds rather than wait for them).
  static absl::StatusOr<CoverTree> Build(
      std::size_t dim, std::span<const double> coordinates,
      std::span<const std::uint64_t> ids,
      InsertionOrder order = InsertionOrder::kShuffled,
      std::stop_token stop = {});
  // The same for a referencing tree over rows[i] (raw, map.dim() values
  // each), which the tree keeps pointing at.
  static absl::StatusOr<CoverTree> BuildReferencing(
      DiagonalMap map, std::span<const double* const> rows,
      std::span<const std::uint64_t> ids,
      InsertionOrder order = InsertionOrder::kShuffled,
      std::stop_token stop = {});

  // Adds one point (a referencing tree: the row it maps and keeps pointing
  // at). InvalidArgument for a wrong dimension, NaN or infinite
  // coordinates; AlreadyExists if `id` is stored. The tree is unchanged on
  // error.
  absl::Status Insert(std::uint64_t id, std::span<const double> point);

  // Removes the point `id`; NotFound if it is not stored.
  absl::Status Remove(std::uint64_t id);

  // The k nearest stored points to `query`, sorted by (distance, id); fewer
  // than k if the tree holds fewer. Identical to a brute-force scan. The
  // search starts capped: at twice the k-th distance recent queries found
  // (KnnRadiusEstimate), or nearer, at the reach of a recent answer near
  // the query (RecentKnnAnswers); it repeats with a wider cap or none if
  // that was too small.
  absl::Status Knn(std::span<const double> query, std::size_t k,
                   std::vector<Neighbor>* out) const;

  // Every stored point within `radius` (inclusive), sorted by (distance, id).
  absl::Status Range(std::span<const double> query, double radius,
                     std::vector<Neighbor>* out) const;
  // The same points in the traversal's order, for callers that order them
  // themselves (ShellOrder) and would waste the sort.
  absl::Status RangeUnordered(std::span<const double> query, double radius,
                              std::vector<Neighbor>* out) const;

  // Walks the tree for any SearchRules. `query` must have dim() valid
  // coordinates (the checked entry points are Knn and Range).
  template <SearchRules Rules>
  void Search(const double* query, Rules& rules) const;

  std::size_t size() const { return size_; }
  std::size_t dim() const { return dim_; }
  bool empty() const { return size_ == 0; }
  bool Contains(std::uint64_t id) const { return node_of_id_.Contains(id); }
  // Whether the tree references rows kept elsewhere (see NodePoints).
  bool referencing() const { return points_.referencing(); }

  // The coordinates of `id` — where the tree keeps them, or mapped into
  // `scratch` (dim() values) by a referencing tree — or an empty span if it
  // is not stored.
  std::span<const double> PointOf(std::uint64_t id, double* scratch) const;

  // Bytes held by the tree: nodes, coordinates, id map, child lists, the
  // points kept around recent queries.
  std::size_t MemoryUsage() const;

  // A fresh batch-built tree over the same points: compact memory layout and
  // no slack left by removals.
  CoverTree Rebuilt() const;

  // The tree's shape at one moment, for saving (snapshots): the nodes,
  // shared copy-on-write with the tree (taking it costs a pointer per 4096
  // nodes plus the ids of locations holding several), and the root. Not the
  // coordinates: whoever restores the tree supplies them, as it supplied
  // them to Insert. Later changes to the tree do not show in it.
  class Structure;
  Structure ShareStructure() const;
  // Reads a Structure's encoding back into a tree (cover_tree_structure.cc).
  class StructureReader;

  // A moment in the tree's history, for saving later only what changed
  // after it (snapshots built on earlier ones): which node array it is of,
  // the epoch it closed, and the tree's size and node slots then.
  struct ChangeMark {
    std::uint64_t tree = 0;  // 0: of no tree (nothing is changed after it)
    std::uint32_t epoch = 0;
    std::size_t size = 0;
    std::size_t node_slots = 0;
  };
  // Marks now: the nodes written from now on are changed after the mark.
  // A writer's call (it starts a new epoch), taken with the structure it
  // goes with.
  ChangeMark MarkChanges();
  // The nodes added or rewritten after `mark`, shared copy-on-write like a
  // Structure; none if `mark` is not of this tree's node array (the tree
  // was built or renumbered since). StructureReader applies them to the
  // structure saved at the mark.
  class Changes;
  std::optional<Changes> ShareChangesSince(const ChangeMark& mark) const;

  // The stored points, for building another tree like this one (what
  // Rebuilt() builds from; a background rebuild copies them the same way):
  // their ids and rows — copies of the coordinates when the tree keeps
  // them, the referenced rows otherwise.
  struct Points {
    std::vector<std::uint64_t> ids;
    std::vector<double> coordinates;  // row-major, when the tree owns them
    std::vector<const double*> rows;  // when it references them
  };
  Points CopyPoints() const;
  // A batch-built tree of this one's kind (and map) over `points`; fails
  // only with Cancelled, when `stop` is requested.
  absl::StatusOr<CoverTree> BuildLike(const Points& points,
                                      std::stop_token stop = {}) const;

  // Calls fn(id, coordinates) for every stored point, in no promised order
  // (the same for the same tree).
  template <class Fn>
  void ForEachPoint(Fn&& fn) const;

  // How searches and insertions work. kAdaptive walks the tree unless a
  // PruningMonitor finds that a scan is cheaper: then searches scan, and
  // insertions (into a tree of kMinTreeToDefer nodes or more) keep points
  // outside the tree, scanned by every search, until insertions walk again.
  // kTree always walks; kScan always scans and keeps every new point outside
  // the tree (a flat index). The answers are the same.
  enum class Strategy { kAdaptive, kTree, kScan };
  void set_strategy(Strategy strategy) { strategy_ = strategy; }
  Strategy strategy() const { return strategy_; }

  // The average fraction of the nodes that measured tree walks computed
  // distances to (see PruningMonitor): near 0 where the tree prunes well;
  // above PruningMonitor::kScanAbove, adaptive searches scan.
  double search_fraction() const { return search_monitor_.fraction(); }

  // Verifies nesting, covering, separation, the distance bounds and the id
  // map; returns Internal naming the first violation. O(n^2): for tests.
  absl::Status CheckInvariants() const;

  // Points kept outside the tree (see Strategy), found by scanning.
  std::size_t unindexed_count() const { return unindexed_.size(); }

  // Number of nodes (distinct locations) and the top level of the root.
  std::size_t node_count() const { return nodes_.size() - free_nodes_.size(); }
  int root_level() const;

 private:
  // Growing the id map's hash part rehashes its ids; ConcurrentCoverTree (a
  // friend) does that on a copy while searches go on (off-lock) and swaps
  // the copy in under its lock, so no search waits for a rehash.
  friend class ConcurrentCoverTree;
  IdNodeMap& id_map() { return node_of_id_; }
  const IdNodeMap& id_map() const { return node_of_id_; }

  using NodeIndex = std::uint32_t;
  static constexpr NodeIndex kNoNode = std::numeric_limits<NodeIndex>::max();
  static constexpr std::uint32_t kIndexed =
      std::numeric_limits<std::uint32_t>::max();

  // One location: 40 bytes, no allocation of its own. A node's children
  // form a chain (first_child, then each child's next_sibling) sorted by top
  // level, descending; after a batch build (CompactLayout) the chain runs
  // through adjacent nodes. Its distances are floats (NodeDistance).
  struct Node {
    std::uint64_t id = 0;  // first id stored at this location
    // Distance to the parent, to the nearest float; 0 at the root.
    float parent_distance = 0.0f;
    float max_distance = 0.0f;  // >= distance to any descendant
    NodeIndex parent = kNoNode;
    NodeIndex first_child = kNoNode;
    NodeIndex next_sibling = kNoNode;
    int level = kMinLevel;       // top level
    std::uint32_t id_count = 0;  // ids at this location (extras in map)
    std::uint32_t unindexed_at = kIndexed;  // position in unindexed_
  };
  static_assert(std::is_trivially_copyable_v<Node> && sizeof(Node) == 40);

  // The nodes, shared copy-on-write with the structures Share() hands out:
  // reads see them as they are, every write goes through Mutable(), which
  // first copies a chunk that a share still holds. Each slot also keeps the
  // epoch of its last write (ChangeMark; 4 bytes a node, shared alike), and
  // each array a number of its own, so a mark names the array it is of.
  class NodeArray {
   public:
    NodeArray() : identity_(NewIdentity()) {}
    const Node& operator[](NodeIndex i) const { return rows_[i]; }
    Node& Mutable(NodeIndex i) {
      // Before the first mark every stamp is 0 (and the epoch): a tree
      // built or grown without snapshots never reads them.
      if (epoch_ != 0 && stamps_[i] != epoch_) {
        *stamps_.WritableRow(i) = epoch_;
      }
      return *rows_.WritableRow(i);
    }
    Node& Append() {
      *stamps_.AppendRow() = epoch_;
      return *rows_.AppendRow();
    }
    std::size_t size() const { return rows_.size(); }
    void Reserve(std::size_t n) {
      rows_.Reserve(n);
      stamps_.Reserve(n);
    }
    std::size_t MemoryUsage() const {
      return rows_.MemoryUsage() + stamps_.MemoryUsage();
    }
    ChunkedRows<Node>::Shared Share() const { return rows_.Share(); }
    ChunkedRows<std::uint32_t>::Shared ShareStamps() const {
      return stamps_.Share();
    }
    std::uint64_t identity() const { return identity_; }
    // Closes the current epoch and returns it: later writes are stamped
    // after it. (Past 2^32 epochs the array takes a new number, so no
    // earlier mark applies and none can miss a change.)
    std::uint32_t CloseEpoch();

   private:
    static std::uint64_t NewIdentity();

    ChunkedRows<Node> rows_{1};
    ChunkedRows<std::uint32_t> stamps_{1};
    std::uint64_t identity_;
    std::uint32_t epoch_ = 0;
  };
  // Insertions keep points out of the tree (see AddUnindexed) only once the
  // tree has this many nodes: a small tree is cheap to search anyway.
  static constexpr std::size_t kMinTreeToDefer = 1024;
  // A k-NN search is answered from the points kept around recent queries
  // (RecentNeighborhoods) when a recent answer's reach is within this
  // factor of that answer's k-th distance: the caller is moving along.
  static constexpr double kFollowingReach = 1.5;
  // A ball is kept only if it holds at most this many times k points (and
  // a few): a reach much wider than the k-th distance would copy much and
  // be scanned often for little.
  static constexpr std::size_t kMaxKeptPerNeighbor = 8;
  // Unindexed locations that each tree-walking insertion moves into the tree.
  static constexpr std::size_t kIndexPerInsert = 2;
  // How a parent search runs: walk the tree (else scan) and whether to
  // report to the insertion PruningMonitor.
  struct ParentSearch {
    bool walk;
    bool measure;
  };

  struct SearchCandidate {
    double distance;
    NodeIndex node;
    NodeIndex first_child;  // search node's children from this one on
  };

  // A point being inserted: its coordinates, and the row a node keeps for
  // it (the same pointer unless the tree references rows).
  struct Incoming {
    const double* z;
    const double* row;
  };
  // The node's coordinates (mapped into `scratch` when referencing).
  const double* Coordinates(NodeIndex node, double* scratch) const {
    return points_.Coordinates(node, scratch);
  }
  double DistanceTo(const double* point, NodeIndex node) const {
    return points_.Distance(point, node);
  }
  bool SameLocation(const double* point, NodeIndex node) const {
    return points_.SameCoordinates(point, node);
  }
  // A tree over rows [0, n) given by row_of(i), ids[i] each, validated.
  template <class RowOf>
  static absl::StatusOr<CoverTree> BuildFrom(CoverTree tree, std::size_t n,
                                             const RowOf& row_of,
                                             std::span<const std::uint64_t> ids,
                                             InsertionOrder order,
                                             std::stop_token stop);

  // Pruning test with a relative slack that absorbs rounding in the three
  // computed distances of the triangle inequality, so no point at exactly
  // the bound is ever lost.
  static bool BeyondBound(double lower_bound, double bound, double magnitude) {
    return lower_bound > bound + 1e-12 * magnitude;
  }
  // The same for a lower bound derived from a stored parent distance,
  // which is rounded to a float (NodeDistance).
  static bool BeyondNodeBound(double lower_bound, double bound,
                              double magnitude) {
    return lower_bound >
           bound + NodeDistance::kSlack * magnitude + NodeDistance::kTinySlack;
  }

  // The per-search scratch of a tree walk.
  struct SearchState {
    std::vector<SearchCandidate>& stack;
    std::size_t distances;  // computed so far, for the pruning monitor
  };

  template <SearchRules Rules>
  void SearchBelow(NodeIndex node, double distance, NodeIndex first_child,
                   const double* query, Rules& rules, SearchState& state) const;
  template <SearchRules Rules>
  void Scan(const double* query, Rules& rules) const;
  // Bounds the distance from `node` to any point below its children from
  // `first_child` on: max_distance for all of them; for a tail, also the
  // reach of a subtree at the highest remaining child's level.
  double Extent(NodeIndex node, NodeIndex first_child) const {
    const Node& n = nodes_[node];
    if (first_child == n.first_child) return n.max_distance;
    return std::min<double>(
        n.max_distance, CoverScale::SubtreeReach(nodes_[first_child].level));
  }
  template <SearchRules Rules>
  void VisitIds(NodeIndex node, double distance, Rules& rules) const;
  static std::vector<SearchCandidate>& ThreadSearchStack();

  void InsertValidated(std::uint64_t id, Incoming point);
  void AddToTree(std::uint64_t id, Incoming point, ParentSearch how);
  void AddUnindexed(std::uint64_t id, Incoming point);
  void RemoveUnindexed(NodeIndex node);
  void IndexUnindexed(std::size_t count);
  void RaiseRootToCover(double distance, int min_level);
  // The nearest node of level >= min_level within `within` of `point` that
  // covers it at its own level, or kNoNode; see NearestCoveringNode in .cc.
  NodeIndex NearestCoveringNode(const double* point, int min_level,
                                double within, ParentSearch how,
                                double* distance, NodeIndex* same_location);
  NodeIndex NearestCoveringNodeInTree(const double* point, int min_level,
                                      double within, double* distance,
                                      NodeIndex* same_location,
                                      std::size_t* distances);
  // Whether this search walks the tree, per the strategy and `monitor`.
  bool WalkTree(const PruningMonitor& monitor, bool* measure) const {
    switch (strategy_) {
      case Strategy::kTree:
        *measure = false;
        return true;
      case Strategy::kScan:
        *measure = false;
        return false;
      case Strategy::kAdaptive:
        break;
    }
    return monitor.WalkTree(measure);
  }
  static bool CloserCandidate(double distance, NodeIndex node,
                              double best_distance, NodeIndex best);
  NodeIndex NearestCoveringNodeByScan(const double* point, int min_level,
                                      double within, double* distance,
                                      NodeIndex* same_location) const;
  NodeIndex NewNode(std::uint64_t id, const double* row, int level);
  void AddId(NodeIndex node, std::uint64_t id);
  // Hangs `node` (and its subtree) below `parent` at `distance`.
  void Attach(NodeIndex node, NodeIndex parent, double distance);
  void InsertChild(NodeIndex parent, NodeIndex child);
  void GrowMaxDistances(NodeIndex from, NodeIndex subtree);

  void RemoveId(NodeIndex node, std::uint64_t id);
  void RemoveNode(NodeIndex node);
  void Rehome(NodeIndex orphan);
  void TightenMaxDistances(NodeIndex from);
  void FreeNode(NodeIndex node);

  void CompactLayout();
  // A finished k-NN search's answer, for the caps of the next searches.
  void RecordKnnAnswer(std::span<const double> query, std::size_t k,
                       const std::vector<Neighbor>& found) const;
  // The k nearest to `query` from a range search of radius `reach` (a
  // recent answer's, which holds while its points are stored), whose points
  // are kept for the next searches near it (RecentNeighborhoods); false if
  // it found fewer than k.
  bool KnnKeepingNeighborhood(std::span<const double> query, std::size_t k,
                              double reach, std::vector<Neighbor>* out) const;
  // The id intervals: a node's own ids, widened into its ancestors'.
  void WidenIdRanges(NodeIndex from, IdRange ids);
  void RecomputeIdRanges();
  // What `rules` still want from the subtree of `node`.
  template <SearchRules Rules>
  double BoundBelow(const Rules& rules, NodeIndex node) const {
    if constexpr (kBoundsByIds<Rules>) {
      return rules.BoundFor(id_ranges_[node]);
    } else {
      return rules.Bound();
    }
  }
  // A node's fields as Structure and Changes encode them (48 bytes).
  static constexpr std::size_t kEncodedNode = 48;
  static void EncodeNode(const Node& node, ByteWriter& out);
  static Node DecodeNode(ByteReader& in);
  // Locations with several ids as a header lists them: a count u64, then
  // each: node u32 (below `slots`), extra ids u64, the ids u64. False if
  // malformed or a node is listed twice.
  static bool DecodeExtraIds(
      ByteReader& in, std::size_t slots,
      absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>>* out);
  // Calls fn(node, id) for every stored id, in node order.
  template <class Fn>
  void ForEachStoredId(Fn&& fn) const;

  std::size_t dim_;
  std::size_t size_ = 0;
  NodeIndex root_ = kNoNode;
  NodeArray nodes_;
  NodePoints points_;  // node i's point
  // Node i's subtree's ids lie in id_ranges_[i] (removals leave it wide).
  ChunkedRows<IdRange> id_ranges_{1};
  std::vector<NodeIndex> free_nodes_;
  std::vector<NodeIndex> unindexed_;  // nodes kept outside the tree
  IdNodeMap node_of_id_;              // id -> node
  absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>> extra_ids_;

  // CheckInvariants' steps (cover_tree_check.cc), each returning Internal
  // naming the first violation: a node's ids map back to it; the nodes
  // kept outside the tree (their ids added to *ids); the tree from the
  // root — links, nesting, covering, parent distances and descendant
  // bounds (the nodes reached put in *reachable, their ids added to
  // *ids); and separation between the nodes reached.
  absl::Status CheckIdsOf(NodeIndex node) const;
  absl::Status CheckUnindexed(std::size_t* ids) const;
  absl::Status CheckTreeFromRoot(std::vector<NodeIndex>* reachable,
                                 std::size_t* ids) const;
  absl::Status CheckSeparation(const std::vector<NodeIndex>& reachable) const;
  absl::Status CheckIdRanges() const;

  // Insertion scratch, reused across calls (only the writer touches it).
  std::vector<SearchCandidate> insert_stack_;
  std::vector<double> insert_point_;   // a referenced row's coordinates
  std::vector<double> subtree_point_;  // GrowMaxDistances' subtree root
  // Whether walking the tree pays, for searches and for insertions.
  PruningMonitor search_monitor_;
  PruningMonitor insert_monitor_;
  KnnRadiusEstimate knn_radius_;
  RecentKnnAnswers recent_answers_;
  // Every stored point near a few recent queries, for the k-NN searches of
  // a caller moving along (a controller's ticks).
  RecentNeighborhoods neighborhoods_;
  // How far recent insertions found their parent (as a k = 1 estimate).
  KnnRadiusEstimate parent_radius_;
  Strategy strategy_ = Strategy::kAdaptive;
};

class CoverTree::Structure {
 public:
  std::size_t dim() const { return dim_; }
  std::size_t size() const { return size_; }
  // Node slots (free ones included): what EncodeNodes covers.
  std::size_t node_slots() const { return nodes_.size; }

  // The encoding: a header, then the node slots in order in as many pieces
  // as the caller likes (each [first, first + count)).
  //   header: dim u64, size u64, node slots u64, root u32, locations with
  //           several ids u64, each: node u32, extra ids u64, the ids u64...
  //   nodes:  first u64, count u32, then per node: id u64, parent distance
  //           f64, max distance f64, parent u32, first child u32, next
  //           sibling u32, level i32, ids u32, unindexed position u32.
  void EncodeHeader(ByteWriter& out) const;
  void EncodeNodes(std::size_t first, std::size_t count, ByteWriter& out) const;

 private:
  friend class CoverTree;
  friend class Changes;
  std::size_t dim_ = 0;
  std::size_t size_ = 0;
  NodeIndex root_ = kNoNode;
  ChunkedRows<Node>::Shared nodes_;
  std::vector<std::pair<NodeIndex, std::vector<std::uint64_t>>> extra_ids_;
};

// What changed in a tree after a ChangeMark: the tree's nodes and the epoch
// of each one's last write, shared at one moment.
class CoverTree::Changes {
 public:
  // The node slots written after the mark, in order (a look at every
  // slot's epoch).
  std::vector<std::uint32_t> ChangedNodes() const;

  // The encoding, for the ChangedNodes() `changed`: a header, then the
  // changed nodes in as many pieces as the caller likes.
  //   header: dim u64, size u64, node slots u64, root u32, the size u64 and
  //           node slots u64 at the mark, changed nodes u64, changed
  //           locations with several ids u64, each as in Structure's header.
  //   nodes:  count u32, then per node: its slot u32 and its fields as in
  //           Structure's nodes.
  void EncodeHeader(std::span<const std::uint32_t> changed,
                    ByteWriter& out) const;
  void EncodeNodes(std::span<const std::uint32_t> changed,
                   ByteWriter& out) const;

 private:
  friend class CoverTree;
  bool Changed(std::uint32_t slot) const {
    return *stamps_.Row(slot) > since_.epoch;
  }

  Structure now_;
  ChunkedRows<std::uint32_t>::Shared stamps_;
  ChangeMark since_;
};

// Decodes a header and then node pieces in order, and makes the tree. The
// input is checked (indexes in range, one parent per node, children chains
// sorted and acyclic, every id once, the stored parent distances equal to
// the distances between the supplied coordinates): a structure that fails
// is refused, never trusted.
class CoverTree::StructureReader {
 public:
  explicit StructureReader(std::size_t dim) : dim_(dim) {}
  bool ReadHeader(ByteReader& in);
  bool ReadNodes(ByteReader& in);
  // Applies, to a complete structure, the Changes made to its tree after
  // the mark it was saved at: their header, then their node pieces in
  // order. False for changes of another tree state (the size and node
  // slots at their mark differ) or malformed ones; the reader is then
  // spoilt (never complete()).
  bool ReadChangesHeader(ByteReader& in);
  bool ReadChangedNodes(ByteReader& in);
  bool header_read() const { return header_read_; }
  // Whether every node slot the header announced has been read (and every
  // node the changes announced), and nothing was refused.
  bool complete() const {
    return header_read_ && !spoilt_ && nodes_.size() == slots_ &&
           changes_pending_ == 0;
  }
  // The points the tree read holds.
  std::size_t size() const { return size_; }
  // The tree: an owning one, or with `referencing`, one that references
  // rows through that map (see CoverTree(DiagonalMap)). row(id) gives the
  // row of `id` as Insert would be given it (its coordinates, or the raw row
  // a referencing tree keeps pointing at), or nullptr for an id it does not
  // know. InvalidArgument naming the first inconsistency.
  using RowOf = std::function<const double*(std::uint64_t)>;
  absl::StatusOr<CoverTree> Finish(
      const RowOf& row, std::optional<DiagonalMap> referencing = {}) &&;

 private:
  // Checks `tree` (nodes, ids, points in place) and fills what derives
  // from them: the points, the id map, the unindexed and free lists.
  static absl::Status CheckAndIndex(CoverTree& tree, const RowOf& row);
  // CheckAndIndex's steps: each node's links, point and ids (the points,
  // the id map and the free list filled, the unindexed counted); the
  // unindexed list, each position once; the tree from the root, every
  // indexed node reached once (counted in *reached).
  static absl::Status CheckNodes(CoverTree& tree, const RowOf& row,
                                 std::size_t* unindexed);
  static absl::Status CheckNodeIds(CoverTree& tree, NodeIndex node,
                                   const RowOf& row);
  static absl::Status IndexUnindexed(CoverTree& tree, std::size_t unindexed);
  static absl::Status CheckFromTheRoot(const CoverTree& tree,
                                       std::size_t* reached);
  // A read that fails spoils the reader.
  bool Check(bool ok) {
    spoilt_ = spoilt_ || !ok;
    return ok;
  }
  bool ApplyChangedNodes(ByteReader& in);

  std::size_t dim_;
  bool header_read_ = false;
  bool spoilt_ = false;
  // Of changes being applied: nodes still to come, the lowest slot the next
  // may have, and the locations with several ids among them.
  std::size_t changes_pending_ = 0;
  std::size_t next_changed_ = 0;
  absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>> changed_extra_ids_;
  std::size_t size_ = 0;
  std::size_t slots_ = 0;
  NodeIndex root_ = kNoNode;
  NodeArray nodes_;
  absl::flat_hash_map<NodeIndex, std::vector<std::uint64_t>> extra_ids_;
};

}  // namespace streamreg

// The traversal every search runs (the template members above).
#include "core/index/cover_tree_search.h"  // IWYU pragma: export

#endif  // STREAMREG_CORE_INDEX_COVER_TREE_H_
