#ifndef STREAMREG_TESTS_FUZZ_REGISTRY_WITHOUT_STORAGE_H_
#define STREAMREG_TESTS_FUZZ_REGISTRY_WITHOUT_STORAGE_H_

#include "server/hosting/model_registry.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {

// A registry with the default limits and no data directory, whose Make
// and MakeRestored host models as a server's would (one per process,
// never destroyed: fuzz targets run until the process ends).
inline const ModelRegistry& RegistryWithoutStorage() {
  static WorkerPool* pool = new WorkerPool(1);
  static ModelRegistry* registry =
      new ModelRegistry(RegistryLimits{}, HostingPools{pool, pool}, nullptr);
  return *registry;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_FUZZ_REGISTRY_WITHOUT_STORAGE_H_
