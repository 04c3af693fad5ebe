#ifndef STREAMREG_SERVER_STORAGE_JOURNAL_RECORDS_H_
#define STREAMREG_SERVER_STORAGE_JOURNAL_RECORDS_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/io/record_format.h"
#include "core/model/model.h"
#include "core/model/model_config.h"
#include "core/model/take_over_key.h"

namespace streamreg {

// The record types of a model's files (physical format:
// core/io/record_format.h). A log segment holds, each payload starting with
// the record's lsn (its position in the model's log, consecutive from 1):
//   kCreateRecord    lsn, the model's identity: name, create time (µs),
//                    configuration (core/model/model_config.h, exact), input
//                    names
//   kSamplesRecord   lsn, first sequence u64, count u32, then per sample:
//                    sample id u64, x (d doubles), y (m doubles)
//   kRefitRecord     lsn
//   kDeleteRecord    lsn
//   kTakeOverRecord  lsn, the TakeOverKey of background work done
//                    (core/model/take_over_key.h; models whose rule is
//                    TakeOverRule::kLogged)
//   kSamplesAtFixedCountsRecord  as kSamplesRecord, for a batch learned
//                    with its background work taking over at fixed counts
//                    (BatchTakeOvers::kAtFixedCounts: a kLogged model's
//                    Ingest batch)
// A snapshot file holds kSnapshotHeaderRecord, the model's own records
// (kModelStateRecord, kStoreRowsRecord..., kIndexStructureRecord...;
// core/model/model_snapshot.h), then kSnapshotEndRecord.
inline constexpr RecordType kCreateRecord{1};
inline constexpr RecordType kSamplesRecord{2};
inline constexpr RecordType kRefitRecord{3};
inline constexpr RecordType kDeleteRecord{4};
inline constexpr RecordType kTakeOverRecord{5};
inline constexpr RecordType kSamplesAtFixedCountsRecord{6};
inline constexpr RecordType kSnapshotHeaderRecord{10};
inline constexpr RecordType kSnapshotEndRecord{13};

// The payloads of a model's log records and of its snapshot header
// (core/io/record_format.h lists them), encoded and decoded. Decoders return
// false for a malformed payload.

// What a model is, as created: the create record and every snapshot.
struct ModelIdentity {
  std::string name;
  absl::Time create_time;
  ModelConfig config;
  std::vector<std::string> input_names = {};
};

// Each Decode* returns DATA_LOSS naming what did not decode and at which
// byte of the payload.

// Every log record starts with its lsn.
absl::Status DecodeLsn(absl::string_view payload, std::uint64_t* lsn);

std::string EncodeCreate(std::uint64_t lsn, const ModelIdentity& identity);
absl::Status DecodeCreate(absl::string_view payload, ModelIdentity* identity);

// A batch of samples as learned: the model's sequence number of the first.
std::string EncodeSamples(std::uint64_t lsn, std::uint64_t first_sequence,
                          std::span<const Sample> samples);
struct SamplesRecord {
  std::uint64_t first_sequence = 0;
  std::vector<double> x, y;
  std::vector<std::uint64_t> ids;
  // Views into x, y and ids.
  std::vector<Sample> samples(std::size_t dim, std::size_t num_targets) const;
};
absl::Status DecodeSamples(absl::string_view payload, std::size_t dim,
                           std::size_t num_targets, SamplesRecord* record);

// kRefit and kDelete carry the lsn alone.
std::string EncodeLsnOnly(std::uint64_t lsn);

// A take-over record: the work's key after the lsn.
std::string EncodeTakeOver(std::uint64_t lsn, const TakeOverKey& key);
absl::Status DecodeTakeOver(absl::string_view payload, TakeOverKey* key);

// What a snapshot adds to the model's own state: the position in the log
// it covers and the hosting layer's state (sample count, retried-id window).
struct SnapshotHeader {
  std::uint64_t lsn = 0;
  ModelIdentity identity;
  std::uint64_t num_samples = 0;
  std::uint64_t duplicate_samples = 0;
  // (sample id, sequence) of the remembered ids, oldest first.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> recent_ids;
};
std::string EncodeSnapshotHeader(const SnapshotHeader& header);
absl::Status DecodeSnapshotHeader(absl::string_view payload,
                                  SnapshotHeader* header);

// The last record of a snapshot: its lsn and how many records precede it.
std::string EncodeSnapshotEnd(std::uint64_t lsn, std::uint64_t records);
absl::Status DecodeSnapshotEnd(absl::string_view payload, std::uint64_t* lsn,
                               std::uint64_t* records);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_STORAGE_JOURNAL_RECORDS_H_
