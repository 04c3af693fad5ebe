#include "server/cluster/replica_applier.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"
#include "core/model/model_settings.h"
#include "server/cluster/log_entries.h"

namespace streamreg {
namespace {

// The configuration's exact encoding, to compare two of them.
std::string ConfigBytes(const ModelConfig& config) {
  std::string bytes;
  ByteWriter writer(&bytes);
  SaveConfig(config, writer);
  return bytes;
}

}  // namespace

absl::StatusOr<LearnOutcome> ReplicaApplier::Apply(std::uint64_t sequence,
                                                   absl::string_view payload) {
  absl::StatusOr<LearnOutcome> outcome = ApplyUnnoted(sequence, payload);
  // Applied, whatever came of it (an entry that changed nothing too).
  writer_->NoteApplied(sequence);
  return outcome;
}

absl::StatusOr<LearnOutcome> ReplicaApplier::ApplyUnnoted(
    std::uint64_t sequence, absl::string_view payload) {
  const Model& model = writer_->model();
  const ModelConfig& config = model.config();
  DecodedLogEntry decoded;
  if (absl::Status status = DecodeLogEntry(payload, sequence, config, &decoded);
      !status.ok()) {
    return status;
  }
  const ModelWriter::Record in_the_log = {.log_sequence = sequence};
  switch (decoded.kind) {
    case LogEntryKind::kCreate:
      // Compared as models are made (defaults filled in).
      if (decoded.identity.name != model_name() ||
          !CompleteAndValidate(&decoded.identity.config).ok() ||
          ConfigBytes(decoded.identity.config) != ConfigBytes(config)) {
        return absl::DataLossError(absl::StrCat(
            "log entry ", sequence, " creates model '", decoded.identity.name,
            "' otherwise than '", model_name(), "' was made"));
      }
      return LearnOutcome{};
    case LogEntryKind::kSamples:
    case LogEntryKind::kSamplesAtFixedCounts: {
      const std::vector<Sample> samples =
          decoded.samples.samples(config.input_dim, config.num_targets());
      absl::StatusOr<ValidatedSamples> validated = model.Validate(samples);
      if (!validated.ok()) return validated.status();
      return writer_->ApplySamples(
          *validated,
          {.record = in_the_log,
           .max_unlearned = max_unlearned_,
           .take_overs = decoded.kind == LogEntryKind::kSamplesAtFixedCounts
                             ? BatchTakeOvers::kAtFixedCounts
                             : BatchTakeOvers::kWhereRecorded});
    }
    case LogEntryKind::kRefit:
      if (absl::Status status = writer_->ApplyRefit({}, in_the_log);
          !status.ok()) {
        return status;
      }
      return LearnOutcome{};
    case LogEntryKind::kTakeOver:
      if (absl::Status status =
              writer_->ApplyTakeOver(decoded.take_over, in_the_log);
          !status.ok()) {
        return status;
      }
      return LearnOutcome{};
  }
  return absl::InternalError("unreachable");
}

}  // namespace streamreg
