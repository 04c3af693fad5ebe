#include "server/cluster/log_entries.h"

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "core/base/byte_coding.h"

namespace streamreg {
namespace {

std::string WithKind(LogEntryKind kind, absl::string_view body) {
  std::string entry(1, static_cast<char>(kind));
  entry.append(body.data(), body.size());
  return entry;
}

}  // namespace

std::string EncodeCreateEntry(const ModelIdentity& identity) {
  return WithKind(LogEntryKind::kCreate, EncodeCreate(0, identity));
}

std::string EncodeSamplesEntry(std::span<const Sample> batch,
                               BatchTakeOvers take_overs) {
  return WithKind(take_overs == BatchTakeOvers::kAtFixedCounts
                      ? LogEntryKind::kSamplesAtFixedCounts
                      : LogEntryKind::kSamples,
                  EncodeSamples(0, 0, batch));
}

std::string EncodeRefitEntry() {
  return WithKind(LogEntryKind::kRefit, EncodeLsnOnly(0));
}

std::string EncodeTakeOverEntry(const TakeOverKey& key) {
  return WithKind(LogEntryKind::kTakeOver, EncodeTakeOver(0, key));
}

absl::Status DecodeLogEntry(absl::string_view payload, std::uint64_t sequence,
                            const ModelConfig& config, DecodedLogEntry* out) {
  const auto malformed = [sequence](absl::string_view what,
                                    const absl::Status& status) {
    return absl::DataLossError(absl::StrCat("log entry ", sequence, ": ", what,
                                            ": ", status.message()));
  };
  if (payload.empty()) {
    return absl::DataLossError(absl::StrCat("log entry ", sequence, ": empty"));
  }
  const absl::string_view body = payload.substr(1);
  std::uint64_t lsn = 0;
  switch (static_cast<LogEntryKind>(payload[0])) {
    case LogEntryKind::kCreate:
      out->kind = LogEntryKind::kCreate;
      if (absl::Status status = DecodeCreate(body, &out->identity);
          !status.ok()) {
        return malformed("malformed create", status);
      }
      return absl::OkStatus();
    case LogEntryKind::kSamples:
    case LogEntryKind::kSamplesAtFixedCounts:
      out->kind = static_cast<LogEntryKind>(payload[0]);
      if (absl::Status status = DecodeSamples(
              body, config.input_dim, config.num_targets(), &out->samples);
          !status.ok()) {
        return malformed("malformed samples", status);
      }
      return absl::OkStatus();
    case LogEntryKind::kRefit:
      out->kind = LogEntryKind::kRefit;
      if (absl::Status status = DecodeLsn(body, &lsn); !status.ok()) {
        return malformed("malformed refit", status);
      }
      return absl::OkStatus();
    case LogEntryKind::kTakeOver:
      out->kind = LogEntryKind::kTakeOver;
      if (absl::Status status = DecodeTakeOver(body, &out->take_over);
          !status.ok()) {
        return malformed("malformed take-over", status);
      }
      return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat(
      "log entry ", sequence, ": unknown kind ", static_cast<int>(payload[0])));
}

std::string BatchMessageId(absl::string_view model,
                           std::span<const Sample> batch,
                           absl::string_view unique) {
  std::string ids;
  ByteWriter writer(&ids);
  for (const Sample& sample : batch) {
    if (sample.sample_id == 0) return absl::StrCat(model, "/u/", unique);
    writer.U64(sample.sample_id);
  }
  // SHA-256 of every id: two batches share a message id only if they hold
  // the same ids in the same order.
  return absl::StrCat(model, "/s/", Sha256Hex(ids));
}

}  // namespace streamreg
