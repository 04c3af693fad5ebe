#include "core/model/metric_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/background_thread.h"

namespace streamreg {

namespace {

// An empty tree in the coordinates of `transform`, referencing rows or not.
CoverTree EmptyTree(const MetricTransform& transform, bool references) {
  return references ? CoverTree(transform.diagonal_map())
                    : CoverTree(transform.dim());
}

}  // namespace

MetricIndex::MetricIndex(MetricTransform transform)
    : MetricIndex(std::move(transform), RowReferences{}) {}

MetricIndex::MetricIndex(MetricTransform transform, RowReferences references)
    : references_(std::move(references)),
      live_(std::make_shared<Generation>(
          transform, EmptyTree(transform, References(transform, 0)))) {}

MetricIndex::~MetricIndex() {
  builder_.request_stop();  // a build in progress is abandoned
  if (builder_.joinable()) builder_.join();
  if (reaper_.joinable()) reaper_.join();
}

void MetricIndex::Retire(std::shared_ptr<Generation> old) {
  if (reaper_.joinable()) reaper_.join();  // long finished
  reaper_ = std::thread([old = std::move(old)]() mutable { old.reset(); });
}

std::shared_ptr<const MetricIndex::Generation> MetricIndex::current() const {
  MutexLock lock(&current_mutex_);
  return live_;
}

void MetricIndex::Apply(Generation& generation, std::uint64_t slot,
                        std::span<const double> x, bool replay) const {
  // A replayed write may find its effect already in the copied rows; it
  // then replaces the slot's point (idempotent) instead of failing.
  if (replay && generation.tree.Read([&](const CoverTree& tree) {
        return tree.Contains(slot);
      })) {
    generation.tree.Remove(slot).IgnoreError();
  }
  if (x.empty()) {
    if (!replay) {
      if (absl::Status status = generation.tree.Remove(slot); !status.ok()) {
        Fail(status);
      }
    }
    return;
  }
  absl::Status status;
  if (generation.references_rows) {
    status = generation.tree.Insert(slot, x);
  } else {
    thread_local std::vector<double> z;
    z.resize(generation.transform.dim());
    generation.transform.Apply(x, z);
    status = generation.tree.Insert(slot, z);
  }
  if (!status.ok()) Fail(status);
}

void MetricIndex::Fail(const absl::Status& status) const {
  MutexLock lock(&failure_mutex_);
  if (failure_.ok()) {
    failure_ = absl::InternalError(
        absl::StrCat("the metric index failed: ", status.message()));
  }
}

absl::Status MetricIndex::failure() const {
  MutexLock lock(&failure_mutex_);
  return failure_;
}

void MetricIndex::Insert(std::uint64_t slot, std::span<const double> x) {
  Write(slot, x);
}

void MetricIndex::Remove(std::uint64_t slot) { Write(slot, {}); }

void MetricIndex::Write(std::uint64_t slot, std::span<const double> x) {
  Apply(WriterView(), slot, x, /*replay=*/false);
  if (!rebuilding_.load()) return;
  MutexLock lock(&pending_mutex_);
  if (caught_up_) {
    if (next_ != nullptr) Apply(*next_, slot, x, /*replay=*/false);
  } else if (x.empty()) {
    pending_.push_back(QueuedWrite::Removal(slot));
  } else {  // the stored row stays where it is if trees may reference it
    pending_.push_back(
        QueuedWrite::Insertion(slot, x, references_.pointers != nullptr));
  }
}

void MetricIndex::InsertSlots(Generation& generation, std::size_t begin,
                              std::size_t end,
                              const CopySlotRows& copy_rows) const {
  const std::size_t d = generation.transform.dim();
  if (generation.references_rows) {
    // The tree keeps the addresses it is given: the stored rows'.
    std::vector<const double*> rows;
    if (begin < end) references_.pointers(begin, end, &rows, nullptr);
    for (std::size_t slot = begin; slot < end; ++slot) {
      Apply(generation, slot, std::span(rows[slot - begin], d),
            /*replay=*/false);
    }
    return;
  }
  constexpr std::size_t kChunk = 4096;
  std::vector<double> x;
  for (std::size_t first = begin; first < end; first += kChunk) {
    const std::size_t last = std::min(end, first + kChunk);
    copy_rows(first, last, &x, nullptr);
    for (std::size_t slot = first; slot < last; ++slot) {
      Apply(generation, slot, std::span(x.data() + (slot - first) * d, d),
            /*replay=*/false);
    }
  }
}

MetricIndex::SlotPoints MetricIndex::ReadSlots(
    const MetricTransform& transform, std::size_t num_slots,
    const CopySlotRows& copy_rows) const {
  SlotPoints points;
  if (References(transform, num_slots)) {
    points.rows.reserve(num_slots);
    references_.pointers(0, num_slots, &points.rows, nullptr);
  } else {
    ReadMappedRows(num_slots, copy_rows, transform, &points.coordinates,
                   nullptr);
  }
  return points;
}

std::shared_ptr<MetricIndex::Generation> MetricIndex::Build(
    MetricTransform transform, std::size_t num_slots,
    const CopySlotRows& copy_rows, std::stop_token stop) const {
  // In slot order, which is stream order in an unbounded store: several
  // times faster than shuffled, so that a rebuild of a large store is done
  // before the stream reaches its take-over (CoverTree::InsertionOrder).
  absl::StatusOr<CoverTree> tree =
      BuildTree(transform, ReadSlots(transform, num_slots, copy_rows),
                CoverTree::InsertionOrder::kAsGiven, std::move(stop));
  if (!tree.ok()) {
    if (!absl::IsCancelled(tree.status())) Fail(tree.status());
    return nullptr;
  }
  return std::make_shared<Generation>(std::move(transform), *std::move(tree));
}

absl::StatusOr<CoverTree> MetricIndex::BuildTree(
    const MetricTransform& transform, const SlotPoints& points,
    CoverTree::InsertionOrder order, std::stop_token stop) const {
  const bool references = !points.rows.empty();
  const std::size_t n = references
                            ? points.rows.size()
                            : points.coordinates.size() / transform.dim();
  std::vector<std::uint64_t> ids(n);
  for (std::size_t slot = 0; slot < n; ++slot) ids[slot] = slot;
  absl::StatusOr<CoverTree> tree =
      references
          ? CoverTree::BuildReferencing(transform.diagonal_map(), points.rows,
                                        ids, order, std::move(stop))
          : CoverTree::Build(transform.dim(), points.coordinates, ids, order,
                             std::move(stop));
  return tree;
}

void MetricIndex::RebuildNow(MetricTransform transform, std::size_t num_slots,
                             const CopySlotRows& copy_rows) {
  if (builder_.joinable()) FinishRebuild();
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Generation> fresh =
      Build(std::move(transform), num_slots, copy_rows);
  CountBuild(start);
  if (fresh == nullptr) return;  // failure(): the live tree stays
  {
    MutexLock lock(&current_mutex_);
    live_.swap(fresh);
    ++generation_;
  }
  Retire(std::move(fresh));
}

void MetricIndex::BeginRebuild(MetricTransform transform, std::size_t num_slots,
                               CopySlotRows copy_rows) {
  if (builder_.joinable()) FinishRebuild();
  {
    MutexLock lock(&pending_mutex_);
    next_.reset();
    pending_.clear();
    caught_up_ = false;
  }
  rebuilding_ = true;
  rebuild_transform_ = transform;
  // The live tree's own rebuilds would compete with this build for the
  // cores, and be thrown away at the take-over.
  WriterView().tree.SuspendRebuilds();
  builder_ = std::jthread(
      [this, transform = std::move(transform), num_slots,
       copy_rows = std::move(copy_rows)](std::stop_token stop) mutable {
        BuildInBackground(std::move(stop), std::move(transform), num_slots,
                          std::move(copy_rows));
      });
}

void MetricIndex::BuildInBackground(std::stop_token stop,
                                    MetricTransform transform,
                                    std::size_t num_slots,
                                    CopySlotRows copy_rows) {
  BeginBackgroundThread("index-build");
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Generation> fresh =
      Build(std::move(transform), num_slots, copy_rows, std::move(stop));
  if (fresh == nullptr) {
    // Abandoned (the index is going away), or failure(): the take-over
    // then keeps the live tree.
    MutexLock lock(&pending_mutex_);
    caught_up_ = true;
    return;
  }
  std::vector<QueuedWrite> batch;
  for (;;) {
    {
      MutexLock lock(&pending_mutex_);
      if (pending_.empty()) {
        next_ = std::move(fresh);
        caught_up_ = true;
        CountBuild(start);
        return;
      }
      batch.swap(pending_);
    }
    for (const QueuedWrite& write : batch) {
      // A removal's point is empty, which Apply takes for a removal.
      Apply(*fresh, write.id(), write.point(fresh->transform.dim()),
            /*replay=*/true);
    }
    batch.clear();
  }
}

void MetricIndex::WaitForBuild() {
  if (!builder_.joinable()) return;
  {
    MutexLock lock(&pending_mutex_);
    if (!caught_up_) waits_.fetch_add(1);
  }
  builder_.join();
}

void MetricIndex::FinishRebuild() {
  if (!rebuilding_.load()) return;
  WaitForBuild();
  std::shared_ptr<Generation> fresh;
  {
    MutexLock lock(&pending_mutex_);
    fresh = std::move(next_);
    pending_.clear();
    caught_up_ = false;
  }
  rebuilding_ = false;
  rebuild_transform_.reset();
  if (fresh == nullptr) {  // the build failed (failure()): the live tree stays
    WriterView().tree.ResumeRebuilds();
    return;
  }
  {
    MutexLock lock(&current_mutex_);
    live_.swap(fresh);
    ++generation_;
  }
  Retire(std::move(fresh));
}

absl::Status MetricIndex::Restore(MetricTransform transform,
                                  std::size_t num_slots,
                                  const CopySlotRows& copy_rows,
                                  std::size_t generation, std::size_t waits,
                                  CoverTree::StructureReader* structure,
                                  std::optional<std::size_t> structure_slots) {
  const std::size_t in_structure =
      std::min(structure_slots.value_or(num_slots), num_slots);
  std::optional<CoverTree> tree;
  absl::Status refused = absl::OkStatus();
  if (structure != nullptr) {
    absl::StatusOr<CoverTree> read =
        ReadTree(transform, in_structure,
                 ReadSlots(transform, in_structure, copy_rows), *structure);
    if (read.ok()) {
      tree = *std::move(read);
    } else {
      refused = read.status();
    }
  }
  const std::size_t inserted = tree.has_value() ? in_structure : num_slots;
  if (!tree.has_value()) {
    // Slot order is about stream order: the fast way to build (searches
    // answer the same whatever the tree's shape).
    absl::StatusOr<CoverTree> built =
        BuildTree(transform, ReadSlots(transform, num_slots, copy_rows),
                  CoverTree::InsertionOrder::kAsGiven);
    if (!built.ok()) {
      Fail(built.status());
      return built.status();
    }
    tree = *std::move(built);
  }
  auto restored =
      std::make_shared<Generation>(std::move(transform), *std::move(tree));
  InsertSlots(*restored, inserted, num_slots, copy_rows);
  restore_insertions_ = num_slots - inserted;
  restored_as_saved_ =
      structure != nullptr && refused.ok() && restore_insertions_ == 0;
  {
    MutexLock lock(&current_mutex_);
    live_.swap(restored);
  }
  Retire(std::move(restored));
  generation_ = generation;
  waits_ = waits;
  return refused;
}

absl::StatusOr<CoverTree> MetricIndex::ReadTree(
    const MetricTransform& transform, std::size_t num_slots,
    const SlotPoints& points, CoverTree::StructureReader& structure) const {
  const std::size_t d = transform.dim();
  const bool references = References(transform, num_slots);
  std::optional<DiagonalMap> map;
  if (references) map = transform.diagonal_map();
  absl::StatusOr<CoverTree> tree = std::move(structure).Finish(
      [&](std::uint64_t slot) -> const double* {
        if (slot >= num_slots) return nullptr;
        return references ? points.rows[slot]
                          : points.coordinates.data() + slot * d;
      },
      std::move(map));
  if (tree.ok() && tree->size() != num_slots) {
    return absl::InvalidArgumentError(
        absl::StrCat("cover tree structure: ", tree->size(), " points for ",
                     num_slots, " stored samples"));
  }
  return tree;
}

absl::Status MetricIndex::RestoreRebuild(
    MetricTransform transform, std::size_t num_slots, CopySlotRows copy_rows,
    CoverTree::StructureReader* structure) {
  absl::Status refused = absl::OkStatus();
  if (structure != nullptr) {
    absl::StatusOr<CoverTree> tree =
        ReadTree(transform, num_slots,
                 ReadSlots(transform, num_slots, copy_rows), *structure);
    if (tree.ok()) {
      rebuild_transform_ = transform;
      {
        MutexLock lock(&pending_mutex_);
        next_ = std::make_shared<Generation>(std::move(transform),
                                             *std::move(tree));
        pending_.clear();
        caught_up_ = true;
      }
      rebuilding_ = true;
      WriterView().tree.SuspendRebuilds();
      return absl::OkStatus();
    }
    refused = tree.status();
  }
  BeginRebuild(std::move(transform), num_slots, std::move(copy_rows));
  return refused;
}

bool MetricIndex::RebuildStillBuilding() const {
  if (!rebuilding_.load()) return false;
  MutexLock lock(&pending_mutex_);
  return !caught_up_;
}

std::optional<CoverTree::Structure> MetricIndex::ShareRebuiltStructure() const {
  MutexLock lock(&pending_mutex_);
  if (!caught_up_ || next_ == nullptr) return std::nullopt;
  return next_->tree.Read(
      [](const CoverTree& tree) { return tree.ShareStructure(); });
}

CoverTree::ChangeMark MetricIndex::MarkRestoredTree() {
  if (!restored_as_saved_) return {};
  return WriterView().tree.MarkChanges();
}

ConcurrentCoverTree::MarkedStructure MetricIndex::ShareMarkedStructure() {
  return WriterView().tree.ShareMarkedStructure();
}

ConcurrentCoverTree::MarkedChanges MetricIndex::ShareMarkedChanges(
    const CoverTree::ChangeMark& since) {
  return WriterView().tree.ShareMarkedChanges(since);
}

void MetricIndex::CountBuild(std::chrono::steady_clock::time_point start) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  build_nanoseconds_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  builds_timed_.fetch_add(1);
}

MetricIndex::BuildTime MetricIndex::build_time() const {
  return {builds_timed_.load(),
          static_cast<double>(build_nanoseconds_.load()) * 1e-9};
}

std::size_t MetricIndex::MemoryUsage() const {
  return current()->tree.MemoryUsage();
}

}  // namespace streamreg
