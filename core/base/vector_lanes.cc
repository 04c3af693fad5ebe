#include "core/base/vector_lanes.h"

#include <cstdlib>

namespace streamreg {

bool RunsAvx2() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx2") &&
                          std::getenv("STREAMREG_NO_AVX2") == nullptr;
  return has;
#else
  return false;
#endif
}

}  // namespace streamreg
