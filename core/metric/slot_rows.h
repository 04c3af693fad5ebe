#ifndef STREAMREG_CORE_METRIC_SLOT_ROWS_H_
#define STREAMREG_CORE_METRIC_SLOT_ROWS_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "core/metric/metric_transform.h"

namespace streamreg {

// How a background job reads a model's stored samples: copies the raw
// inputs x (dim per slot) of slots [begin, end) into `x`, and their targets
// into `y` unless y is null, taking whatever lock guards them for the
// duration of the call.
using CopySlotRows =
    std::function<void(std::size_t begin, std::size_t end,
                       std::vector<double>* x, std::vector<double>* y)>;

// How an index finds stored samples in place, for an owner whose rows
// never change or move while stored (a store that only appends): appends
// the address of the inputs x of each of slots [begin, end) to `x`, and of
// the targets y to `y` unless it is null, taking whatever lock guards the
// owner's storage for the call.
using SlotRowPointers = std::function<void(std::size_t begin, std::size_t end,
                                           std::vector<const double*>* x,
                                           std::vector<const double*>* y)>;

// Reads slots [0, num_slots) through `copy` a chunk of 4096 at a time (so
// the owner's lock is held briefly), mapping each x by `transform` into
// `coordinates` (a row per slot read, dim each) and, when `targets` is not
// null, keeping the targets there (a row each). With a stride s > 1 only
// the slots 0, s, 2s, ... are kept.
void ReadMappedRows(std::size_t num_slots, const CopySlotRows& copy,
                    const MetricTransform& transform,
                    std::vector<double>* coordinates,
                    std::vector<double>* targets, std::size_t stride = 1);

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_SLOT_ROWS_H_
