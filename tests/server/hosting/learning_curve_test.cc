// LearningCurve: the even spacing, the thinning that keeps it bounded, and
// a restored model's first step, against the counts worked out by hand.
#include "server/hosting/learning_curve.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Stats whose errors are a function of the count, to tell points apart.
ModelStats StatsAt(std::uint64_t samples) {
  ModelStats stats;
  stats.samples_seen = samples;
  stats.prequential_nmse = {1.0 / static_cast<double>(samples), 0.5};
  stats.honest_nmse = {2.0 / static_cast<double>(samples), 0.25};
  return stats;
}

// Learns one sample at a time up to `last`, recording what is due.
void LearnOneByOne(LearningCurve& curve, std::uint64_t first,
                   std::uint64_t last) {
  for (std::uint64_t learned = first; learned <= last; ++learned) {
    if (curve.Due(learned)) curve.Record(learned, StatsAt(learned));
  }
}

std::vector<std::uint64_t> Samples(const LearningCurve& curve) {
  std::vector<std::uint64_t> samples;
  for (const LearningCurve::Point& point : curve.Points()) {
    samples.push_back(point.samples);
  }
  return samples;
}

TEST(LearningCurveTest, KeepsAPointEveryStepFromTheFirstSample) {
  LearningCurve curve;
  LearnOneByOne(curve, 1, 100);
  EXPECT_EQ(Samples(curve),
            (std::vector<std::uint64_t>{1, 16, 32, 48, 64, 80, 96}));
  const std::vector<LearningCurve::Point> points = curve.Points();
  EXPECT_EQ(points[2].prequential_nmse, (std::vector<double>{1.0 / 32, 0.5}));
  EXPECT_EQ(points[2].honest_nmse, (std::vector<double>{2.0 / 32, 0.25}));
  EXPECT_EQ(curve.next_due(), 112u);
}

TEST(LearningCurveTest, ThinsToEveryOtherPointAndDoublesTheStep) {
  LearningCurve curve;
  // Points at 1, 16, ..., 16 * 255 fill it; the one at 4096 thins it.
  LearnOneByOne(curve, 1, 16 * 255);
  ASSERT_EQ(curve.Points().size(), LearningCurve::kCapacity);
  EXPECT_EQ(curve.step(), 16u);
  LearnOneByOne(curve, 16 * 255 + 1, 4096);
  std::vector<std::uint64_t> samples = Samples(curve);
  ASSERT_EQ(samples.size(), LearningCurve::kCapacity / 2 + 1);
  EXPECT_EQ(curve.step(), 32u);
  // The odd places stayed: 16, 48, ..., 4080, then 4096.
  for (std::size_t i = 0; i + 1 < samples.size(); ++i) {
    EXPECT_EQ(samples[i], 16 + 32 * i) << i;
  }
  EXPECT_EQ(samples.back(), 4096u);
  // Far on, it stays bounded and covers the whole history evenly.
  LearnOneByOne(curve, 4097, 1'000'000);
  samples = Samples(curve);
  EXPECT_LE(samples.size(), LearningCurve::kCapacity);
  EXPECT_GE(samples.size(), LearningCurve::kCapacity / 2);
  EXPECT_LE(samples.front(), curve.step());
  EXPECT_GT(samples.back() + curve.step(), 1'000'000u);
  for (std::size_t i = 1; i < samples.size(); ++i) {
    EXPECT_LE(samples[i] - samples[i - 1], curve.step()) << i;
  }
}

TEST(LearningCurveTest, ARestoredModelStartsAtTheStepItsCountReached) {
  LearningCurve curve;
  ASSERT_TRUE(curve.Due(3'000'000));
  curve.Record(3'000'000, StatsAt(3'000'000));
  // 3,000,000 / 128 = 23,437.5: the next power of two.
  EXPECT_EQ(curve.step(), 32768u);
  EXPECT_EQ(curve.next_due(), (3'000'000u / 32768 + 1) * 32768);
  // A point not after the last is ignored.
  curve.Record(3'000'000, StatsAt(1));
  EXPECT_EQ(curve.Points().size(), 1u);
  EXPECT_EQ(curve.Points()[0].prequential_nmse[0], 1.0 / 3'000'000);
}

}  // namespace
}  // namespace streamreg
