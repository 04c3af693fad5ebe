#include "core/index/concurrent_cover_tree.h"

#include <algorithm>
#include <utility>

#include "core/base/background_thread.h"

namespace streamreg {

ConcurrentCoverTree::ConcurrentCoverTree(std::size_t dim)
    : ConcurrentCoverTree(dim, Options{}) {}

ConcurrentCoverTree::ConcurrentCoverTree(std::size_t dim, Options options)
    : ConcurrentCoverTree(CoverTree(dim), options) {}

ConcurrentCoverTree::ConcurrentCoverTree(CoverTree tree)
    : ConcurrentCoverTree(std::move(tree), Options{}) {}

ConcurrentCoverTree::ConcurrentCoverTree(CoverTree tree, Options options)
    : options_(options),
      tree_(std::make_unique<CoverTree>(std::move(tree))),
      built_size_(tree_->size()) {}

ConcurrentCoverTree::~ConcurrentCoverTree() {
  std::jthread finished;
  {
    MutexLock writer(&writer_);
    rebuild_thread_.request_stop();  // a build in progress is abandoned
    WaitWhileRebuilding();
    finished = std::move(rebuild_thread_);
  }
  if (finished.joinable()) finished.join();
}

absl::Status ConcurrentCoverTree::Insert(std::uint64_t id,
                                         std::span<const double> point) {
  MutexLock writer(&writer_);
  // Rehash on a copy, not under the lock (see CoverTree::id_map).
  IdNodeMap::SparseMap grown;
  const bool grow = WriterView().id_map().WouldRehash(id);
  if (grow) grown = WriterView().id_map().SparseGrown();
  absl::Status status;
  {
    ExclusiveLock lock(lock_);
    if (grow) tree_->id_map().AdoptSparse(grown);
    status = tree_->Insert(id, point);
  }
  if (!status.ok()) return status;
  if (rebuilding_) {
    // A referencing tree's rows stay where they are; others are copied.
    pending_.push_back(
        QueuedWrite::Insertion(id, point, WriterView().referencing()));
  }
  AfterWrite();
  return absl::OkStatus();
}

absl::Status ConcurrentCoverTree::Remove(std::uint64_t id) {
  MutexLock writer(&writer_);
  absl::Status status;
  {
    ExclusiveLock lock(lock_);
    status = tree_->Remove(id);
  }
  if (!status.ok()) return status;
  if (rebuilding_) pending_.push_back(QueuedWrite::Removal(id));
  AfterWrite();
  return absl::OkStatus();
}

// The writers' lock keeps the tree (no write, no rebuild's swap) from the
// share to the mark. Sharing reads the tree beside searches; marking
// starts an epoch in its node array, which no search reads, under the
// exclusive lock for form's sake (held for two integer writes).
ConcurrentCoverTree::MarkedStructure
ConcurrentCoverTree::ShareMarkedStructure() {
  MutexLock writer(&writer_);
  MarkedStructure marked;
  {
    SharedLock lock(lock_);
    marked.structure = tree_->ShareStructure();
  }
  marked.mark = MarkLocked();
  return marked;
}

ConcurrentCoverTree::MarkedChanges ConcurrentCoverTree::ShareMarkedChanges(
    const CoverTree::ChangeMark& since) {
  MutexLock writer(&writer_);
  MarkedChanges marked;
  {
    SharedLock lock(lock_);
    marked.changes = tree_->ShareChangesSince(since);
  }
  marked.mark = MarkLocked();
  return marked;
}

CoverTree::ChangeMark ConcurrentCoverTree::MarkChanges() {
  MutexLock writer(&writer_);
  return MarkLocked();
}

CoverTree::ChangeMark ConcurrentCoverTree::MarkLocked() {
  ExclusiveLock lock(lock_);
  return tree_->MarkChanges();
}

// Starts a background rebuild when the tree has drifted far enough from its
// last build. Called with writer_ held.
void ConcurrentCoverTree::AfterWrite() {
  if (!options_.auto_rebuild || rebuilding_ || suspended_) return;
  const CoverTree& tree = WriterView();
  const std::size_t size = tree.size();
  const double growth = options_.rebuild_growth;
  const bool grew = size >= options_.rebuild_min_size &&
                    static_cast<double>(size) >= growth * built_size_;
  const bool shrank = built_size_ >= options_.rebuild_min_size &&
                      static_cast<double>(size) * growth <= built_size_;
  if (!grew && !shrank) return;

  // The copy is the only O(n) work a writer does for a background rebuild.
  CoverTree::Points points = tree.CopyPoints();
  rebuilding_ = true;
  if (rebuild_thread_.joinable()) rebuild_thread_.join();  // long finished
  // An empty tree of the same kind, to build like: the live one changes.
  rebuild_thread_ =
      std::jthread([this, like = *tree.BuildLike({}),
                    points = std::move(points)](std::stop_token stop) {
        BeginBackgroundThread("tree-rebuild");
        absl::StatusOr<CoverTree> fresh =
            like.BuildLike(points, std::move(stop));
        if (!fresh.ok()) {
          AbandonBackgroundRebuild();
          return;
        }
        FinishBackgroundRebuild(std::make_unique<CoverTree>(*std::move(fresh)));
      });
}

void ConcurrentCoverTree::AbandonBackgroundRebuild() {
  MutexLock writer(&writer_);
  pending_.clear();
  rebuilding_ = false;
  rebuilt_.SignalAll();
}

// On the rebuild thread: catch the fresh tree up with the writes made since
// the copy, swap it in, and free the old tree outside every lock. The fresh
// tree is this thread's alone until the swap, so most of the catching up
// happens without the writer lock; writers wait only for the last few
// writes (or, if they outpace the replay, for one bounded round).
void ConcurrentCoverTree::FinishBackgroundRebuild(
    std::unique_ptr<CoverTree> fresh) {
  constexpr std::size_t kReplayUnderLock = 256;
  constexpr int kLockFreeRounds = 8;
  std::vector<QueuedWrite> batch;
  for (int round = 0; round < kLockFreeRounds; ++round) {
    {
      MutexLock writer(&writer_);
      if (pending_.size() <= kReplayUnderLock) break;
      batch.swap(pending_);
    }
    Replay(batch, *fresh);
    batch.clear();
  }
  {
    MutexLock writer(&writer_);
    Replay(pending_, *fresh);
    pending_.clear();
    built_size_ = fresh->size();
    Swap(fresh);
    rebuilding_ = false;
    ++rebuilds_;
    rebuilt_.SignalAll();
  }
  fresh.reset();  // the old tree
}

// Applies writes that succeeded on the live tree to `tree`, which held the
// same points when they were made, so they succeed again.
void ConcurrentCoverTree::Replay(const std::vector<QueuedWrite>& writes,
                                 CoverTree& tree) {
  for (const QueuedWrite& write : writes) {
    if (write.removal()) {
      (void)tree.Remove(write.id());
    } else {
      (void)tree.Insert(write.id(), write.point(tree.dim()));
    }
  }
}

void ConcurrentCoverTree::SuspendRebuilds() {
  MutexLock writer(&writer_);
  suspended_ = true;
  // The build gives up within a few thousand insertions, and its thread
  // then drops the queued writes (AbandonBackgroundRebuild).
  if (rebuilding_) rebuild_thread_.request_stop();
}

void ConcurrentCoverTree::ResumeRebuilds() {
  MutexLock writer(&writer_);
  suspended_ = false;
  AfterWrite();
}

void ConcurrentCoverTree::WaitWhileRebuilding() {
  while (rebuilding_) rebuilt_.Wait(&writer_);
}

void ConcurrentCoverTree::WaitForBackgroundRebuild() {
  MutexLock writer(&writer_);
  WaitWhileRebuilding();
}

absl::Status ConcurrentCoverTree::Knn(std::span<const double> query,
                                      std::size_t k,
                                      std::vector<Neighbor>* out) const {
  SharedLock lock(lock_);
  return tree_->Knn(query, k, out);
}

absl::Status ConcurrentCoverTree::Range(std::span<const double> query,
                                        double radius,
                                        std::vector<Neighbor>* out) const {
  SharedLock lock(lock_);
  return tree_->Range(query, radius, out);
}

absl::Status ConcurrentCoverTree::RangeUnordered(
    std::span<const double> query, double radius,
    std::vector<Neighbor>* out) const {
  SharedLock lock(lock_);
  return tree_->RangeUnordered(query, radius, out);
}

void ConcurrentCoverTree::Rebuild() {
  std::unique_ptr<CoverTree> fresh;
  {
    MutexLock writer(&writer_);
    WaitWhileRebuilding();
    fresh = std::make_unique<CoverTree>(WriterView().Rebuilt());
    built_size_ = fresh->size();
    Swap(fresh);
    ++rebuilds_;
  }
  fresh.reset();  // the old tree, freed outside every lock
}

void ConcurrentCoverTree::Replace(CoverTree tree) {
  auto fresh = std::make_unique<CoverTree>(std::move(tree));
  {
    MutexLock writer(&writer_);
    WaitWhileRebuilding();
    built_size_ = fresh->size();
    Swap(fresh);
  }
  fresh.reset();
}

// Swaps `tree` in; on return `tree` holds the old tree, for the caller to
// free once no lock is held.
void ConcurrentCoverTree::Swap(std::unique_ptr<CoverTree>& tree) {
  ExclusiveLock lock(lock_);
  tree_.swap(tree);
}

std::size_t ConcurrentCoverTree::size() const {
  SharedLock lock(lock_);
  return tree_->size();
}

std::size_t ConcurrentCoverTree::MemoryUsage() const {
  SharedLock lock(lock_);
  return tree_->MemoryUsage();
}

std::size_t ConcurrentCoverTree::rebuild_count() const {
  MutexLock writer(&writer_);
  return rebuilds_;
}

}  // namespace streamreg
