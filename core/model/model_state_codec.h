#ifndef STREAMREG_CORE_MODEL_MODEL_STATE_CODEC_H_
#define STREAMREG_CORE_MODEL_MODEL_STATE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"
#include "core/metric/gradient_refresh.h"
#include "core/metric/metric_transform.h"
#include "core/model/model_state.h"

namespace streamreg {

// A ModelState as bytes (the payloads of a snapshot's kModelStateRecord and
// kStoreRowsRecord records, core/model/model_snapshot.h), and back.
//
// The state record: version, d, m, the number of prediction indexes,
// whether there is a gradient index; the store's counters and size; the
// running moments of x and y, the metric's sums (and those since a refresh
// started), the selections and score; the take-over points; per index its
// transform, rebuild count, waits and a rebuild in progress (with each
// prediction index's selector and take-over point); and last what a
// metric refresh in progress left (RefreshInSnapshot).

// What follows the state: a refresh in progress as nothing, its result, or
// its job (restarted on restore).
enum class RefreshInSnapshot : std::uint8_t {
  kNone = 0,
  kResult = 1,
  kJob = 2,
};

// What the state record says about one index, which is rebuilt from the
// stored samples on restore.
struct SavedIndex {
  MetricTransform live;
  std::size_t generation = 0;
  std::size_t waits = 0;
  std::optional<MetricTransform> rebuild;  // a rebuild in progress
};

// The state record up to (not including) the refresh that follows it.
void SaveModelState(const ModelState& state, ByteWriter& out)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer)
        ABSL_SHARED_LOCKS_REQUIRED(state.lock);

// What LoadModelState leaves for the caller to finish.
struct LoadedModelState {
  std::size_t num_rows = 0;         // stored samples the rows must hold
  std::vector<SavedIndex> indexes;  // AllIndexes() order
  std::optional<GradientRefresh::Job> refresh_job;
};
// Reads a whole state record into a newly made `state` (a refresh result is
// resumed); false when it is malformed or does not fit the configuration.
bool LoadModelState(ByteReader& in, ModelState& state, LoadedModelState* loaded)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);

// Appends one stored-rows payload for slots [first, first + count).
void SaveStoreRows(const SampleStore::Rows& rows, std::size_t first,
                   std::size_t count, std::string* payload);
// Stores one stored-rows payload, which must start at the store's size.
bool LoadStoreRows(absl::string_view payload, ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);

// Builds each index from the stored samples (several at once) as saved,
// and restarts the rebuilds that were in progress.
void RestoreIndexes(ModelState& state, std::vector<SavedIndex> indexes)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) ABSL_LOCKS_EXCLUDED(state.lock);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_STATE_CODEC_H_
