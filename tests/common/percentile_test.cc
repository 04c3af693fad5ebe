#include "common/percentile.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Nearest rank by definition: the smallest value v with at least q * n of
// the values <= v.
double ByDefinition(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  for (double v : values) {
    const double at_or_below = static_cast<double>(
        std::upper_bound(values.begin(), values.end(), v) - values.begin());
    if (at_or_below >= q * static_cast<double>(values.size())) return v;
  }
  return values.back();
}

TEST(PercentileTest, EqualsTheNearestRankDefinition) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int> small(0, 20);  // many ties
  for (int n : {1, 2, 3, 10, 101, 1000}) {
    std::vector<double> values(n);
    for (double& v : values) v = small(random);
    for (double q : {0.0, 0.001, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
      EXPECT_EQ(ByDefinition(values, q), Percentile(values, q))
          << "n=" << n << " q=" << q;
    }
  }
}

TEST(PercentileTest, EndsAndEmpty) {
  EXPECT_EQ(0.0, Percentile({}, 0.5));
  EXPECT_EQ(1.0, Percentile({3, 1, 2}, 0.0));
  EXPECT_EQ(3.0, Percentile({3, 1, 2}, 1.0));
  EXPECT_EQ(2.0, Percentile({3, 1, 2}, 0.5));
  // 100 values 1..100: the p99 is the 99th.
  std::vector<double> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[i] = 100 - i;
  EXPECT_EQ(99.0, Percentile(hundred, 0.99));
  EXPECT_EQ(50.0, Percentile(hundred, 0.5));
}

}  // namespace
}  // namespace streamreg
