// bench learn's running coverage against counting by hand.
#include "client/cli/interval_coverage.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

v1::Prediction Interval(double lower0, double upper0, double lower1,
                        double upper1) {
  v1::Prediction prediction;
  prediction.add_y(0);
  prediction.add_y(0);
  prediction.add_lower(lower0);
  prediction.add_upper(upper0);
  prediction.add_lower(lower1);
  prediction.add_upper(upper1);
  return prediction;
}

TEST(IntervalCoverageTest, CountsWithinOverAllAndPerFullWindow) {
  IntervalCoverage coverage(2, 3);
  const double inf = std::numeric_limits<double>::infinity();
  // Target 0 within 4 of 5 (an end counts as within); target 1 within 2
  // of 5 (an infinite interval covers everything).
  const std::vector<double> truth = {1.0, 1.0};
  coverage.Add(Interval(0, 2, 2, 3), truth);       // in, out
  coverage.Add(Interval(1, 1, -inf, inf), truth);  // in, in
  coverage.Add(Interval(2, 3, 0, 0.5), truth);     // out, out
  coverage.Add(Interval(-1, 1, 1, 2), truth);      // in, in
  coverage.Add(Interval(0, 5, 5, 6), truth);       // in, out
  // Without intervals (an older server): not counted.
  v1::Prediction bare;
  bare.add_y(0);
  bare.add_y(0);
  coverage.Add(bare, truth);

  EXPECT_EQ(coverage.counted(), 5u);
  const std::vector<double> all = coverage.Coverage();
  EXPECT_DOUBLE_EQ(all[0], 4.0 / 5);
  EXPECT_DOUBLE_EQ(all[1], 2.0 / 5);
  // One full window of 3; the last 2 samples are not a window yet.
  ASSERT_EQ(coverage.window_coverage().size(), 1u);
  EXPECT_DOUBLE_EQ(coverage.window_coverage()[0][0], 2.0 / 3);
  EXPECT_DOUBLE_EQ(coverage.window_coverage()[0][1], 1.0 / 3);
}

TEST(IntervalCoverageTest, NothingCountedIsNotANumber) {
  const IntervalCoverage coverage(3, 10);
  for (double value : coverage.Coverage()) EXPECT_TRUE(std::isnan(value));
  EXPECT_TRUE(coverage.window_coverage().empty());
}

}  // namespace
}  // namespace streamreg
