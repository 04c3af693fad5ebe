#ifndef STREAMREG_CORE_MODEL_METRIC_INDEX_H_
#define STREAMREG_CORE_MODEL_METRIC_INDEX_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/index/concurrent_cover_tree.h"
#include "core/index/queued_write.h"
#include "core/metric/metric_transform.h"
#include "core/metric/slot_rows.h"

namespace streamreg {

// The stored samples indexed in the coordinates of a metric: each sample's
// raw inputs x are mapped by a MetricTransform and kept in a cover tree
// under the sample's slot number. Where the owner's rows stay in place
// (given SlotRowPointers) and the transform is diagonal, the tree references
// the owner's rows instead of keeping mapped copies (NodePoints): the same
// answers in a fraction of the memory.
//
// When the metric (or the standardization) has drifted, the owner moves the
// index to a new transform without stopping anyone (docs/estimators.md,
// "Learning online"):
//  1. BeginRebuild(transform, ...) — a background thread copies the stored
//     samples (through `copy_rows`, in chunks, so the owner's lock is held
//     only briefly) and batch-builds a tree in the new coordinates; writes
//     made meanwhile go to the live generation and are queued;
//  2. the builder replays the queue, then — once caught up — the writer
//     applies each new write to both generations;
//  3. FinishRebuild() makes the new generation current (a pointer swap).
// Searches always run on a whole generation (transform + tree) and never
// wait for a rebuild. The owner chooses when to call FinishRebuild — at a
// fixed sample count, which keeps a model deterministic: which generation
// answered depends on the stream, not on thread timing. If the build is not
// done by then, FinishRebuild waits for it.
//
// Writes (Insert, Remove, BeginRebuild, FinishRebuild) come from one thread
// at a time; current() may be called from any thread.
class MetricIndex {
 public:
  // A transform and the tree of the samples in its coordinates.
  struct Generation {
    Generation(MetricTransform transform, CoverTree tree)
        : references_rows(tree.referencing()),
          transform(std::move(transform)),
          tree(std::move(tree)) {}
    const bool references_rows;  // the tree keeps the owner's rows
    const MetricTransform transform;
    ConcurrentCoverTree tree;
  };

  // Whether and when trees reference the owner's rows: with `pointers`,
  // the rows given to Insert must be the owner's stored rows, which stay
  // unchanged at their addresses while indexed; trees then built over
  // `from_slots` slots or more in a diagonal transform reference them.
  struct RowReferences {
    SlotRowPointers pointers;
    std::size_t from_slots = 0;
  };
  // An empty index in the coordinates of `transform`, keeping copies.
  explicit MetricIndex(MetricTransform transform);
  MetricIndex(MetricTransform transform, RowReferences references);
  ~MetricIndex();
  MetricIndex(const MetricIndex&) = delete;
  MetricIndex& operator=(const MetricIndex&) = delete;

  // Indexes stored sample `slot` with raw inputs x (already validated; the
  // stored row itself when the index was given SlotRowPointers).
  void Insert(std::uint64_t slot, std::span<const double> x);
  void Remove(std::uint64_t slot);
  // The first write or build the index could not make (a point its
  // transform maps out of range, a slot indexed twice or missing): from
  // then on the index no longer holds every stored sample, and the model
  // reports the error (Model::Learn, Refit) rather than predict from it.
  // OK while every write and build succeeded.
  absl::Status failure() const ABSL_LOCKS_EXCLUDED(failure_mutex_);

