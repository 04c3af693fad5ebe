// The status page's recent predictions (server/hosting/
// recent_predictions.h), against a brute-force list of every scored sample
// recorded: the last kCapacity of them, oldest first, each with its place in
// the stream, its truth and the prediction made for it; samples not scored
// passed over, in batches of any size.
#include "server/hosting/recent_predictions.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr std::size_t kCapacity = RecentPredictions::kCapacity;

// Records batches of random sizes (some past the capacity), every sample
// scored with probability `scored`, and checks the entries against the
// last kCapacity scored samples after each.
void ExpectTheLastScored(double scored, std::uint64_t seed) {
  RecentPredictions recent;
  std::vector<RecentPredictions::Entry> all;  // every scored one, in order
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> batch_size(1, 3 * kCapacity);
  std::bernoulli_distribution is_scored(scored);
  std::uint64_t next = 1;
  for (int b = 0; b < 12; ++b) {
    const std::size_t n = batch_size(random);
    std::vector<double> y(2 * n);
    std::vector<Sample> samples;
    std::vector<Prediction> predictions(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double at = static_cast<double>(next + i);
      y[2 * i] = at;
      y[2 * i + 1] = -at;
      samples.push_back({{}, {&y[2 * i], 2}, 0});
      if (!is_scored(random)) continue;
      predictions[i].value = {at + 0.5, -at + 0.5};
      predictions[i].lower = {at - 1, -at - 1};
      predictions[i].upper = {at + 1, -at + 1};
      all.push_back({next + i,
                     {at, -at},
                     predictions[i].value,
                     predictions[i].lower,
                     predictions[i].upper});
    }
    recent.Record(next, samples, predictions);
    next += n;

    const std::vector<RecentPredictions::Entry> entries = recent.Entries();
    const std::size_t kept = std::min(all.size(), kCapacity);
    ASSERT_EQ(entries.size(), kept) << "after batch " << b;
    for (std::size_t e = 0; e < kept; ++e) {
      const RecentPredictions::Entry& expected = all[all.size() - kept + e];
      ASSERT_EQ(entries[e].sample, expected.sample) << "entry " << e;
      EXPECT_EQ(entries[e].truth, expected.truth);
      EXPECT_EQ(entries[e].value, expected.value);
      EXPECT_EQ(entries[e].lower, expected.lower);
      EXPECT_EQ(entries[e].upper, expected.upper);
    }
  }
}

TEST(RecentPredictionsTest, KeepsTheLastScoredSamplesOldestFirst) {
  ExpectTheLastScored(1.0, 1);
}

// A large store scores one sample in its stride: a batch longer than the
// capacity still leaves the last kCapacity scored ones, not only those
// among its last kCapacity samples.
TEST(RecentPredictionsTest, PassesOverTheSamplesNotScored) {
  ExpectTheLastScored(0.5, 2);
  ExpectTheLastScored(0.125, 3);
}

TEST(RecentPredictionsTest, IsEmptyUntilASampleIsScored) {
  RecentPredictions recent;
  EXPECT_TRUE(recent.Entries().empty());
  const double y = 1.0;
  const Sample sample{{}, {&y, 1}, 0};
  Prediction none;
  recent.Record(1, {&sample, 1}, {&none, 1});
  EXPECT_TRUE(recent.Entries().empty());
}

}  // namespace
}  // namespace streamreg
