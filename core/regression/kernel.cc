#include "core/regression/kernel.h"

#include "absl/strings/str_cat.h"
#include "core/base/enum_names.h"

namespace streamreg {

absl::string_view KernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kBox:
      return "box";
    case Kernel::kTriangular:
      return "triangular";
    case Kernel::kEpanechnikov:
      return "epanechnikov";
    case Kernel::kTruncatedGaussian:
      return "gaussian";
  }
  return "unknown";
}

absl::StatusOr<Kernel> ParseKernel(absl::string_view name) {
  return ParseEnumName("kernel", name,
                       {Kernel::kBox, Kernel::kTriangular,
                        Kernel::kEpanechnikov, Kernel::kTruncatedGaussian},
                       &KernelName);
}

}  // namespace streamreg
