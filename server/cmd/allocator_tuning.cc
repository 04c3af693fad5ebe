#include "server/cmd/allocator_tuning.h"

#include <malloc.h>

namespace streamreg {

void TuneAllocatorForServer() {
  // Returns 0 where the allocator does not support the setting (the
  // sanitizers' allocators); nothing to do then.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
}

}  // namespace streamreg
