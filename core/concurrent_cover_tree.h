#ifndef STREAMREG_CORE_CONCURRENT_COVER_TREE_H_
#define STREAMREG_CORE_CONCURRENT_COVER_TREE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "core/cover_tree.h"
#include "core/neighbor.h"
#include "core/writer_priority_mutex.h"

namespace streamreg {

// A CoverTree shared by many searching threads and the threads that change it.
//
// How searches avoid waiting on long work:
//  - a search holds a shared lock for its own duration only;
//  - Insert and Remove hold the exclusive lock for one tree update (a few
//    microseconds: one root-to-leaf descent, or re-homing a removed node's
//    children); the lock gives a waiting writer priority, so searches cannot
//    starve it, and a search waits at most one such update;
//  - Rebuild and Replace build the new tree with no lock held while searches
//    go on against the old one, then swap a pointer under the exclusive lock;
//    the old tree is freed after the lock is released.
// Writers are serialized among themselves by a separate mutex, so a rebuild
// reads the current tree without blocking searches.
class ConcurrentCoverTree {
 public:
  explicit ConcurrentCoverTree(std::size_t dim);
  explicit ConcurrentCoverTree(CoverTree tree);

  absl::Status Insert(std::uint64_t id, std::span<const double> point);
  absl::Status Remove(std::uint64_t id);

  absl::Status Knn(std::span<const double> query, std::size_t k,
                   std::vector<Neighbor>* out) const;
  absl::Status Range(std::span<const double> query, double radius,
                     std::vector<Neighbor>* out) const;

  // Runs `fn(const CoverTree&)` under the shared lock (any other read).
  template <class Fn>
  auto Read(Fn&& fn) const {
    std::shared_lock lock(lock_);
    return fn(*tree_);
  }

  // Replaces the tree with a batch-built one over the same points.
  void Rebuild();

  // Replaces the tree with `tree` (e.g. built elsewhere in new coordinates).
  void Replace(CoverTree tree);

  std::size_t size() const;
  std::size_t MemoryUsage() const;

 private:
  void Swap(std::unique_ptr<CoverTree>& tree);

  std::mutex writer_;                 // serializes writers
  mutable WriterPriorityMutex lock_;  // guards tree_ against readers
  std::unique_ptr<CoverTree> tree_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_CONCURRENT_COVER_TREE_H_
