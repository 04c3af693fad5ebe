// Adaptive conformal calibration against its definition: the multiplier is
// the ceil((n + 1)(1 - a))-th smallest of the last `window` scores (brute
// force, after every score), alpha_t follows Gibbs & Candès's update; split
// conformal (step 0) covers exchangeable scores at its level within the
// finite-sample bounds; under drift every 10,000-sample stretch is within
// the proven bound of the level; replaced scores are kept as if they had
// arrived in their place; snapshots go on exactly; damaged ones are
// refused.
#include "core/regression/adaptive_conformal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The multiplier by its definition, over the kept scores in any order.
double BruteMultiplier(std::vector<double> kept, double miscoverage) {
  if (miscoverage >= 1.0) return 0.0;
  if (miscoverage <= 0.0) return kInfinity;
  std::sort(kept.begin(), kept.end());
  const std::size_t n = kept.size();
  // The smallest integer r with r >= (n + 1)(1 - a), counted exactly for
  // the levels used here (a multiple of 1/1000).
  const auto thousandths =
      static_cast<std::size_t>(std::lround((1.0 - miscoverage) * 1000));
  const std::size_t rank =
      std::max<std::size_t>(1, ((n + 1) * thousandths + 999) / 1000);
  return rank > n ? kInfinity : kept[rank - 1];
}

TEST(AdaptiveConformalTest,
     TheMultiplierIsTheRankOfTheDefinitionOverTheWindow) {
  std::mt19937_64 random(1);
  std::exponential_distribution<double> exponential(1.0);
  AdaptiveConformal conformal(2, {.level = 0.9, .window = 50, .step = 0.0});
  std::vector<std::vector<double>> all(2);
  for (int i = 0; i < 400; ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      // Ties too: target 1's scores on a coarse grid.
      const double score = t == 0 ? exponential(random)
                                  : std::floor(4 * exponential(random)) / 4;
      const std::vector<double> kept(
          all[t].end() - std::min<std::ptrdiff_t>(50, all[t].size()),
          all[t].end());
      const bool within = conformal.Add(t, score);
      ASSERT_EQ(within, score <= BruteMultiplier(kept, 0.1)) << i;
      all[t].push_back(score);
      const std::vector<double> now(
          all[t].end() - std::min<std::ptrdiff_t>(50, all[t].size()),
          all[t].end());
      ASSERT_EQ(conformal.kept(t), now.size());
      // Levels 0.02 to 0.98 reach every rank of the 50 kept (and 0.99
      // none): the whole order is checked, not a few of its ranks.
      for (int thousandths = 20; thousandths <= 990;
           thousandths += thousandths < 980 ? 20 : 10) {
        const double level = thousandths / 1000.0;
        ASSERT_EQ(conformal.Multiplier(t, level),
                  BruteMultiplier(now, 1.0 - level))
            << "score " << i << " target " << t << " level " << level;
      }
      ASSERT_EQ(conformal.Multiplier(t), BruteMultiplier(now, 0.1));
    }
  }
  // With 50 kept: the 46th smallest at 90%, none at 99% (51 > 50).
  EXPECT_EQ(conformal.Multiplier(0, 0.99), kInfinity);
  EXPECT_LT(conformal.Multiplier(0, 0.8), conformal.Multiplier(0, 0.95));
}

TEST(AdaptiveConformalTest, AlphaFollowsTheAdaptiveUpdate) {
  std::mt19937_64 random(2);
  std::exponential_distribution<double> exponential(1.0);
  const double step = 0.01, alpha = 0.2;
  AdaptiveConformal conformal(1, {.level = 0.8, .window = 30, .step = step});
  std::vector<double> all;
  double expected_alpha = alpha;
  std::uint64_t within_count = 0;
  for (int i = 0; i < 3000; ++i) {
    // A scale that jumps: the interval must widen after it.
    const double score = exponential(random) * (i >= 1500 ? 4.0 : 1.0);
    const std::vector<double> kept(
        all.end() - std::min<std::ptrdiff_t>(30, all.size()), all.end());
    // The multiplier at the adapted level, brute force (alpha_t is not a
    // multiple of 1/1000 here: the rank counted in doubles).
    std::vector<double> sorted = kept;
    std::sort(sorted.begin(), sorted.end());
    double q;
    if (expected_alpha >= 1.0) {
      q = 0.0;
    } else if (expected_alpha <= 0.0) {
      q = kInfinity;
    } else {
      const double r = std::max(
          1.0, std::ceil((sorted.size() + 1) * (1.0 - expected_alpha) - 1e-9));
      q = r > sorted.size() ? kInfinity
                            : sorted[static_cast<std::size_t>(r) - 1];
    }
    const bool within = score <= q;
    ASSERT_EQ(conformal.Add(0, score), within) << i;
    expected_alpha += step * (alpha - (within ? 0.0 : 1.0));
    ASSERT_DOUBLE_EQ(conformal.adapted_miscoverage(0), expected_alpha) << i;
    within_count += within;
    all.push_back(score);
    // Lemma 4.1 of Gibbs & Candès: alpha_t stays in [-step, 1 + step].
    ASSERT_GE(conformal.adapted_miscoverage(0), -step);
    ASSERT_LE(conformal.adapted_miscoverage(0), 1.0 + step);
  }
  EXPECT_EQ(conformal.scored(0), 3000u);
  EXPECT_EQ(conformal.covered(0), within_count);
}

