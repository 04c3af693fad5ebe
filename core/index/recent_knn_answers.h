#ifndef STREAMREG_CORE_INDEX_RECENT_KNN_ANSWERS_H_
#define STREAMREG_CORE_INDEX_RECENT_KNN_ANSWERS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"

namespace streamreg {

// Remembers the last few k-NN answers — each query, its k and how far its
// k-th neighbour was — so that a search near one of them can start with a
// radius cap that holds: the k points that answered query p lie within
// |q - p| + r_k(p) of any q (the triangle inequality), so while they are
// stored, q's k-th neighbour is no farther. A controller's consecutive
// states are such queries, and their cap is nearly the exact k-th distance,
// where KnnRadiusEstimate's slack (twice an average) is what a search's
// tail pays. Speed only: a cap that does not hold (the points were removed
// since) costs one more search, and answers stay exact.
//
// Answers are kept per `source` (an opaque key: the tree or generation they
// were found in; distances in one source's coordinates say nothing about
// another's) and per k. Safe to share between threads; copying copies the
// answers.
class RecentKnnAnswers {
 public:
  // Answers kept: enough for a few callers (a controller's learner and
  // predictor, a rescoring pass) and a few k each.
  static constexpr std::size_t kAnswers = 8;

  RecentKnnAnswers() = default;
  RecentKnnAnswers(const RecentKnnAnswers& other);
  RecentKnnAnswers& operator=(const RecentKnnAnswers& other);

  // The smallest cap the kept answers of `source` for k or more neighbours
  // give a search for the k nearest to `query` (Euclidean); +infinity if
  // there are none. With `kth`, also that answer's own k-th distance
  // r_k(p) (+infinity if none), which says how far the query is from it.
  double Cap(std::span<const double> query, std::size_t k,
             std::uintptr_t source = 0, double* kth = nullptr) const;

  // A finished search of `source` found the k-th neighbour of `query` at
  // `distance`. It replaces the answer of the same source and k nearest to
  // the query if the query lies within that answer's k-th distance (the
  // same caller's next state), the least recently kept answer otherwise.
  void Record(std::span<const double> query, std::size_t k, double distance,
              std::uintptr_t source = 0) const;

 private:
  struct Answer {
    std::uintptr_t source = 0;
    std::size_t k = 0;  // 0: no answer kept here
    double distance = 0.0;
    std::vector<double> query;
    std::uint64_t kept_at = 0;  // when it was kept, to find the oldest
  };

  mutable Mutex mutex_;
  mutable std::array<Answer, kAnswers> answers_ ABSL_GUARDED_BY(mutex_);
  mutable std::uint64_t records_ ABSL_GUARDED_BY(mutex_) = 0;
};

// Runs a k-NN search capped, as CoverTree::Knn and the learner's searches
// do: first at the smaller of `estimate` (KnnRadiusEstimate::Cap) and
// `reach` (RecentKnnAnswers::Cap), then, if that did not hold and the reach
// is wider, at the reach. search(cap) searches and says whether the cap
// held; the result is whether one did (if not, the caller searches
// uncapped). Infinite caps are not tried.
template <class CappedSearch>
bool SearchWithCaps(double estimate, double reach, const CappedSearch& search) {
  double tried = 0.0;
  for (const double cap : {std::min(estimate, reach), reach}) {
    if (!(cap < std::numeric_limits<double>::infinity()) || cap <= tried) {
      continue;
    }
    tried = cap;
    if (search(cap)) return true;
  }
  return false;
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_RECENT_KNN_ANSWERS_H_
