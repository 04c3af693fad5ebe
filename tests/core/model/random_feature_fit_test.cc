// A random-feature base's fit as snapshots keep it (core/model/
// random_feature_fit.h): saved and loaded, it predicts to the bit as the
// original; a truncated one, or one of other dimensions, loads as nothing.
#include "core/model/random_feature_fit.h"

#include <random>
#include <string>
#include <vector>

#include "core/base/byte_coding.h"
#include "gtest/gtest.h"
#include "tests/support/cut_bytes.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

RandomFeatureFit LearnedFit() {
  RandomFeatureFit fit{
      MetricTransform::Diagonal({0.5, 0, 0}, {1.0, 2.0, 0.5}, {1.0, 3.0, 0.2}),
      RandomFeatureRidge(kDim, kTargets, {.num_frequencies = 16, .seed = 7})};
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int i = 0; i < 200; ++i) {
    const std::vector<double> x = {uniform(random), uniform(random),
                                   uniform(random)};
    const std::vector<double> y = {std::sin(3 * x[0]) + x[1], x[2] * x[2]};
    fit.ridge.Add(fit.transform.Apply(x), y);
  }
  return fit;
}

std::string Saved(const RandomFeatureFit& fit) {
  std::string bytes;
  ByteWriter out(&bytes);
  fit.Save(out);
  return bytes;
}

TEST(RandomFeatureFitTest, LoadedItPredictsToTheBitAsTheOriginal) {
  const RandomFeatureFit fit = LearnedFit();
  const std::string bytes = Saved(fit);
  ByteReader in(bytes);
  const std::optional<RandomFeatureFit> loaded =
      RandomFeatureFit::Load(in, kDim, kTargets);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(in.ok());
  EXPECT_EQ(Saved(*loaded), bytes);
  std::mt19937_64 random(4);
  std::uniform_real_distribution<double> uniform(-1.5, 1.5);
  for (int q = 0; q < 50; ++q) {
    const std::vector<double> x = {uniform(random), uniform(random),
                                   uniform(random)};
    double a[kTargets], b[kTargets];
    fit.ridge.Predict(fit.transform.Apply(x), a);
    loaded->ridge.Predict(loaded->transform.Apply(x), b);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[1], b[1]);
  }
}

TEST(RandomFeatureFitTest, ATruncatedOrOtherShapedOneLoadsAsNothing) {
  const std::string bytes = Saved(LearnedFit());
  ExpectEveryCutLoadsAsNothing(bytes, [](ByteReader& in) {
    return RandomFeatureFit::Load(in, kDim, kTargets);
  });
  ByteReader wider(bytes);
  EXPECT_FALSE(RandomFeatureFit::Load(wider, kDim + 1, kTargets).has_value());
  ByteReader more_targets(bytes);
  EXPECT_FALSE(
      RandomFeatureFit::Load(more_targets, kDim, kTargets + 1).has_value());
}

}  // namespace
}  // namespace streamreg
