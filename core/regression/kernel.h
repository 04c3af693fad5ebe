#ifndef STREAMREG_CORE_REGRESSION_KERNEL_H_
#define STREAMREG_CORE_REGRESSION_KERNEL_H_

#include <cmath>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// The smoothing kernels of the Nadaraya–Watson regressor. Each is an
// admissible kernel in the sense of Trivedi et al. 2014, Definition 1:
// K : R+ -> R+ nonincreasing, K > 0 on [0, 1), K(1) = 0 — so only samples
// strictly closer than the bandwidth h contribute, and "a sample lies in
// B(x, h)" means exactly "it has positive weight".
enum class Kernel {
  kBox,                // K(u) = 1
  kTriangular,         // K(u) = 1 - u
  kEpanechnikov,       // K(u) = 1 - u^2
  kTruncatedGaussian,  // K(u) = exp(-u^2 / 2s^2) - exp(-1 / 2s^2), s = 1/3
};

// The truncated Gaussian has standard deviation s = 1/3 of the bandwidth
// (truncated at 3 s) and is shifted down by its value at 1, so K(1) = 0.
inline constexpr double kGaussianInverseTwoVariance = 9.0 / 2.0;
inline const double kGaussianFloor = std::exp(-kGaussianInverseTwoVariance);

// K as a function of the squared ratio u^2, which spares a square root
// where squared distances are at hand. Inline: it runs once per neighbour.
inline double KernelWeightOfSquare(Kernel kernel, double u_squared) {
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

// K(u) for u = distance / h >= 0 (zero from u = 1 on).
inline double KernelWeight(Kernel kernel, double u) {
  if (!(u < 1.0)) return 0.0;
  if (kernel == Kernel::kTriangular) return 1.0 - u;
  return KernelWeightOfSquare(kernel, u * u);
}

// "box", "triangular", "epanechnikov", "gaussian".
absl::string_view KernelName(Kernel kernel);
absl::StatusOr<Kernel> ParseKernel(absl::string_view name);

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_KERNEL_H_
