#ifndef STREAMREG_CORE_MODEL_MODEL_STATE_CODEC_H_
#define STREAMREG_CORE_MODEL_MODEL_STATE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"
#include "core/index/cover_tree.h"
#include "core/metric/gradient_refresh.h"
#include "core/metric/metric_transform.h"
#include "core/model/model_state.h"

namespace streamreg {

struct SnapshotBase;  // core/model/model_snapshot.h

// A ModelState as bytes (the payloads of a snapshot's kModelStateRecord and
// kStoreRowsRecord records, core/model/model_snapshot.h), and back.
//
// The state record: version, d, m, the number of prediction indexes,
// whether there is a gradient index; the store's counters and size; the
// running moments of x and y, the metric's sums (and those since a refresh
// started), the selections and score; the take-over points; per index its
// transform, rebuild count, waits and a rebuild in progress (with each
// prediction index's selector and take-over point); the intervals'
// calibrations; the take-over records applied to work still running
// (count, then each TakeOverKey); a combining model's weights, for queries
// then for the next sample, by prediction index (CandidateAggregation);
// and last what a
// metric refresh in progress left (RefreshInSnapshot), then what an MLKR
// fit in progress left (nothing or its result), then a random-feature
// base's rebuild in progress (nothing or what it has built so far).

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

// A list of MLKR maps (an MLKR fit's result), and back (maps over `dim`
// inputs; DATA_LOSS naming the map and its byte if `in` does not hold
// that).
void SaveMlkrMaps(const std::vector<MlkrMap>& maps, ByteWriter& out);
absl::Status LoadMlkrMaps(ByteReader& in, std::size_t dim,
                          std::vector<MlkrMap>* maps);

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
// resumed); DATA_LOSS naming the part that is malformed or does not fit
// the configuration, and the byte it begins at.
absl::Status LoadModelState(ByteReader& in, ModelState& state,
                            LoadedModelState* loaded)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);

// Appends one stored-rows payload for slots [first, first + count).
void SaveStoreRows(const SampleStore::Rows& rows, std::size_t first,
                   std::size_t count, std::string* payload);
// Stores one stored-rows payload, which must start at the store's size.
absl::Status LoadStoreRows(absl::string_view payload, ModelState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer, state.lock);

// The kIndexStructureRecord payloads of tree `index` — for n indexes,
// index i's live tree is numbered i (AllIndexes() order) and its rebuilt
// tree n + i — the header first, then the nodes 4096 at a time, each
// passed to `add` as it is made:
//   index u32, part u8 (0: header, 1: nodes), then CoverTree::Structure's
//   encoding of that part.
absl::Status SaveIndexStructure(
    std::uint32_t index, const CoverTree::Structure& structure,
    const std::function<absl::Status(const std::string&)>& add);
// Reads one such payload into readers[index]; DATA_LOSS if it is malformed
// or out of order.
absl::Status LoadIndexStructure(
    absl::string_view payload,
    std::vector<CoverTree::StructureReader>* readers);

// The kIndexChangesRecord payloads of live tree `index`'s changes since
// the snapshot before (CoverTree::Changes), framed as the structure's:
// index u32, part u8 (0: header, 1: nodes), then the changes' encoding of
// that part, the changed nodes 4096 at a time.
absl::Status SaveIndexChanges(
    std::uint32_t index, const CoverTree::Changes& changes,
    const std::function<absl::Status(const std::string&)>& add);
// Applies to the first `n` readers (the live trees' structures, as a whole
// snapshot saved them) the changes each later link of its chain saved
// (`links`, oldest first, each its kIndexChangesRecord payloads). A tree
// takes every link's changes in turn until a link has none for it: from
// then on it stays as read, and the restore inserts the rows stored after
// it. Changes that do not fit spoil their reader (the tree is then built
// from the stored samples). Each payload is passed to `done_with` (when
// set) once read. Returns a note per spoilt reader.
std::vector<std::string> LoadIndexChanges(
    const std::vector<std::vector<absl::string_view>>& links, std::size_t n,
    std::vector<CoverTree::StructureReader>* readers,
    const std::function<void(absl::string_view)>& done_with);

// Restores each index as saved, several at once: from its structure in
// `structures` (AllIndexes() order; readers left empty build from the
// rows), or, where that is missing or refused, by building it from the
// stored samples. Then restores the rebuilds that were in progress: index
// i's from structures[n + i] if the snapshot held it, else built again in
// the background. With `base` (a snapshot built on another), the
// structures are the chain's (LoadIndexChanges): an index of the generation
// the base saved is read from its structure over the rows that covers, the
// rows stored since inserted; any other is built from the stored samples.
// Returns a note per refused structure.
std::vector<std::string> RestoreIndexes(
    ModelState& state, std::vector<SavedIndex> indexes,
    std::vector<CoverTree::StructureReader> structures,
    const SnapshotBase* base = nullptr)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.writer) ABSL_LOCKS_EXCLUDED(state.lock);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_MODEL_STATE_CODEC_H_