  // Starts moving to `transform`: slots [0, num_slots) are read through
  // `copy_rows` by the builder thread.
  void BeginRebuild(MetricTransform transform, std::size_t num_slots,
                    CopySlotRows copy_rows);
  // Rebuilds now, on the calling thread, from rows it provides.
  void RebuildNow(MetricTransform transform, std::size_t num_slots,
                  const CopySlotRows& copy_rows);
  // A restored index (snapshots) with the counts of rebuilds and waits it
  // had: its tree read from `structure` (the live tree's, as saved) when
  // that is given, complete and fits the rows mapped by `transform`, else
  // built now from the rows. A structure saved over the first
  // `structure_slots` slots only (a snapshot built on an earlier one's
  // trees) has the slots after them inserted into it (restore_insertions()
  // counts them). Returns why a given structure was refused (OK when it
  // was used, or none was given).
  absl::Status Restore(MetricTransform transform, std::size_t num_slots,
                       const CopySlotRows& copy_rows, std::size_t generation,
                       std::size_t waits,
                       CoverTree::StructureReader* structure = nullptr,
                       std::optional<std::size_t> structure_slots = {});
  // The live tree's structure, shared copy-on-write, with a mark of that
  // moment (the writing thread, for snapshots; the transform() it belongs
  // to is the live one).
  ConcurrentCoverTree::MarkedStructure ShareMarkedStructure();
  // What changed in the live tree after `since` (none if it is no longer
  // the tree marked), with a mark of now.
  ConcurrentCoverTree::MarkedChanges ShareMarkedChanges(
      const CoverTree::ChangeMark& since);
  // The tree of the rebuild in progress, if it has caught up with the
  // writes (it then holds what the live tree holds, in the coordinates of
  // rebuild_transform()), shared likewise; none while it is being built.
  std::optional<CoverTree::Structure> ShareRebuiltStructure() const;
  // A restored rebuild in progress (snapshots): its tree read from
  // `structure` when that is given and fits the rows mapped by `transform`
  // (the rebuild has then caught up: its take-over is a swap), else built
  // again in the background from the rows (BeginRebuild). Returns why a
  // given structure was refused.
  absl::Status RestoreRebuild(MetricTransform transform, std::size_t num_slots,
                              CopySlotRows copy_rows,
                              CoverTree::StructureReader* structure);
  bool rebuilding() const { return rebuilding_.load(); }
  // Slots the last Restore inserted into the tree it read back.
  std::size_t restore_insertions() const { return restore_insertions_; }
  // A mark of the live tree (CoverTree::MarkChanges) if the last Restore
  // read it back exactly as saved (its structure used, nothing inserted),
  // else a mark of no tree: changes since it are then never taken.
  CoverTree::ChangeMark MarkRestoredTree();
  // Whether a rebuild in progress is still being built (it has not caught
  // up with the writes, so a snapshot taken now could not hold its tree).
  bool RebuildStillBuilding() const;
  // The transform a rebuild in progress moves to (writing thread).
  const std::optional<MetricTransform>& rebuild_transform() const {
    return rebuild_transform_;
  }
  // Waits until a rebuild in progress has caught up with the writes (it
  // then follows each new write until FinishRebuild).
  void WaitForBuild();
  // Waits for the builder if needed and makes its generation current.
  void FinishRebuild();

  std::shared_ptr<const Generation> current() const;
  // The live transform (for the writing thread).
  const MetricTransform& transform() const { return WriterView().transform; }
  // Rebuilds completed since construction.
  std::size_t generation() const { return generation_.load(); }
  // FinishRebuild calls that had to wait for the builder (the writer
  // reached the take-over point before the new generation caught up).
  std::size_t waits() const { return waits_.load(); }
  // Rebuilds built by this object (not restored) and the time they took,
  // from the start of a build until it had caught up with the writes made
  // meanwhile (for /metrics).
  struct BuildTime {
    std::uint64_t builds = 0;
    double seconds = 0.0;
  };
  BuildTime build_time() const;
  // Bytes of the live tree (and of the one being built, once caught up).
  std::size_t MemoryUsage() const;

