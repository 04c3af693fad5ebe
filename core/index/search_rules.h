#ifndef STREAMREG_CORE_INDEX_SEARCH_RULES_H_
#define STREAMREG_CORE_INDEX_SEARCH_RULES_H_

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/index/id_range.h"
#include "core/index/neighbor.h"
#include "core/index/neighbor_sort.h"

namespace streamreg {

// What a search wants, apart from how a tree is walked (mlpack's "rules"):
// Bound() is the largest distance still of interest — the traversal prunes
// every subtree that lies wholly beyond it — and Visit() receives each stored
// point the traversal reaches with its exact distance to the query. Points
// beyond Bound() may still be visited; rules must filter them.
template <class R>
concept SearchRules = requires(R rules, std::uint64_t id, double distance) {
  { rules.Bound() } -> std::convertible_to<double>;
  rules.Visit(id, distance);
};

// Whether rules declare that Bound() never changes during a search
// (`static constexpr bool kFixedBound = true;`): traversals may then visit
// subtrees in any order.
template <class R>
inline constexpr bool kHasFixedBound = requires {
  requires R::kFixedBound;
};

// Whether rules bound some subtrees tighter than Bound() by the ids they
// hold (`double BoundFor(IdRange ids) const`: the largest distance still of
// interest for points whose ids all lie in `ids`). Traversals then prune a
// subtree with the bound for the interval of its ids.
template <class R>
inline constexpr bool kBoundsByIds = requires(const R& rules, IdRange ids) {
  { rules.BoundFor(ids) } -> std::convertible_to<double>;
};

// The k nearest points, ties at equal distance broken by the smaller id.
// Keeps a max-heap of the best k seen so far; Bound() is the k-th distance.
//
// With a finite `radius_cap`, Bound() never exceeds it, so the traversal
// prunes as tightly from the first node as a range search would. The result
// is then exact if it holds min(k, n) points and the last is within the cap
// (CapHeld()): any point nearer than the k-th was within the cap, so no
// pruning skipped it. Otherwise the search must be repeated without a cap.
class KnnRules {
 public:
  // `out` receives the result (sorted by distance, then id) on Finish().
  KnnRules(std::size_t k, std::vector<Neighbor>* out,
           double radius_cap = std::numeric_limits<double>::infinity())
      : k_(k), radius_cap_(radius_cap), heap_(out) {
    heap_->clear();
  }

  double Bound() const {
    return heap_->size() < k_ ? radius_cap_
                              : std::min(radius_cap_, heap_->front().distance);
  }

  // After Finish(): whether the capped search found the exact answer in a
  // set of `n` points.
  bool CapHeld(std::size_t n) const {
    return heap_->size() == std::min(k_, n) &&
           (heap_->empty() || heap_->back().distance <= radius_cap_);
  }

  // Most visits are rejected: that test stays inline, the heap work not.
  void Visit(std::uint64_t id, double distance) {
    if (Rejects(distance)) return;
    Admit({id, distance});
  }

  // Whether a point at `distance` would surely be turned away.
  bool Rejects(double distance) const {
    return heap_->size() == k_ &&
           (k_ == 0 || distance > heap_->front().distance);
  }

  void Finish() { SortNeighbors(*heap_); }

 private:
  [[gnu::noinline]] void Admit(const Neighbor& candidate) {
    if (heap_->size() < k_) {
      heap_->push_back(candidate);
      std::push_heap(heap_->begin(), heap_->end(), NeighborOrder());
    } else if (NeighborLess(candidate, heap_->front())) {
      ReplaceLargest(candidate);
    }
  }

  // The heap's largest (its front) replaced by a smaller `candidate`, the
  // heap restored by one walk down from the front (std::pop_heap and
  // std::push_heap would walk it twice).
  void ReplaceLargest(const Neighbor& candidate) {
    std::vector<Neighbor>& heap = *heap_;
    const std::size_t size = heap.size();
    std::size_t hole = 0;
    for (std::size_t child = 1; child < size; child = 2 * hole + 1) {
      if (child + 1 < size && NeighborLess(heap[child], heap[child + 1])) {
        ++child;
      }
      if (!NeighborLess(candidate, heap[child])) break;
      heap[hole] = heap[child];
      hole = child;
    }
    heap[hole] = candidate;
  }

  std::size_t k_;
  double radius_cap_;
  std::vector<Neighbor>* heap_;
};

// The k nearest of the points `excluded(id)` does not reject, as KnnRules
// finds them (with its `radius_cap`); `excluded` is asked only for points
// near enough to enter.
template <class Excluded>
class FilteredKnnRules {
 public:
  FilteredKnnRules(std::size_t k, std::vector<Neighbor>* out,
                   const Excluded& excluded,
                   double radius_cap = std::numeric_limits<double>::infinity())
      : kept_(k, out, radius_cap), excluded_(excluded) {}

