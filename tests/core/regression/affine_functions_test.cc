#include "core/regression/affine_functions.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/base/vector_lanes.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Coefficients and a point of mixed magnitudes, so that a sum taken in
// another order rounds differently.
struct Case {
  Case(std::size_t d, std::size_t m, std::uint64_t seed)
      : d(d), m(m), intercepts(m), slopes(d * m), x(d) {
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal;
    std::uniform_int_distribution<int> exponent(-20, 20);
    const auto value = [&] {
      return std::ldexp(normal(random), exponent(random));
    };
    for (double& a : intercepts) a = value();
    for (double& b : slopes) b = value();
    for (double& v : x) v = value();
  }
  std::size_t d, m;
  std::vector<double> intercepts;
  std::vector<double> slopes;  // m x d, function-major
  std::vector<double> x;
};

// The values as the class documents them: a_t + ((s_0 + s_1) + (s_2 +
// s_3)), s_r the sum over j = r mod 4 in the inputs' order.
std::vector<double> Reference(const Case& c) {
  std::vector<double> out(c.m);
  for (std::size_t t = 0; t < c.m; ++t) {
    double sums[4] = {0.0, 0.0, 0.0, 0.0};
    for (std::size_t j = 0; j < c.d; ++j) {
      sums[j % 4] += c.slopes[t * c.d + j] * c.x[j];
    }
    out[t] = c.intercepts[t] + ((sums[0] + sums[1]) + (sums[2] + sums[3]));
  }
  return out;
}

using Evaluation = void (AffineFunctions::*)(std::span<const double>,
                                             std::span<double>) const;

void ExpectTheReferenceValues(Evaluation evaluate) {
  for (std::size_t d : {1, 2, 3, 4, 5, 8, 13, 21, 22}) {
    for (std::size_t m : {1, 2, 3, 4, 5, 7, 8, 9, 14}) {
      const Case c(d, m, 100 * d + m);
      AffineFunctions functions;
      functions.Assign(c.intercepts, c.slopes);
      ASSERT_EQ(functions.num_functions(), m);
      // One entry more than m: it is left alone.
      std::vector<double> out(m + 1, -7.0);
      (functions.*evaluate)(c.x, out);
      const std::vector<double> want = Reference(c);
      for (std::size_t t = 0; t < m; ++t) {
        ASSERT_EQ(out[t], want[t])
            << "target " << t << " of d = " << d << ", m = " << m;
      }
      ASSERT_EQ(out[m], -7.0) << "d = " << d << ", m = " << m;
    }
  }
}

TEST(AffineFunctionsTest, EachValueSumsFourPartialSumsInTheInputsOrder) {
  ExpectTheReferenceValues(&AffineFunctions::Evaluate);
  ExpectTheReferenceValues(&AffineFunctions::EvaluatePortable);
}

TEST(AffineFunctionsTest, Avx2GivesTheSameBitsAsSse2) {
  if (!RunsAvx2()) GTEST_SKIP() << "no AVX2 here, or STREAMREG_NO_AVX2 set";
  ExpectTheReferenceValues(&AffineFunctions::EvaluateAvx2);
}

TEST(AffineFunctionsTest, AssigningAgainReplacesTheFunctions) {
  const Case wide(21, 7, 1);
  const Case narrow(3, 2, 2);
  AffineFunctions functions;
  functions.Assign(wide.intercepts, wide.slopes);
  functions.Assign(narrow.intercepts, narrow.slopes);
  std::vector<double> out(2);
  functions.Evaluate(narrow.x, out);
  EXPECT_EQ(out, Reference(narrow));
}

}  // namespace
}  // namespace streamreg
