#include "common/normalized_error.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Two passes, as the definition reads: mean squared error over the
// variance of the true values.
double TwoPassNmse(const std::vector<double>& predicted,
                   const std::vector<double>& truth) {
  double mean = 0.0;
  for (double y : truth) mean += y;
  mean /= truth.size();
  double error = 0.0, variance = 0.0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    error += (predicted[i] - truth[i]) * (predicted[i] - truth[i]);
    variance += (truth[i] - mean) * (truth[i] - mean);
  }
  return error / variance;
}

TEST(NormalizedErrorTest, EqualsTheTwoPassDefinitionPerTarget) {
  std::mt19937_64 random(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  // Two targets of very different scale and offset.
  std::vector<double> p0, y0, p1, y1;
  NormalizedError error(2);
  for (int i = 0; i < 5000; ++i) {
    y0.push_back(450.0 + 17.0 * noise(random));
    p0.push_back(y0.back() + 3.0 * noise(random));
    y1.push_back(1e-3 * noise(random));
    p1.push_back(0.0);
    const double predicted[] = {p0.back(), p1.back()};
    const double truth[] = {y0.back(), y1.back()};
    error.Add(predicted, truth);
  }
  EXPECT_EQ(5000u, error.count());
  EXPECT_NEAR(TwoPassNmse(p0, y0), error.Nmse(0), 1e-12);
  EXPECT_NEAR(TwoPassNmse(p1, y1), error.Nmse(1), 1e-12);
  // Predicting 0 for a zero-mean target is predicting its mean: nMSE ~ 1.
  EXPECT_NEAR(1.0, error.Nmse(1), 0.01);
  EXPECT_NEAR((error.Nmse(0) + error.Nmse(1)) / 2, error.MeanNmse(), 1e-15);
}

TEST(NormalizedErrorTest, AWindowUsesTheWholeStreamsVariance) {
  NormalizedError error(1);
  const double truth[] = {0, 2, 4, 6};  // variance 5
  for (double y : truth) {
    const double predicted = y + 1.0;  // squared error 1
    error.Add({&predicted, 1}, {&y, 1});
    if (y == 2) error.StartWindow();
  }
  EXPECT_DOUBLE_EQ(1.0 / 5.0, error.Nmse(0));
  EXPECT_EQ(2u, error.window_count());
  EXPECT_DOUBLE_EQ(1.0 / 5.0, error.WindowMeanNmse());
}

TEST(NormalizedErrorTest, ConstantTruthHasNoNmse) {
  NormalizedError error(1);
  const double y = 3.0, predicted = 4.0;
  for (int i = 0; i < 3; ++i) error.Add({&predicted, 1}, {&y, 1});
  EXPECT_EQ(0.0, error.Nmse(0));
  EXPECT_EQ(0.0, NormalizedError(2).MeanNmse());
}

}  // namespace
}  // namespace streamreg
