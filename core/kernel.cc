#include "core/kernel.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/enum_names.h"

namespace streamreg {
namespace {

// The truncated Gaussian has standard deviation s = 1/3 of the bandwidth
// (truncated at 3 s) and is shifted down by its value at 1, so K(1) = 0.
constexpr double kGaussianInverseTwoVariance = 9.0 / 2.0;
const double kGaussianFloor = std::exp(-kGaussianInverseTwoVariance);

}  // namespace

double KernelWeightOfSquare(Kernel kernel, double u_squared) {
  if (!(u_squared < 1.0)) return 0.0;
  switch (kernel) {
    case Kernel::kBox:
      return 1.0;
    case Kernel::kTriangular:
      return 1.0 - std::sqrt(u_squared);
    case Kernel::kEpanechnikov:
      return 1.0 - u_squared;
    case Kernel::kTruncatedGaussian:
      return std::exp(-kGaussianInverseTwoVariance * u_squared) -
             kGaussianFloor;
  }
  return 0.0;
}

double KernelWeight(Kernel kernel, double u) {
  if (!(u < 1.0)) return 0.0;
  if (kernel == Kernel::kTriangular) return 1.0 - u;
  return KernelWeightOfSquare(kernel, u * u);
}

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
