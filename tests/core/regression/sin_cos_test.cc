// SinCos against std::sin and std::cos: within 4 units in the last place
// over angles from 1e-6 to 1e6 in magnitude, both signs, near multiples of
// pi/2 and at the bounds of its reduction; beyond them (and at NaN and
// infinity) it is theirs; an odd count and an angle span that is also the
// sines' are handled.
#include "core/regression/sin_cos.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

// |got - want| in units in the last place of want (of its magnitude, at
// least the smallest normal's).
double UlpsApart(double got, double want) {
  const double magnitude =
      std::max(std::fabs(want), std::numeric_limits<double>::min());
  const double ulp =
      std::nextafter(magnitude, std::numeric_limits<double>::infinity()) -
      magnitude;
  return std::fabs(got - want) / ulp;
}

std::vector<double> TestAngles() {
  std::vector<double> angles = {
      0.0,    -0.0,   1e-300, std::numbers::pi / 4, -std::numbers::pi / 4,
      0x1p20, -0x1p20};
  for (int k = -40; k <= 40; ++k) {
    const double multiple = k * std::numbers::pi / 2;
    angles.push_back(multiple);
    angles.push_back(std::nextafter(multiple, 1e300));
    angles.push_back(multiple + 1e-9);
  }
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> exponent(-6.0, 6.0);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int i = 0; i < 20000; ++i) {
    angles.push_back(unit(random) * std::pow(10.0, exponent(random)));
  }
  return angles;
}

TEST(SinCosTest, IsWithinFourUlpsOfTheLibrary) {
  const std::vector<double> angles = TestAngles();
  std::vector<double> sines(angles.size()), cosines(angles.size());
  SinCos(angles, 1.0, sines, cosines);
  double worst = 0.0;
  for (std::size_t i = 0; i < angles.size(); ++i) {
    const double x = angles[i];
    // Near a zero of sin or cos the result's own ulp is tiny; the error
    // of the reduction is measured against the larger of the two.
    const double scale = std::max(std::fabs(std::sin(x)), 1e-300);
    ASSERT_LE(UlpsApart(sines[i], std::sin(x)),
              4.0 * std::max(1.0, 1e-16 / scale))
        << x;
    ASSERT_LE(UlpsApart(cosines[i], std::cos(x)),
              4.0 * std::max(1.0, 1e-16 / std::fabs(std::cos(x))))
        << x;
    worst = std::max(worst, UlpsApart(sines[i], std::sin(x)));
  }
  EXPECT_LT(worst, 4.0);
}

TEST(SinCosTest, ScalesOddCountsInPlaceAndLeavesLargeAnglesToTheLibrary) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<double> angles = {0.5, 3e6, -1e12, 2.0, nan, infinity, 7.25};
  const std::vector<double> original = angles;
  std::vector<double> cosines(angles.size());
  // The sines over the angles themselves.
  SinCos(angles, 0.5, angles, cosines);
  for (std::size_t i = 0; i < original.size(); ++i) {
    const double x = original[i];
    if (std::isnan(std::sin(x))) {
      EXPECT_TRUE(std::isnan(angles[i])) << x;
      EXPECT_TRUE(std::isnan(cosines[i])) << x;
      continue;
    }
    if (std::fabs(x) > 0x1p20) {
      EXPECT_EQ(angles[i], 0.5 * std::sin(x)) << x;
      EXPECT_EQ(cosines[i], 0.5 * std::cos(x)) << x;
      continue;
    }
    EXPECT_NEAR(angles[i], 0.5 * std::sin(x), 1e-16) << x;
    EXPECT_NEAR(cosines[i], 0.5 * std::cos(x), 1e-16) << x;
  }
}

}  // namespace
}  // namespace streamreg
