// What a model accepts as a sample's inputs or targets (core/model/
// sample.h): the expected count, finite values within +-2^200 (the bound
// included), and an error naming the field and the value otherwise.
#include "core/model/sample.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST(SampleTest, AcceptsFiniteValuesWithinTheBound) {
  EXPECT_TRUE(
      ValidateValues(std::vector<double>{0.0, -2.5, 1e60}, 3, "samples[0].x")
          .ok());
  EXPECT_TRUE(ValidateValues(
                  std::vector<double>{kMaxValueMagnitude, -kMaxValueMagnitude},
                  2, "samples[0].y")
                  .ok());
}

TEST(SampleTest, RefusesNamingTheFieldAndTheValue) {
  const double inf = std::numeric_limits<double>::infinity();
  const struct {
    std::vector<double> values;
    const char* error;
  } cases[] = {
      {{1.0, 2.0}, "samples[3].x: has 2 values, the model expects 3"},
      {{1.0, std::nan(""), 2.0}, "samples[3].x[1]: NaN"},
      {{1.0, 2.0, -inf}, "samples[3].x[2]: -inf is not finite or beyond"},
      {{std::nextafter(kMaxValueMagnitude, inf), 0.0, 0.0},
       "samples[3].x[0]: "},
  };
  for (const auto& [values, error] : cases) {
    const absl::Status status = ValidateValues(values, 3, "samples[3].x");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr(error));
  }
}

}  // namespace
}  // namespace streamreg
