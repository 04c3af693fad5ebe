#ifndef STREAMREG_CORE_INDEX_NODE_POINTS_H_
#define STREAMREG_CORE_INDEX_NODE_POINTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "core/base/chunked_rows.h"
#include "core/index/diagonal_map.h"
#include "core/index/euclidean_distance.h"

namespace streamreg {

// Where a cover tree keeps its nodes' points, one row per node slot, and
// how it measures distances to them. Two kinds:
//  - owning: a copy of each node's coordinates (dim doubles per node);
//  - referencing: a pointer to a row of raw inputs that someone else keeps
//    unchanged at the same address for as long as the tree holds it (a
//    model's append-only sample store), mapped through a DiagonalMap on
//    every distance — 8 bytes per node instead of 8 * dim. Both give the
//    same distances bit for bit, since the map computes exactly the
//    coordinates an owning tree would be given.
// A row given to Set/Append is the node's coordinates (owning) or its raw
// row (referencing); queries are always in the tree's coordinates.
class NodePoints {
 public:
  explicit NodePoints(std::size_t dim) : dim_(dim), owned_(dim) {}
  explicit NodePoints(DiagonalMap map)
      : dim_(map.dim()), owned_(map.dim()), map_(std::move(map)) {}
  NodePoints(NodePoints&&) noexcept = default;
  NodePoints& operator=(NodePoints&&) noexcept = default;

  // An empty NodePoints of the same kind (and map).
  NodePoints EmptyLike() const {
    return map_.has_value() ? NodePoints(*map_) : NodePoints(dim_);
  }

  bool referencing() const { return map_.has_value(); }
  const std::optional<DiagonalMap>& map() const { return map_; }
  std::size_t dim() const { return dim_; }

  // The row kept for `node`: its coordinates (owning) or the referenced
  // row (nullptr for a free slot).
  const double* Row(std::uint32_t node) const {
    return map_.has_value() ? referenced_[node] : owned_.Row(node);
  }
  // The node's coordinates in the tree's space: its row when owning, else
  // the row mapped into `scratch` (dim values).
  const double* Coordinates(std::uint32_t node, double* scratch) const {
    if (!map_.has_value()) return owned_.Row(node);
    map_->Apply(referenced_[node], scratch);
    return scratch;
  }
  // `row` mapped to the tree's coordinates (copied as is when owning).
  void ToCoordinates(const double* row, double* out) const {
    if (map_.has_value()) {
      map_->Apply(row, out);
    } else {
      std::copy_n(row, dim_, out);
    }
  }

  // Distance from `query` (tree coordinates) to the node's point; +infinity
  // for a free slot.
  [[gnu::always_inline]] double Distance(const double* query,
                                         std::uint32_t node) const {
    if (!map_.has_value())
      return EuclideanDistance(query, owned_.Row(node), dim_);
    const double* row = referenced_[node];
    if (row == nullptr) return std::numeric_limits<double>::infinity();
    return MappedEuclideanDistance(query, row, *map_);
  }
  // Distance(query, node) when at most `limit`, else any value above it
  // (see EuclideanDistanceUpTo).
  [[gnu::always_inline]] double DistanceUpTo(const double* query,
                                             std::uint32_t node,
                                             double limit) const {
    if (!map_.has_value()) {
      return EuclideanDistanceUpTo(query, owned_.Row(node), dim_, limit);
    }
    const double* row = referenced_[node];
    if (row == nullptr) return std::numeric_limits<double>::infinity();
    return MappedEuclideanDistanceUpTo(query, row, *map_, limit);
  }
  // Asks the cache for the node's row ahead of a distance to it (a
  // referenced row lies wherever its owner put it, not near its siblings).
  void Prefetch(std::uint32_t node) const {
    const char* row = reinterpret_cast<const char*>(Row(node));
    if (row == nullptr) return;
    for (std::size_t b = 0; b < dim_ * sizeof(double); b += 64) {
      __builtin_prefetch(row + b);
    }
  }

  // Whether the node's point has exactly the coordinates `point`.
  bool SameCoordinates(const double* point, std::uint32_t node) const {
    if (!map_.has_value()) {
      const double* q = owned_.Row(node);
      for (std::size_t i = 0; i < dim_; ++i) {
        if (point[i] != q[i]) return false;
      }
      return true;
    }
    const double* row = referenced_[node];
    for (std::size_t i = 0; i < dim_; ++i) {
      if (point[i] != map_->Map(row, i)) return false;
    }
    return true;
  }

  // Gives slot `node` (< size()) the row `row`.
  void Set(std::uint32_t node, const double* row) {
    if (map_.has_value()) {
      referenced_[node] = row;
    } else {
      std::copy_n(row, dim_, owned_.Row(node));
    }
  }
  void Append(const double* row) {
    if (map_.has_value()) {
      *referenced_.AppendRow() = row;
    } else {
      std::copy_n(row, dim_, owned_.AppendRow());
    }
  }
  // Appends a free slot.
  void AppendFree() {
    if (map_.has_value()) {
      referenced_.AppendRow();
    } else {
      owned_.AppendRow();
      Clear(static_cast<std::uint32_t>(owned_.size() - 1));
    }
  }
  // Marks a slot free: +infinity coordinates, or no row.
  void Clear(std::uint32_t node) {
    if (map_.has_value()) {
      referenced_[node] = nullptr;
    } else {
      std::fill_n(owned_.Row(node), dim_,
                  std::numeric_limits<double>::infinity());
    }
  }

  void Reserve(std::size_t n) {
    if (map_.has_value()) {
      referenced_.Reserve(n);
    } else {
      owned_.Reserve(n);
    }
  }
  // Bytes held here (not the referenced rows).
  std::size_t MemoryUsage() const {
    return owned_.MemoryUsage() + referenced_.MemoryUsage();
  }

 private:
  std::size_t dim_;
  ChunkedRows<double> owned_;                 // owning: row i, node i
  ChunkedRows<const double*> referenced_{1};  // referencing: node i's row
  std::optional<DiagonalMap> map_;            // set when referencing
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_NODE_POINTS_H_
