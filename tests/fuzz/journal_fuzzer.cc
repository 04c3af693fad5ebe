// Fuzzes recovery from a model's write-ahead log: the input is the model's
// only log segment, and the registry recovers the data directory as a
// starting server does (records read and checked, the create record and
// sample batches decoded, the model rebuilt by replaying them). A model it
// recovers must answer reads; one it cannot is refused, not half-loaded.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/hosting/model_registry.h"
#include "server/hosting/model_storage.h"
#include "server/hosting/worker_pool.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const std::string& DataDirectory() {
  static const std::string* directory =
      new std::string(streamreg::ScratchDirectory());
  return *directory;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace streamreg;
  namespace fs = std::filesystem;
  const std::string model_directory = DataDirectory() + "/models/m";
  fs::remove_all(DataDirectory() + "/models");
  fs::remove_all(DataDirectory() + "/trash");
  fs::create_directories(model_directory);
  {
    std::ofstream segment(model_directory + "/wal-00000000000000000001.log",
                          std::ios::binary);
    segment.write(reinterpret_cast<const char*>(data),
                  static_cast<std::streamsize>(size));
  }
  StorageOptions options;
  options.sync = *SyncPolicy::Parse("interval:1000");
  options.snapshot_every_samples = 1'000'000;
  static WorkerPool* pool = new WorkerPool(1);
  static WorkerPool* learning = new WorkerPool(1);
  ModelStorage storage(DataDirectory(), options);
  {
    ModelRegistry registry(RegistryLimits{}, HostingPools{pool, learning},
                           &storage);
    FUZZ_CHECK(registry.Recover().ok());
    absl::StatusOr<std::shared_ptr<HostedModel>> model = registry.Find("m");
    // Recovered (and served), failed (its files kept, not served), or
    // never acknowledged as created (its files removed): one of the three.
    const int outcomes = int{model.ok()} +
                         int{registry.failed().contains("m")} +
                         int{!fs::exists(model_directory)};
    FUZZ_CHECK(outcomes == 1);
    if (model.ok()) {
      (*model)->CatchUp();
      const Model& engine = (*model)->model();
      const std::vector<double> x(engine.config().input_dim, 0.25);
      if (engine.samples_stored() > 0) {
        FUZZ_CHECK(engine.Predict(x).ok());
      }
    }
    storage.StopBackground();
    pool->Drain();
    learning->Drain();
  }
  return 0;
}
