#include "core/index/recent_neighborhoods.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/index/euclidean_distance.h"
#include "core/index/neighbor_sort.h"
#include "core/index/rows_within.h"

namespace streamreg {
namespace {

// The share of a ball's radius left out of the test that it holds, so that
// the rounding of the three distances of the triangle inequality never lets
// a stored point within rho of the query lie just outside the ball.
constexpr double kRoundingMargin = 1e-12;
// How far past a ball's radius a removed point is still looked for.
constexpr double kSlack = 1.0 + 1e-9;

}  // namespace

RecentNeighborhoods::RecentNeighborhoods(const RecentNeighborhoods& other)
    : dim_(other.dim_) {
  *this = other;
}

RecentNeighborhoods& RecentNeighborhoods::operator=(
    const RecentNeighborhoods& other) {
  if (this == &other) return *this;
  // Deep copies: Inserted and Removed change a ball in place, and the two
  // owners' points may part ways.
  std::array<std::shared_ptr<Ball>, kBalls> balls;
  std::uint64_t uses = 0;
  {
    MutexLock lock(&other.mutex_);
    for (std::size_t b = 0; b < kBalls; ++b) {
      if (other.balls_[b] != nullptr) {
        balls[b] = std::make_shared<Ball>(*other.balls_[b]);
      }
    }
    uses = other.uses_;
  }
  MutexLock lock(&mutex_);
  dim_ = other.dim_;
  balls_ = std::move(balls);
  uses_ = uses;
  return *this;
}

bool RecentNeighborhoods::Knn(std::span<const double> query, std::size_t k,
                              double cap, double likely,
                              std::vector<Neighbor>* out) const {
  if (k == 0 || query.size() != dim_) return false;
  double margin = 0.0;
  const std::shared_ptr<const Ball> ball = Nearest(query, &margin);
  if (ball == nullptr || ball->ids.size() < k) return false;
  // Every stored point within `limit` of the query lies in the ball.
  const double limit = std::min(cap, margin - ball->radius * kRoundingMargin);
  // Scanning a ball the k-th neighbour likely lies beyond would be wasted.
  if (!(limit >= likely)) return false;
  out->clear();
  AppendRowsWithin(
      query.data(),
      {ball->coordinates.data(), ball->ids.data(), ball->ids.size(), dim_},
      limit, out);
  // Fewer than k within the limit: the k-th neighbour may lie outside.
  if (out->size() < k) return false;
  KeepNearest(k, out);
  return true;
}

void RecentNeighborhoods::Inserted(std::uint64_t id, const double* point) {
  MutexLock lock(&mutex_);
  for (const std::shared_ptr<Ball>& ball : balls_) {
    if (ball == nullptr ||
        EuclideanDistance(point, ball->center.data(), dim_) > ball->radius) {
      continue;
    }
    ball->ids.push_back(id);
    ball->coordinates.insert(ball->coordinates.end(), point, point + dim_);
  }
}

void RecentNeighborhoods::Removed(std::uint64_t id, const double* point) {
  MutexLock lock(&mutex_);
  for (const std::shared_ptr<Ball>& ball : balls_) {
    // The distance is the one that let the point in, to the bit; the slack
    // only guards that a removed point is never left behind.
    if (ball == nullptr || EuclideanDistance(point, ball->center.data(), dim_) >
                               ball->radius * kSlack) {
      continue;
    }
    const auto found = std::find(ball->ids.begin(), ball->ids.end(), id);
    if (found == ball->ids.end()) continue;
    // The last point takes the removed one's place.
    const std::size_t j = static_cast<std::size_t>(found - ball->ids.begin());
    const std::size_t last = ball->ids.size() - 1;
    ball->ids[j] = ball->ids[last];
    std::copy_n(ball->coordinates.begin() + last * dim_, dim_,
                ball->coordinates.begin() + j * dim_);
    ball->ids.pop_back();
    ball->coordinates.resize(last * dim_);
  }
}

std::size_t RecentNeighborhoods::MemoryUsage() const {
  MutexLock lock(&mutex_);
  std::size_t bytes = 0;
  for (const std::shared_ptr<Ball>& ball : balls_) {
    if (ball == nullptr) continue;
    bytes += sizeof(Ball) + ball->ids.capacity() * sizeof(std::uint64_t) +
             (ball->coordinates.capacity() + ball->center.capacity()) *
                 sizeof(double);
  }
  return bytes;
}

void RecentNeighborhoods::Replace(std::shared_ptr<Ball> ball) const {
  MutexLock lock(&mutex_);
  ball->used_at = ++uses_;
  std::shared_ptr<Ball>* replaced = nullptr;
  double nearest = std::numeric_limits<double>::infinity();
  for (std::shared_ptr<Ball>& kept : balls_) {
    if (kept == nullptr) continue;
    const double apart =
        EuclideanDistance(ball->center.data(), kept->center.data(), dim_);
    if (apart <= kept->radius && apart < nearest) {
      nearest = apart;
      replaced = &kept;
    }
  }
  if (replaced == nullptr) {
    replaced = &balls_[0];
    for (std::shared_ptr<Ball>& kept : balls_) {
      if (kept == nullptr) {
        replaced = &kept;
        break;
      }
      if (kept->used_at < (*replaced)->used_at) replaced = &kept;
    }
  }
  *replaced = std::move(ball);
}

std::shared_ptr<const RecentNeighborhoods::Ball> RecentNeighborhoods::Nearest(
    std::span<const double> query, double* margin) const {
  MutexLock lock(&mutex_);
  const std::shared_ptr<Ball>* best = nullptr;
  double widest = 0.0;  // the radius less the query's distance to the centre
  for (const std::shared_ptr<Ball>& ball : balls_) {
    if (ball == nullptr) continue;
    const double room =
        ball->radius -
        EuclideanDistance(query.data(), ball->center.data(), dim_);
    if (room > widest) {
      widest = room;
      best = &ball;
    }
  }
  if (best == nullptr) return nullptr;
  *margin = widest;
  (*best)->used_at = ++uses_;
  return *best;
}

}  // namespace streamreg
