#ifndef STREAMREG_CORE_MODEL_TAKE_OVER_KEY_H_
#define STREAMREG_CORE_MODEL_TAKE_OVER_KEY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"

namespace streamreg {

// When a model's background work (a metric refresh, an MLKR fit, a
// random-feature or index rebuild) takes over (docs/estimators.md,
// "Learning online"). Part of the model's configuration: a model keeps
// the rule it was created with, and its log is read by it.
enum class TakeOverRule : std::uint8_t {
  // At a fixed sample count after the work started; the learner waits
  // there for work not done yet. Results depend on the configuration and
  // the samples alone (models saved before the rule existed, tools and
  // benchmarks that learn without a log).
  kFixedCount = 0,
  // At the first sample learned once the fixed count is reached and the
  // model's log has recorded the work done (Model::ApplyTakeOverRecord):
  // the learner never waits for work the log has not recorded, and
  // results depend on the configuration and the log (samples and take-over
  // records in order). Models hosted by a server with a log.
  kLogged = 1,
};

// Under TakeOverRule::kLogged, how the work takes over while the model
// learns one batch of its log — a property of the batch, written in the
// log with it:
enum class BatchTakeOvers : std::uint8_t {
  // Where the log's records put it: the learner never waits for work (a
  // Learn stream's samples, whose answers wait for nothing).
  kWhereRecorded = 0,
  // At its fixed count, the learner waiting there for work not done, as
  // under kFixedCount (a bulk Ingest batch, whose acknowledgement waits for
  // learning anyway: the model keeps its schedule however large the batch,
  // where records, written only between batches, would leave a large batch
  // learned without any of the work started in it).
  kAtFixedCounts = 1,
};

// "fixed_count", "logged"; parsed back, or INVALID_ARGUMENT naming
// `field` and the choices.
absl::string_view TakeOverRuleName(TakeOverRule rule);
absl::StatusOr<TakeOverRule> ParseTakeOverRule(absl::string_view name,
                                               absl::string_view field);

// The piece of background work a take-over record names: its kind, which
// prediction index (an index rebuild), and the sample count from which it
// may take over at the earliest. Work of one kind and index runs one piece
// at a time, and each piece starts at a later count, so the key names one
// piece in the model's whole history: a record of work superseded or
// taken over already names nothing running.
struct TakeOverKey {
  enum class Work : std::uint8_t {
    kMetricRefresh = 0,
    kMlkrFit = 1,
    kRandomFeatureRebuild = 2,
    kGradientIndexRebuild = 3,
    kPredictionIndexRebuild = 4,
  };
  Work work = Work::kMetricRefresh;
  std::uint32_t index = 0;  // the prediction index (else 0)
  std::uint64_t earliest = 0;

  friend bool operator==(const TakeOverKey&, const TakeOverKey&) = default;
};

// "mlkr_fit", "prediction_index_rebuild[1]"... for logs and errors.
std::string TakeOverKeyName(const TakeOverKey& key);

// The key in 13 bytes: work u8, index u32, earliest u64 (a journal
// record's and a log entry's payload, and the model's snapshot).
void SaveTakeOverKey(const TakeOverKey& key, ByteWriter& out);
// DATA_LOSS for a malformed key (an unknown kind of work, or truncated),
// naming the byte.
absl::Status LoadTakeOverKey(ByteReader& in, TakeOverKey* key);

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_TAKE_OVER_KEY_H_
