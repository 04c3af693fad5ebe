// Fuzzes the snapshot decoder: the bytes of a snapshot file (or of a
// cluster model's snapshot from JetStream) read, checked and restored to a
// hosted model, as recovery does. A snapshot that restores must give a
// model that predicts and learns.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/match.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/worker_pool.h"
#include "server/storage/snapshot_reader.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/registry_without_storage.h"

// Input: the snapshot's bytes, then the log position it must end at
// (8 bytes, little-endian).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace streamreg;
  const ModelRegistry* registry = &RegistryWithoutStorage();
  if (size < 8) return 0;
  const std::uint64_t lsn = ReadLittleEndian(data + size - 8, 8);
  const absl::string_view contents = AsText(data, size - 8);
  const auto damaged = [](const absl::Status& status) {
    return status.code() == absl::StatusCode::kDataLoss &&
           absl::StrContains(status.message(), "fuzz.snap");
  };
  SnapshotRecords records;
  if (absl::Status status =
          ReadSnapshotRecords(contents, "fuzz.snap", lsn, nullptr, &records);
      !status.ok()) {
    FUZZ_CHECK(damaged(status));
    return 0;
  }
  absl::StatusOr<RestoredSnapshot> restored =
      RestoreSnapshot(records, lsn, "fuzz.snap");
  if (!restored.ok()) {
    FUZZ_CHECK(damaged(restored.status()));
    return 0;
  }
  absl::StatusOr<std::shared_ptr<HostedModel>> hosted =
      registry->MakeRestored(*std::move(restored));
  if (!hosted.ok()) return 0;
  const Model& model = (*hosted)->model();
  const std::size_t dim = model.config().input_dim;
  const std::size_t targets = model.config().target_names.size();
  const std::vector<double> x(dim, 0.25), y(targets, 0.5);
  if (model.samples_stored() > 0) {
    absl::StatusOr<Prediction> prediction = model.Predict(x);
    FUZZ_CHECK(prediction.ok());
    FUZZ_CHECK(prediction->value.size() == targets);
  }
  static_cast<void>(model.stats());
  static_cast<void>(model.metric());
  return 0;
}
