#ifndef STREAMREG_SERVER_CLUSTER_LOG_ENTRIES_H_
#define STREAMREG_SERVER_CLUSTER_LOG_ENTRIES_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/model/model.h"
#include "server/storage/journal_records.h"

namespace streamreg {

// What a model's replicated log holds (docs/cluster.md): a kind byte, then
// the journal's encoding of the same record (server/storage/
// journal_records.h) with its lsn 0 (an entry's position is its stream
// sequence). A samples entry holds the batch as the client sent it,
// retried samples included: each replica drops those by its recent-id
// window, the same way, when it applies the entry.
enum class LogEntryKind : std::uint8_t {
  kCreate = 1,    // the model's identity, the log's first entry
  kSamples = 2,   // a Learn or Ingest batch
  kRefit = 3,     // a batch refit, in order with the samples
  kTakeOver = 4,  // background work done (TakeOverRule::kLogged)
  // A batch learned with its background work taking over at fixed counts
  // (BatchTakeOvers::kAtFixedCounts: a kLogged model's Ingest batch).
  kSamplesAtFixedCounts = 5,
};

std::string EncodeCreateEntry(const ModelIdentity& identity);
std::string EncodeSamplesEntry(
    std::span<const Sample> batch,
    BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded);
std::string EncodeRefitEntry();
std::string EncodeTakeOverEntry(const TakeOverKey& key);

// An entry decoded: its kind, and its identity or samples (decoded with the
// dimensions of `config`).
struct DecodedLogEntry {
  LogEntryKind kind = LogEntryKind::kRefit;
  ModelIdentity identity;
  SamplesRecord samples;
  TakeOverKey take_over;
};
// DATA_LOSS, naming the entry's sequence, for an entry that is not one.
absl::Status DecodeLogEntry(absl::string_view payload, std::uint64_t sequence,
                            const ModelConfig& config, DecodedLogEntry* out);

// The message id a batch is appended under: the model and its samples' ids
// (so that a client's retry of the same batch is the same message), or,
// when a sample has no id (0: the client gave up retry safety), `unique`
// (the caller's unique text: each such batch is its own message).
std::string BatchMessageId(absl::string_view model,
                           std::span<const Sample> batch,
                           absl::string_view unique);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_LOG_ENTRIES_H_
