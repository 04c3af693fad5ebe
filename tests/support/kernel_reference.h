#ifndef STREAMREG_TESTS_SUPPORT_KERNEL_REFERENCE_H_
#define STREAMREG_TESTS_SUPPORT_KERNEL_REFERENCE_H_

#include <cmath>

#include "core/regression/kernel.h"

namespace streamreg {

// The kernels as the header defines them, written out independently.
inline double ReferenceKernel(Kernel kernel, double u) {
  if (u >= 1.0) return 0.0;
  switch (kernel) {
    case Kernel::kBox:
      return 1.0;
    case Kernel::kTriangular:
      return 1.0 - u;
    case Kernel::kEpanechnikov:
      return 1.0 - u * u;
    case Kernel::kTruncatedGaussian:
      return std::exp(-u * u / (2.0 / 9.0)) - std::exp(-1.0 / (2.0 / 9.0));
  }
  return 0.0;
}

inline constexpr Kernel kAllKernels[] = {Kernel::kBox, Kernel::kTriangular,
                                         Kernel::kEpanechnikov,
                                         Kernel::kTruncatedGaussian};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_KERNEL_REFERENCE_H_