  double Bound() const { return kept_.Bound(); }
  bool CapHeld(std::size_t n) const { return kept_.CapHeld(n); }

  void Visit(std::uint64_t id, double distance) {
    if (!kept_.Rejects(distance) && !excluded_(id)) kept_.Visit(id, distance);
  }

  void Finish() { kept_.Finish(); }

 private:
  KnnRules kept_;
  const Excluded& excluded_;
};

// Any rules (`inner`) applied under a metric other than the tree's:
// `distance(id)` gives a visited point's distance under it, and that
// distance is at least `lower_factor` times the tree's distance to the
// point. Bound() is inner's bound divided by the factor, so every subtree
// the traversal prunes lies beyond inner's bound under the metric too, and
// a point whose tree distance alone puts it beyond is never rescored: inner
// sees exactly what a traversal under the metric would show it. (GLML's
// per-query metric, whose least singular value is the factor.) The factor
// is shrunk by 1e-9 of itself, so that rounding in the two distances can
// only widen the search.
template <class Inner, class Distance>
class RescoredRules {
 public:
  RescoredRules(Inner& inner, Distance& distance, double lower_factor)
      : inner_(inner),
        distance_(distance),
        lower_factor_(lower_factor * (1.0 - 1e-9)) {}

  double Bound() const { return inner_.Bound() / lower_factor_; }
  double BoundFor(IdRange ids) const requires kBoundsByIds<Inner> {
    return inner_.BoundFor(ids) / lower_factor_;
  }

  void Visit(std::uint64_t id, double tree_distance) {
    if (tree_distance * lower_factor_ > inner_.Bound()) return;
    inner_.Visit(id, distance_(id));
  }

 private:
  Inner& inner_;
  Distance& distance_;  // may keep scratch space
  double lower_factor_;
};

// In one traversal, the k nearest points (`all`) and the k nearest of the
// points `excluded(id)` does not reject (`kept`), each as KnnRules finds
// them. The bound is the wider of the two, so a search visits about what a
// k-NN search over the kept points alone would; `excluded` is asked only for
// points near enough to enter `kept`. With a finite `radius_cap` both heaps
// are capped as in KnnRules: the answer is exact if KeptCapHeld() (then
// `all` is too: its k-th distance is at most kept's), else the search must
// be repeated without the cap.
//
// `excluded_run` names an interval of ids that `excluded` rejects, every
// one (a model's last samples, stored in consecutive slots): a subtree whose
// ids all lie in it can hold nothing for `kept`, so it is bounded by `all`
// alone (BoundFor). On a trajectory, where the nearest points are the
// excluded recent ones, the traversal then skips them instead of measuring
// each on its way to k kept points.
template <class Excluded>
class SplitKnnRules {
 public:
  SplitKnnRules(std::size_t k, std::vector<Neighbor>* all,
                std::vector<Neighbor>* kept, const Excluded& excluded,
                double radius_cap = std::numeric_limits<double>::infinity(),
                IdRange excluded_run = {})
      : k_(k),
        all_(k, all, radius_cap),
        kept_(k, kept, excluded, radius_cap),
        excluded_run_(excluded_run) {}

  // After Finish(): whether a capped search found k kept points within the
  // cap.
  bool KeptCapHeld() const { return kept_.CapHeld(k_); }

  double Bound() const { return std::max(all_.Bound(), kept_.Bound()); }
  double BoundFor(IdRange ids) const {
    return ids.Within(excluded_run_) ? all_.Bound() : Bound();
  }

  void Visit(std::uint64_t id, double distance) {
    all_.Visit(id, distance);
    kept_.Visit(id, distance);
  }

  void Finish() {
    all_.Finish();
    kept_.Finish();
  }

 private:
  std::size_t k_;
  KnnRules all_;
  FilteredKnnRules<Excluded> kept_;
  IdRange excluded_run_;
};

// Every point within `radius` of the query (distance <= radius), in the
// order the traversal reaches them.
class RangeRules {
 public:
  static constexpr bool kFixedBound = true;

  RangeRules(double radius, std::vector<Neighbor>* out)
      : radius_(radius), out_(out) {
    out_->clear();
  }

  double Bound() const { return radius_; }

  void Visit(std::uint64_t id, double distance) {
    if (distance <= radius_) out_->push_back({id, distance});
  }

 private:
  double radius_;
  std::vector<Neighbor>* out_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_SEARCH_RULES_H_
