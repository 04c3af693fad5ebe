#include "core/concurrent_cover_tree.h"

#include <utility>

namespace streamreg {

ConcurrentCoverTree::ConcurrentCoverTree(std::size_t dim)
    : tree_(std::make_unique<CoverTree>(dim)) {}

ConcurrentCoverTree::ConcurrentCoverTree(CoverTree tree)
    : tree_(std::make_unique<CoverTree>(std::move(tree))) {}

absl::Status ConcurrentCoverTree::Insert(std::uint64_t id,
                                         std::span<const double> point) {
  std::lock_guard writer(writer_);
  std::unique_lock lock(lock_);
  return tree_->Insert(id, point);
}

absl::Status ConcurrentCoverTree::Remove(std::uint64_t id) {
  std::lock_guard writer(writer_);
  std::unique_lock lock(lock_);
  return tree_->Remove(id);
}

absl::Status ConcurrentCoverTree::Knn(std::span<const double> query,
                                      std::size_t k,
                                      std::vector<Neighbor>* out) const {
  std::shared_lock lock(lock_);
  return tree_->Knn(query, k, out);
}

absl::Status ConcurrentCoverTree::Range(std::span<const double> query,
                                        double radius,
                                        std::vector<Neighbor>* out) const {
  std::shared_lock lock(lock_);
  return tree_->Range(query, radius, out);
}

void ConcurrentCoverTree::Rebuild() {
  std::lock_guard writer(writer_);
  // No writer can change tree_ now, and readers only read: no lock needed.
  auto fresh = std::make_unique<CoverTree>(tree_->Rebuilt());
  Swap(fresh);
}

void ConcurrentCoverTree::Replace(CoverTree tree) {
  auto fresh = std::make_unique<CoverTree>(std::move(tree));
  std::lock_guard writer(writer_);
  Swap(fresh);
}

// Swaps `tree` in; on return `tree` holds the old tree, freed by the caller
// after the exclusive lock is gone.
void ConcurrentCoverTree::Swap(std::unique_ptr<CoverTree>& tree) {
  std::unique_lock lock(lock_);
  tree_.swap(tree);
}

std::size_t ConcurrentCoverTree::size() const {
  std::shared_lock lock(lock_);
  return tree_->size();
}

std::size_t ConcurrentCoverTree::MemoryUsage() const {
  std::shared_lock lock(lock_);
  return tree_->MemoryUsage();
}

}  // namespace streamreg