 private:
  // Whether a tree over `num_slots` slots in the coordinates of
  // `transform` references the rows.
  bool References(const MetricTransform& transform,
                  std::size_t num_slots) const {
    return references_.pointers != nullptr && !transform.is_dense() &&
           num_slots >= references_.from_slots;
  }
  // The rows of slots [0, num_slots): their addresses when trees in the
  // coordinates of `transform` reference them (`rows`), else mapped copies
  // (`coordinates`, num_slots x dim).
  struct SlotPoints {
    std::vector<const double*> rows;
    std::vector<double> coordinates;
  };
  SlotPoints ReadSlots(const MetricTransform& transform, std::size_t num_slots,
                       const CopySlotRows& copy_rows) const;
  // A generation over slots [0, num_slots); null if `stop` was requested
  // before the tree was built, or if it could not be built (failure()).
  std::shared_ptr<Generation> Build(MetricTransform transform,
                                    std::size_t num_slots,
                                    const CopySlotRows& copy_rows,
                                    std::stop_token stop = {}) const;
  // A tree over slots [0, n) in the coordinates of `transform`; Cancelled
  // when `stop` is requested, and an error for rows the transform maps out
  // of range.
  absl::StatusOr<CoverTree> BuildTree(const MetricTransform& transform,
                                      const SlotPoints& points,
                                      CoverTree::InsertionOrder order,
                                      std::stop_token stop = {}) const;
  // The tree `structure` describes over slots [0, num_slots) read in the
  // coordinates of `transform`; refused when it does not fit them.
  absl::StatusOr<CoverTree> ReadTree(
      const MetricTransform& transform, std::size_t num_slots,
      const SlotPoints& points, CoverTree::StructureReader& structure) const;
  void Write(std::uint64_t slot, std::span<const double> x);
  // Inserts the stored slots [begin, end) into `generation` (read through
  // the owner's row pointers when it references them, else copied).
  void InsertSlots(Generation& generation, std::size_t begin, std::size_t end,
                   const CopySlotRows& copy_rows) const;
  // Inserts x at slot (or removes slot when x is empty) in `generation`;
  // a write that fails is the index's failure().
  void Apply(Generation& generation, std::uint64_t slot,
             std::span<const double> x, bool replay) const;
  // Records the first failure.
  void Fail(const absl::Status& status) const
      ABSL_LOCKS_EXCLUDED(failure_mutex_);
  // Frees a replaced generation on another thread: freeing a large tree
  // (its chunks of nodes and coordinates) takes milliseconds the writer should
  // not spend. Searches still using it keep it alive; the last one frees it.
  void Retire(std::shared_ptr<Generation> old);
  // The builder thread's work; gives up when `stop` is requested (only the
  // destructor does: nobody will take the tree over).
  void BuildInBackground(std::stop_token stop, MetricTransform transform,
                         std::size_t num_slots, CopySlotRows copy_rows);
  void CountBuild(std::chrono::steady_clock::time_point start);

  // The live generation as the writing thread sees it: only that thread
  // swaps live_, so it may read it without current_mutex_.
  const Generation& WriterView() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return *live_;
  }
  Generation& WriterView() ABSL_NO_THREAD_SAFETY_ANALYSIS { return *live_; }

  const RowReferences references_;

  // The live generation: swapped by the writer under current_mutex_.
  mutable Mutex current_mutex_;
  std::shared_ptr<Generation> live_ ABSL_GUARDED_BY(current_mutex_);
  std::atomic<std::size_t> generation_ = 0;
  std::atomic<std::size_t> waits_ = 0;
  std::atomic<bool> rebuilding_ = false;
  // Of the last Restore (writing thread).
  std::size_t restore_insertions_ = 0;
  bool restored_as_saved_ = false;
  std::atomic<std::uint64_t> builds_timed_ = 0;
  std::atomic<std::uint64_t> build_nanoseconds_ = 0;

  std::jthread builder_;
  std::thread reaper_;
  // What the builder and the writer share while a rebuild runs.
  mutable Mutex pending_mutex_;
  std::shared_ptr<Generation> next_ ABSL_GUARDED_BY(pending_mutex_);
  std::vector<QueuedWrite> pending_ ABSL_GUARDED_BY(pending_mutex_);
  bool caught_up_ ABSL_GUARDED_BY(pending_mutex_) = false;
  std::optional<MetricTransform> rebuild_transform_;  // writing thread
  // Written by the writer and the builder.
  mutable Mutex failure_mutex_;
  mutable absl::Status failure_ ABSL_GUARDED_BY(failure_mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_METRIC_INDEX_H_
