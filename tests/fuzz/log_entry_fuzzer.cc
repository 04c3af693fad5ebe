// Fuzzes the decoder of cluster mode's replicated log entries (bytes that
// come from NATS JetStream): a sequence of entries is decoded and applied
// to a model as a replica would, the dimensions of each samples entry
// those of the last create entry.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/model/model.h"
#include "server/cluster/log_entries.h"
#include "tests/fuzz/fuzz_support.h"

// Input: length-prefixed entries (fuzz_support.h PartReader).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace streamreg;
  PartReader reader(data, size);
  ModelConfig config;
  config.input_dim = 3;
  config.target_names = {"y"};
  std::unique_ptr<Model> model;
  for (std::uint64_t sequence = 1; !reader.done() && sequence <= 16;
       ++sequence) {
    const std::string payload = reader.Part();
    DecodedLogEntry entry;
    if (absl::Status status = DecodeLogEntry(payload, sequence, config, &entry);
        !status.ok()) {
      FUZZ_CHECK(status.code() == absl::StatusCode::kDataLoss);
      FUZZ_CHECK(absl::StrContains(status.message(), std::to_string(sequence)));
      continue;
    }
    switch (entry.kind) {
      case LogEntryKind::kCreate: {
        absl::StatusOr<std::unique_ptr<Model>> made =
            Model::Create(entry.identity.config);
        if (!made.ok()) break;  // a replica refuses to host it
        config = (*made)->config();
        model = *std::move(made);
        break;
      }
      case LogEntryKind::kSamples:
      case LogEntryKind::kSamplesAtFixedCounts: {
        const std::vector<Sample> samples =
            entry.samples.samples(config.input_dim, config.target_names.size());
        for (const Sample& sample : samples) {
          FUZZ_CHECK(sample.x.size() == config.input_dim);
          FUZZ_CHECK(sample.y.size() == config.target_names.size());
        }
        if (model != nullptr && model->samples_seen() < 64) {
          static_cast<void>(
              model->Learn(samples, nullptr,
                           entry.kind == LogEntryKind::kSamplesAtFixedCounts
                               ? BatchTakeOvers::kAtFixedCounts
                               : BatchTakeOvers::kWhereRecorded));
        }
        break;
      }
      case LogEntryKind::kRefit:
        if (model != nullptr) static_cast<void>(model->Refit());
        break;
      case LogEntryKind::kTakeOver:
        // Whatever key it names: a record of no running work changes
        // nothing.
        if (model != nullptr) {
          static_cast<void>(model->ApplyTakeOverRecord(entry.take_over));
        }
        break;
    }
  }
  return 0;
}