// Exchangeable scores, fixed alpha: each is within its interval with
// probability in [1 - alpha, 1 - alpha + 1 / (n + 1)]; over 40,000 scores
// (a binomial's sd 0.15 points) the fraction is within 1 point of it.
TEST(AdaptiveConformalTest, SplitConformalCoversExchangeableScoresAtItsLevel) {
  std::mt19937_64 random(3);
  std::lognormal_distribution<double> lognormal(0.0, 1.0);
  for (const double level : {0.8, 0.9, 0.95}) {
    AdaptiveConformal conformal(1,
                                {.level = level, .window = 1000, .step = 0.0});
    for (int i = 0; i < 1000; ++i) conformal.Add(0, lognormal(random));
    std::uint64_t within = 0;
    constexpr int kScores = 40000;
    for (int i = 0; i < kScores; ++i)
      within += conformal.Add(0, lognormal(random));
    const double coverage = static_cast<double>(within) / kScores;
    EXPECT_NEAR(coverage, level + 0.5 / 1001, 0.01) << "level " << level;
  }
}

// Drift: the scores' scale doubles every 7,000 samples and falls back. The
// fraction outside over every stretch of T = 10,000 is within
// (1 + 2 step) / (step T) of alpha (Gibbs & Candès, Proposition 4.1, from
// the stretch's first alpha_t); split conformal over the same window
// drifts further from it.
TEST(AdaptiveConformalTest,
     EveryStretchOfADriftingStreamIsCoveredWithinTheBound) {
  std::mt19937_64 random(4);
  std::exponential_distribution<double> exponential(1.0);
  constexpr int kScores = 80000, kStretch = 10000;
  const double step = 0.005;
  AdaptiveConformal adaptive(1, {.level = 0.9, .window = 2000, .step = step});
  AdaptiveConformal split(1, {.level = 0.9, .window = 2000, .step = 0.0});
  std::vector<int> outside_adaptive, outside_split;
  for (int i = 0; i < kScores; ++i) {
    const int phase = i / 7000;
    const double scale = phase % 3 == 0 ? 1.0 : (phase % 3 == 1 ? 2.0 : 6.0);
    // Within a phase the scale also creeps up (a slow drift).
    const double score =
        exponential(random) * scale * (1.0 + (i % 7000) / 3500.0);
    outside_adaptive.push_back(!adaptive.Add(0, score));
    outside_split.push_back(!split.Add(0, score));
  }
  const double bound = (1 + 2 * step) / (step * kStretch);
  double worst_adaptive = 0, worst_split = 0;
  for (int start = 0; start + kStretch <= kScores; start += 500) {
    const auto fraction = [&](const std::vector<int>& outside) {
      int count = 0;
      for (int i = start; i < start + kStretch; ++i) count += outside[i];
      return static_cast<double>(count) / kStretch;
    };
    worst_adaptive =
        std::max(worst_adaptive, std::abs(fraction(outside_adaptive) - 0.1));
    worst_split =
        std::max(worst_split, std::abs(fraction(outside_split) - 0.1));
  }
  EXPECT_LE(worst_adaptive, bound);
  EXPECT_GT(worst_split, worst_adaptive);
}

TEST(AdaptiveConformalTest, ASnapshotGoesOnExactly) {
  std::mt19937_64 random(5);
  std::exponential_distribution<double> exponential(1.0);
  AdaptiveConformal conformal(3, {.level = 0.95, .window = 40, .step = 0.02});
  // Ring wrapped on every target, at different places.
  for (int i = 0; i < 97; ++i) {
    for (std::size_t t = 0; t < 3; ++t) {
      if (i < 60 + 10 * static_cast<int>(t))
        conformal.Add(t, exponential(random));
    }
  }
  std::string saved;
  ByteWriter writer(&saved);
  conformal.Save(writer);
  ByteReader reader(saved);
  std::optional<AdaptiveConformal> back = AdaptiveConformal::Load(reader, 3);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->options().window, 40u);
  for (int i = 0; i < 200; ++i) {
    for (std::size_t t = 0; t < 3; ++t) {
      const double score = exponential(random);
      ASSERT_EQ(back->Add(t, score), conformal.Add(t, score));
      ASSERT_EQ(back->adapted_miscoverage(t), conformal.adapted_miscoverage(t));
      ASSERT_EQ(back->Multiplier(t, 0.8), conformal.Multiplier(t, 0.8));
      ASSERT_EQ(back->covered(t), conformal.covered(t));
    }
  }
}

