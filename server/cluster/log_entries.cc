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
  const auto malformed = [sequence](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat("log entry ", sequence, ": ", what));
  };
  if (payload.empty()) return malformed("empty");
  const absl::string_view body = payload.substr(1);
  std::uint64_t lsn = 0;
  switch (static_cast<LogEntryKind>(payload[0])) {
    case LogEntryKind::kCreate:
      out->kind = LogEntryKind::kCreate;
      if (!DecodeCreate(body, &out->identity)) {
        return malformed("malformed create");
      }
      return absl::OkStatus();
    case LogEntryKind::kSamples:
    case LogEntryKind::kSamplesAtFixedCounts:
      out->kind = static_cast<LogEntryKind>(payload[0]);
      if (!DecodeSamples(body, config.input_dim, config.num_targets(),
                         &out->samples)) {
        return malformed("malformed samples");
      }
      return absl::OkStatus();
    case LogEntryKind::kRefit:
      out->kind = LogEntryKind::kRefit;
      if (!DecodeLsn(body, &lsn)) return malformed("malformed refit");
      return absl::OkStatus();
    case LogEntryKind::kTakeOver:
      out->kind = LogEntryKind::kTakeOver;
      if (!DecodeTakeOver(body, &out->take_over)) {
        return malformed("malformed take-over");
      }
      return absl::OkStatus();
  }
  return malformed(absl::StrCat("unknown kind ", static_cast<int>(payload[0])));
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
