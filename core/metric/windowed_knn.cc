#include "core/metric/windowed_knn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "Eigen/Core"
#include "Eigen/Eigenvalues"
#include "core/base/parallel_parts.h"
#include "core/index/cover_tree.h"
#include "core/index/euclidean_distance.h"
#include "core/index/search_rules.h"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;

// The leading axes a candidate's lower bound is read on.
constexpr Eigen::Index kAxes = 4;

// Below this many points the walk, above it a cover tree: on the arm's
// samples (21 dimensions, k = 32, a window of 200; streamreg-bench-mlkr)
// the walk took 9, 15, 26 and 46 ms at 1,024, 1,500, 2,048 and 2,500
// points, the tree 25, 43, 43-52 and 53; at 3,000 the walk 68, the tree 64.
constexpr std::size_t kWalkBelow = 2500;

// The points' leading principal axes (the eigenvectors of their
// covariance with the largest eigenvalues, orthonormal: dim x count) and
// their mean.
struct Axes {
  Eigen::MatrixXd directions;
  Eigen::VectorXd mean;
};

Axes PrincipalAxes(const ConstRowMap& points, Eigen::Index count) {
  Axes axes;
  axes.mean = points.colwise().mean().transpose();
  const RowMatrix centred = points.rowwise() - axes.mean.transpose();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(
      centred.transpose() * centred);
  // Ascending eigenvalues: the last columns lead.
  axes.directions = eigen.eigenvectors().rightCols(count).rowwise().reverse();
  if (eigen.info() != Eigen::Success || !axes.directions.allFinite()) {
    axes.directions = Eigen::MatrixXd::Identity(points.cols(), count);
  }
  return axes;
}

// Runs search(i, &found) for every point i (found: its list, sorted) on
// `threads` threads, and packs the lists.
template <class Search>
NeighborLists EachPointsNearest(std::size_t n, std::size_t k,
                                std::size_t threads, const Search& search) {
  std::vector<std::uint32_t> listed(n * k);
  std::vector<std::size_t> counts(n, 0);
  ParallelFor(n, std::max<std::size_t>(threads, 1), [&](std::size_t i) {
    thread_local std::vector<Neighbor> found;
    search(i, &found);
    for (const Neighbor& neighbor : found) {
      listed[i * k + counts[i]++] = static_cast<std::uint32_t>(neighbor.id);
    }
  });
  NeighborLists out;
  out.begin.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    out.ids.insert(out.ids.end(), listed.begin() + i * k,
                   listed.begin() + i * k + counts[i]);
    out.begin[i + 1] = out.ids.size();
  }
  return out;
}

bool Eligible(std::size_t i, std::size_t j, std::size_t window) {
  return (i > j ? i - j : j - i) > window;
}

// The walk over the points sorted along their principal axis.
NeighborLists Walk(std::span<const double> points, std::size_t dim,
                   std::size_t n, std::size_t k, std::size_t window,
                   std::size_t threads) {
  const auto rows = static_cast<Eigen::Index>(n);
  const auto cols = static_cast<Eigen::Index>(dim);
  const ConstRowMap matrix(points.data(), rows, cols);
  // Each point's coordinates on the leading axes: the first orders the
  // walk, all of them bound a candidate's distance from below.
  const Eigen::Index count = std::min<Eigen::Index>(kAxes, cols);
  const Axes axes = PrincipalAxes(matrix, count);
  const RowMatrix projected =
      (matrix.rowwise() - axes.mean.transpose()) * axes.directions;
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return projected(a, 0) < projected(b, 0);
  });
  // The projections in walking order, contiguous; and each point's place.
  RowMatrix walk(rows, count);
  std::vector<std::size_t> place(n);
  for (std::size_t s = 0; s < n; ++s) {
    walk.row(static_cast<Eigen::Index>(s)) = projected.row(order[s]);
    place[order[s]] = s;
  }
  // The rounding in two projections is at most about (dim + 1) eps
  // |z - mean| each; the bound leaves a margin far above it, so that no
  // point whose distance could be at or below the k-th is passed over.
  double largest = 0.0;
  for (Eigen::Index i = 0; i < rows; ++i) {
    largest = std::max(largest, (matrix.row(i).transpose() - axes.mean).norm());
  }
  const double margin = 1e-12 * (largest + axes.mean.norm());
  return EachPointsNearest(
      n, k, threads, [&](std::size_t i, std::vector<Neighbor>* found) {
        KnnRules rules(k, found);
        const double* point = points.data() + i * dim;
        const double* own = walk.data() + place[i] * count;
        std::size_t below = place[i];      // the next candidate is below - 1
        std::size_t above = place[i] + 1;  // the next candidate is above
        constexpr double kNone = std::numeric_limits<double>::infinity();
        for (;;) {
          const bool has_below = below > 0;
          const bool has_above = above < n;
          if (!has_below && !has_above) break;
          const double gap_below =
              has_below ? own[0] - walk(static_cast<Eigen::Index>(below - 1), 0)
                        : kNone;
          const double gap_above =
              has_above ? walk(static_cast<Eigen::Index>(above), 0) - own[0]
                        : kNone;
          // The nearer side first; each step moves one side on, so the
          // walk ends even on values that do not compare.
          const bool from_below = has_below && !(gap_above < gap_below);
          const double gap = from_below ? gap_below : gap_above;
          const double limit = rules.Bound() * (1.0 + 1e-9) + margin;
          if (gap > limit) break;
          const std::size_t s = from_below ? --below : above++;
          const std::size_t j = order[s];
          if (!Eligible(i, j, window)) continue;
          const double* other = walk.data() + s * count;
          double lower = 0.0;
          for (Eigen::Index r = 0; r < count; ++r) {
            const double difference = own[r] - other[r];
            lower += difference * difference;
          }
          if (lower > limit * limit) continue;
          rules.Visit(j, EuclideanDistanceUpTo(point, points.data() + j * dim,
                                               dim, rules.Bound()));
        }
        rules.Finish();
      });
}

// A cover tree over the points, searched from each.
NeighborLists TreeSearch(std::span<const double> points, std::size_t dim,
                         std::size_t n, std::size_t k, std::size_t window,
                         std::size_t threads) {
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  const absl::StatusOr<CoverTree> tree = CoverTree::Build(dim, points, ids);
  if (!tree.ok()) {  // not reached: the points are finite
    return NeighborLists{std::vector<std::size_t>(n + 1, 0), {}};
  }
  return EachPointsNearest(
      n, k, threads, [&](std::size_t i, std::vector<Neighbor>* found) {
        const auto excluded = [i, window](std::uint64_t j) {
          return !Eligible(i, j, window);
        };
        FilteredKnnRules rules(k, found, excluded);
        tree->Search(points.data() + i * dim, rules);
        rules.Finish();
      });
}

}  // namespace

NeighborLists WindowedKnn(std::span<const double> points, std::size_t dim,
                          std::size_t k, std::size_t window,
                          std::size_t threads) {
  const std::size_t n = dim == 0 ? 0 : points.size() / dim;
  if (n == 0 || k == 0) {
    return NeighborLists{std::vector<std::size_t>(n + 1, 0), {}};
  }
  return n < kWalkBelow ? Walk(points, dim, n, k, window, threads)
                        : TreeSearch(points, dim, n, k, window, threads);
}

}  // namespace streamreg
