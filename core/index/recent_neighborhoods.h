#ifndef STREAMREG_CORE_INDEX_RECENT_NEIGHBORHOODS_H_
#define STREAMREG_CORE_INDEX_RECENT_NEIGHBORHOODS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/index/neighbor.h"

namespace streamreg {

// Every stored point within a radius R of a few recent queries — their ids
// and coordinates — so that the k-NN search of a query q near one of them
// needs no tree walk: if the k nearest of a ball's points to q lie within
// rho and |q - p| + rho <= R (p the ball's centre), every stored point
// within rho of q lies in the ball (the triangle inequality), so those k
// are q's k nearest of all, the tree's answer to the bit (the same
// distances, ties broken by id). A controller's consecutive states are such
// queries: one range search makes a ball that answers the ticks after it
// until the state has moved R - rho away.
//
// The owner keeps the balls exact: Inserted and Removed are called for
// every change of the stored points (by the writer, which no search runs
// beside); a new set of points (a rebuild, a restore) starts with none.
// Searches may run in parallel (const calls): the balls are shared
// pointers, taken under a short lock and read without it.
class RecentNeighborhoods {
 public:
  // Balls kept: a few callers at once (a controller's predictor and its
  // learner, several clients' streams).
  static constexpr std::size_t kBalls = 8;

  explicit RecentNeighborhoods(std::size_t dim) : dim_(dim) {}
  RecentNeighborhoods(const RecentNeighborhoods& other);
  RecentNeighborhoods& operator=(const RecentNeighborhoods& other);

  // The k nearest stored points to `query` (dim() coordinates) into `out`,
  // sorted by (distance, id), if a kept ball holds them; false (and `out`
  // unspecified) if none does. `cap` bounds the k-th distance where known
  // (RecentKnnAnswers::Cap; +infinity if not), so that fewer points are
  // measured in full; a ball that does not reach `likely` (a guess at the
  // k-th distance, 0 for none) past the query is not scanned.
  bool Knn(std::span<const double> query, std::size_t k, double cap,
           double likely, std::vector<Neighbor>* out) const;

  // Keeps a ball around `center`: `points` are every stored point within
  // `radius` of it (a range search's answer, any order), point_of(id) their
  // coordinates. It replaces the kept ball whose centre is nearest the new
  // one if that lies within its radius (the same caller's earlier ball),
  // the least recently used ball otherwise.
  template <class PointOf>
  void Keep(std::span<const double> center, double radius,
            std::span<const Neighbor> points, PointOf&& point_of) const {
    auto ball = std::make_shared<Ball>();
    ball->center.assign(center.begin(), center.end());
    ball->radius = radius;
    ball->ids.reserve(points.size());
    ball->coordinates.reserve(points.size() * dim_);
    for (const Neighbor& point : points) {
      const double* row = point_of(point.id);
      ball->ids.push_back(point.id);
      ball->coordinates.insert(ball->coordinates.end(), row, row + dim_);
    }
    Replace(std::move(ball));
  }

  // A point was stored (`point` its dim() coordinates): it joins every
  // ball that it lies in.
  void Inserted(std::uint64_t id, const double* point);
  // A point was removed: it leaves every ball that it lay in.
  void Removed(std::uint64_t id, const double* point);

  std::size_t dim() const { return dim_; }
  // Bytes the kept balls hold.
  std::size_t MemoryUsage() const;

 private:
  struct Ball {
    std::vector<double> center;
    double radius = 0.0;
    std::vector<std::uint64_t> ids;
    std::vector<double> coordinates;  // [j * dim + i]
    std::uint64_t used_at = 0;        // to find the least recently used
  };

  void Replace(std::shared_ptr<Ball> ball) const;
  // The kept ball whose centre leaves `query` the widest margin within it
  // (its radius less the query's distance to its centre, into `margin`),
  // or null; marks it used.
  std::shared_ptr<const Ball> Nearest(std::span<const double> query,
                                      double* margin) const;

  std::size_t dim_;
  mutable Mutex mutex_;
  mutable std::array<std::shared_ptr<Ball>, kBalls> balls_
      ABSL_GUARDED_BY(mutex_);
  mutable std::uint64_t uses_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_RECENT_NEIGHBORHOODS_H_
