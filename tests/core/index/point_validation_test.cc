// What an index accepts as a point (core/index/point_validation.h): its
// dimension, finite coordinates within +-2^500 (the bound included), and
// an error naming the point and the coordinate otherwise.
#include "core/index/point_validation.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST(PointValidationTest, AcceptsFinitePointsWithinTheBound) {
  EXPECT_TRUE(ValidatePoint(std::vector<double>{0.0, -1.5, 3e10}, 3, "p").ok());
  EXPECT_TRUE(ValidatePoint(std::vector<double>{kMaxCoordinateMagnitude,
                                                -kMaxCoordinateMagnitude},
                            2, "p")
                  .ok());
  EXPECT_TRUE(ValidatePoint({}, 0, "p").ok());
}

TEST(PointValidationTest, RefusesNamingThePointAndTheCoordinate) {
  const double inf = std::numeric_limits<double>::infinity();
  const struct {
    std::vector<double> point;
    const char* error;
  } cases[] = {
      {{1.0, 2.0}, "point id 17: has 2 coordinates, the index has 3"},
      {{1.0, std::nan(""), 2.0}, "point id 17: coordinate 1 is NaN"},
      {{1.0, 2.0, inf}, "point id 17: coordinate 2 is inf"},
      {{-inf, 2.0, 3.0}, "point id 17: coordinate 0 is -inf"},
      {{0.0, std::nextafter(kMaxCoordinateMagnitude, inf), 0.0},
       "point id 17: coordinate 1 is"},
  };
  for (const auto& [point, error] : cases) {
    const absl::Status status = ValidatePoint(point, 3, "point id 17");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr(error));
  }
  EXPECT_THAT(
      ValidatePoint(std::vector<double>{0.0, 1e200 * 1e200, 0.0}, 3, "query")
          .message(),
      HasSubstr("outside [-2^500, 2^500]"));
}

}  // namespace
}  // namespace streamreg