TEST(AdaptiveConformalTest, RefusesDamagedSnapshots) {
  AdaptiveConformal conformal(2, {});
  for (int i = 0; i < 30; ++i) conformal.Add(i % 2, 0.1 * i);
  std::string saved;
  ByteWriter writer(&saved);
  conformal.Save(writer);
  for (const std::size_t cut :
       {std::size_t{0}, std::size_t{9}, saved.size() / 2, saved.size() - 1}) {
    ByteReader reader(absl::string_view(saved).substr(0, cut));
    EXPECT_FALSE(AdaptiveConformal::Load(reader, 2).has_value()) << cut;
  }
  ByteReader other(saved);
  EXPECT_FALSE(AdaptiveConformal::Load(other, 3).has_value());
  // A level outside (0, 1).
  std::string bad = saved;
  const double level = 1.5;
  bad.replace(0, sizeof level, reinterpret_cast<const char*>(&level),
              sizeof level);
  ByteReader bad_level(bad);
  EXPECT_FALSE(AdaptiveConformal::Load(bad_level, 2).has_value());
  ByteReader whole(saved);
  EXPECT_TRUE(AdaptiveConformal::Load(whole, 2).has_value());
}

// ReplaceOlder: the kept scores become `older` then the newest ones kept,
// the oldest dropped beyond the window, in arrival order (what the window
// drops next); alpha_t restarts at alpha and the counts stay.
TEST(AdaptiveConformalTest, ReplacedScoresAreKeptAsIfTheyHadArrivedInPlace) {
  std::mt19937_64 random(7);
  std::exponential_distribution<double> exponential(1.0);
  const AdaptiveConformal::Options options = {
      .level = 0.9, .window = 30, .step = 0.05};
  for (const std::size_t older_count : {5u, 20u, 40u}) {
    for (const std::size_t newest : {0u, 3u, 30u, 50u}) {
      SCOPED_TRACE(::testing::Message()
                   << older_count << " older, " << newest << " newest");
      AdaptiveConformal conformal(2, options);
      std::vector<double> arrived;
      // Target 0's ring wrapped (47 scores in a window of 30).
      for (int i = 0; i < 47; ++i) {
        arrived.push_back(exponential(random));
        conformal.Add(0, arrived.back());
        conformal.Add(1, 0.5);
      }
      const std::uint64_t scored = conformal.scored(0);
      const std::uint64_t covered = conformal.covered(0);
      ASSERT_NE(conformal.adapted_miscoverage(0), 1.0 - options.level);
      std::vector<double> older(older_count);
      for (double& score : older) score = 10.0 + exponential(random);
      conformal.ReplaceOlder(0, older, newest);
      // What a calibration given the same scores in that order keeps.
      std::vector<double> kept = older;
      const std::size_t newest_kept = std::min<std::size_t>(newest, 30);
      kept.insert(kept.end(), arrived.end() - newest_kept, arrived.end());
      if (kept.size() > 30) kept.erase(kept.begin(), kept.end() - 30);
      EXPECT_EQ(conformal.kept(0), kept.size());
      for (const double level : {0.5, 0.8, 0.9, 0.95}) {
        EXPECT_EQ(conformal.Multiplier(0, level),
                  BruteMultiplier(kept, 1.0 - level))
            << level;
      }
      EXPECT_EQ(conformal.adapted_miscoverage(0), 1.0 - options.level);
      EXPECT_EQ(conformal.scored(0), scored);
      EXPECT_EQ(conformal.covered(0), covered);
      // The window then drops them oldest first.
      for (int i = 0; i < 45; ++i) {
        const double score = exponential(random);
        conformal.Add(0, score);
        kept.push_back(score);
        if (kept.size() > 30) kept.erase(kept.begin());
        const double miscoverage =
            0.2 * conformal.adapted_miscoverage(0) / (1.0 - options.level);
        ASSERT_EQ(conformal.Multiplier(0, 0.8),
                  BruteMultiplier(kept, miscoverage))
            << i;
      }
      // The other target is untouched.
      EXPECT_EQ(conformal.Multiplier(1, 0.9), 0.5);
    }
  }
}

// A NaN score (0 / 0) counts as outside, and is kept as +inf.
TEST(AdaptiveConformalTest, ANanScoreIsOutside) {
  AdaptiveConformal conformal(1, {.level = 0.5, .window = 3, .step = 0.0});
  for (double s : {1.0, 2.0, 3.0}) conformal.Add(0, s);
  EXPECT_FALSE(conformal.Add(0, std::nan("")));
  EXPECT_EQ(conformal.Multiplier(0, 0.99), kInfinity);
  EXPECT_EQ(conformal.Multiplier(0, 0.5), 3.0);  // {2, 3, inf}: the 2nd
}

}  // namespace
}  // namespace streamreg
