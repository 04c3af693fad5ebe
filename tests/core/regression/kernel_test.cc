// The smoothing kernels (core/regression/kernel.h) against their closed
// forms written out independently (tests/support/kernel_reference.h), with
// the admissibility the estimators rely on (Trivedi et al. 2014,
// Definition 1): nonincreasing, positive on [0, 1), zero from 1 on (and
// for a ratio that is not a number); names read back, and an unknown one
// refused naming the choices.
#include "core/regression/kernel.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/kernel_reference.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST(KernelTest, EveryKernelIsAdmissible) {
  // Trivedi et al. Definition 1: nonincreasing, positive on [0, 1), K(1) = 0.
  for (Kernel kernel : kAllKernels) {
    SCOPED_TRACE(KernelName(kernel));
    double previous = KernelWeight(kernel, 0.0);
    EXPECT_GT(previous, 0.0);
    for (double u = 0.001; u < 1.0; u += 0.001) {
      const double k = KernelWeight(kernel, u);
      EXPECT_GT(k, 0.0);
      EXPECT_LE(k, previous);
      EXPECT_NEAR(k, ReferenceKernel(kernel, u), 1e-15);
      EXPECT_NEAR(KernelWeightOfSquare(kernel, u * u), k, 1e-12);
      previous = k;
    }
    EXPECT_EQ(KernelWeight(kernel, 1.0), 0.0);
    EXPECT_EQ(KernelWeight(kernel, 1.5), 0.0);
    EXPECT_EQ(*ParseKernel(KernelName(kernel)), kernel);
  }
  EXPECT_FALSE(ParseKernel("cosine").ok());
}

TEST(KernelTest, NothingOutsideTheBandwidthWeighs) {
  for (Kernel kernel : kAllKernels) {
    SCOPED_TRACE(KernelName(kernel));
    for (double outside :
         {1.0 + 1e-12, 2.0, std::numeric_limits<double>::infinity()}) {
      EXPECT_EQ(KernelWeight(kernel, outside), 0.0) << outside;
      EXPECT_EQ(KernelWeightOfSquare(kernel, outside * outside), 0.0);
    }
    EXPECT_EQ(KernelWeight(kernel, std::nan("")), 0.0);
    EXPECT_EQ(KernelWeightOfSquare(kernel, std::nan("")), 0.0);
  }
  const absl::StatusOr<Kernel> unknown = ParseKernel("cosine");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("epanechnikov"));
}

}  // namespace
}  // namespace streamreg
