#ifndef STREAMREG_CORE_INDEX_CONCURRENT_COVER_TREE_H_
#define STREAMREG_CORE_INDEX_CONCURRENT_COVER_TREE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/base/writer_priority_mutex.h"
#include "core/index/cover_tree.h"
#include "core/index/neighbor.h"
#include "core/index/queued_write.h"

namespace streamreg {

// A CoverTree shared by many searching threads and the threads that change it.
//
// How searches avoid waiting on long work:
//  - a search holds a shared lock for its own duration only;
//  - Insert and Remove hold the exclusive lock for one tree update (a few
//    microseconds: one root-to-leaf search, or re-homing a removed node's
//    children); the lock gives a waiting writer priority, so searches cannot
//    starve it, and a search waits at most one such update. Updates never
//    grow storage by copying it: nodes and coordinates live in fixed chunks,
//    and the id map is grown on a copy before the lock is taken;
//  - rebuilds build the new tree with no lock held while searches go on
//    against the old one, then swap a pointer under the exclusive lock; the
//    old tree is freed after the lock is released.
// Writers are serialized among themselves by a separate mutex.
//
// No cliffs: a tree grown one point at a time (say a trajectory in time
// order) answers more slowly than one built in a batch — its nodes lie in
// arrival order, not near their siblings. So whenever the tree has grown by
// Options::rebuild_growth since its last build (or lost that share of its
// points), a background thread builds a fresh tree from a copy of the
// points; writes that arrive meanwhile are applied to the live tree and
// queued, replayed on the fresh tree, and then the fresh tree replaces the
// live one. Writers wait only for the copy (O(n d) memory, once per growth
// step) and the last few replayed writes; searches never wait.
class ConcurrentCoverTree {
 public:
  struct Options {
    // Rebuild in the background when the size has grown by this factor
    // since the last build (or removals reached 1 - 1/factor of it).
    double rebuild_growth = 2.0;
    // Trees smaller than this are never rebuilt automatically.
    std::size_t rebuild_min_size = 4096;
    bool auto_rebuild = true;
  };

  explicit ConcurrentCoverTree(std::size_t dim);
  ConcurrentCoverTree(std::size_t dim, Options options);
  explicit ConcurrentCoverTree(CoverTree tree);
  ConcurrentCoverTree(CoverTree tree, Options options);
  ~ConcurrentCoverTree();
  ConcurrentCoverTree(const ConcurrentCoverTree&) = delete;
  ConcurrentCoverTree& operator=(const ConcurrentCoverTree&) = delete;

  absl::Status Insert(std::uint64_t id, std::span<const double> point);
  absl::Status Remove(std::uint64_t id);

  absl::Status Knn(std::span<const double> query, std::size_t k,
                   std::vector<Neighbor>* out) const;
  absl::Status Range(std::span<const double> query, double radius,
                     std::vector<Neighbor>* out) const;
  absl::Status RangeUnordered(std::span<const double> query, double radius,
                              std::vector<Neighbor>* out) const;

  // Runs `fn(const CoverTree&)` under the shared lock (any other read).
  template <class Fn>
  auto Read(Fn&& fn) const {
    SharedLock lock(lock_);
    return fn(*tree_);
  }

  // The tree's structure for a snapshot and a mark of that moment (for the
  // next snapshot's changes), taken together under the writers' lock: no
  // write or rebuild comes between them. Searches wait no longer than for
  // an insertion (the mark: two integers written).
  struct MarkedStructure {
    CoverTree::Structure structure;
    CoverTree::ChangeMark mark;
  };
  MarkedStructure ShareMarkedStructure();
  // Likewise what changed after `since`: none if the tree was replaced
  // since (CoverTree::ShareChangesSince).
  struct MarkedChanges {
    std::optional<CoverTree::Changes> changes;
    CoverTree::ChangeMark mark;
  };
  MarkedChanges ShareMarkedChanges(const CoverTree::ChangeMark& since);
  // A mark of now alone (a tree restored as saved: what a snapshot taken
  // now would hold).
  CoverTree::ChangeMark MarkChanges();

  // Replaces the tree with a batch-built one over the same points, now
  // (the calling writer waits; searches do not).
  void Rebuild();

  // Replaces the tree with `tree` (e.g. built elsewhere in new coordinates).
  void Replace(CoverTree tree);

  // Blocks until no background rebuild is running.
  void WaitForBackgroundRebuild();

  // For a tree about to be replaced by one built elsewhere (MetricIndex's
  // rebuild in new coordinates): a background rebuild in flight is
  // abandoned, without waiting for it, and no other starts until
  // ResumeRebuilds. Two full builds at once would only slow the one that
  // counts.
  void SuspendRebuilds();
  void ResumeRebuilds();

  std::size_t size() const;
  std::size_t MemoryUsage() const;
  // Completed rebuilds, background and explicit.
  std::size_t rebuild_count() const;

 private:
  void Swap(std::unique_ptr<CoverTree>& tree)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_) ABSL_LOCKS_EXCLUDED(lock_);
  void AfterWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_);
  CoverTree::ChangeMark MarkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_)
      ABSL_LOCKS_EXCLUDED(lock_);
  void FinishBackgroundRebuild(std::unique_ptr<CoverTree> fresh)
      ABSL_LOCKS_EXCLUDED(writer_);
  // A background build given up (the tree is going away): no swap.
  void AbandonBackgroundRebuild() ABSL_LOCKS_EXCLUDED(writer_);
  static void Replay(const std::vector<QueuedWrite>& writes, CoverTree& tree);
  void WaitWhileRebuilding() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_);
  // The tree as a writer sees it: only a writer changes tree_, and it holds
  // writer_, so it may read the tree without lock_ (readers only read).
  const CoverTree& WriterView() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return *tree_;
  }

  const Options options_;
  mutable Mutex writer_;  // serializes writers
  mutable WriterPriorityMutex lock_ ABSL_ACQUIRED_AFTER(writer_);
  std::unique_ptr<CoverTree> tree_ ABSL_GUARDED_BY(lock_)
      ABSL_PT_GUARDED_BY(lock_);

  std::size_t built_size_ ABSL_GUARDED_BY(writer_) = 0;  // at the last build
  bool rebuilding_ ABSL_GUARDED_BY(writer_) = false;
  bool suspended_ ABSL_GUARDED_BY(writer_) = false;
  std::vector<QueuedWrite> pending_ ABSL_GUARDED_BY(writer_);  // to replay
  std::size_t rebuilds_ ABSL_GUARDED_BY(writer_) = 0;
  CondVar rebuilt_;  // signalled (under writer_) when one finishes
  std::jthread rebuild_thread_ ABSL_GUARDED_BY(writer_);
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_CONCURRENT_COVER_TREE_H_
