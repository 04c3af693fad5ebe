// The recalibration's bookkeeping (IntervalRecalibration): a pass rescores
// the last min(window, n) stored samples evenly over the samples learned
// next, `rate` a sample up to kFullRateBelow stored and fewer after; it
// replaces the kept scores when the band's scores are not kSeriesRatio times
// the spread ones', and a long pass that finds a series ends the recalibration;
// none starts on what looks like a series at a glance (by its errors or its
// nearest neighbours' ages); a pass in progress is saved exactly. And the slots
// a prediction leaves out (LeftOutSlots).
#include "core/model/interval_recalibration.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/model/left_out_slots.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Runs `pass` to its end, one sample at a time: before each sample the
// positions due are recorded with scores `score` (and, where BandAt, band
// and spread scores `band` and `spread`), and after it a score of 100 is
// streamed to every target, with every sample stored. Returns how many
// positions were due before each sample.
std::vector<std::size_t> RunPass(IntervalRecalibration& pass, std::size_t m,
                                 std::uint64_t& seen, double score, double band,
                                 double spread) {
  const std::vector<double> scores(m, score), bands(m, band),
      spreads(m, spread);
  const std::uint64_t passes = pass.passes();
  std::vector<std::size_t> per_sample;
  while (pass.running() && pass.passes() == passes) {
    const IntervalRecalibration::Positions due = pass.DueBefore(seen);
    per_sample.push_back(due.end - due.first);
    for (std::size_t p = due.first; p < due.end; ++p) {
      pass.Record(p, scores, pass.BandAt(p) ? bands : std::vector<double>(),
                  pass.BandAt(p) ? spreads : std::vector<double>());
    }
    ++seen;
    for (std::size_t t = 0; t < m; ++t) pass.AddStreamed(t, 100.0);
    pass.AfterSample(seen, seen, 10, false);
  }
  return per_sample;
}

// The queries' calibration options of these tests, at a window.
AdaptiveConformal::Options Options(std::size_t window) {
  return {.level = 0.9, .window = window, .step = 0.0};
}

// Streams `score` to every target of `pass` and learns sample `seen` + 1
// (stored, and with it every one before), ready to start a pass.
void LearnOne(IntervalRecalibration& pass, std::size_t m, std::uint64_t& seen,
              double score, bool may_start = true) {
  for (std::size_t t = 0; t < m; ++t) pass.AddStreamed(t, score);
  ++seen;
  pass.AfterSample(seen, seen, 10, !may_start);
}

// `pass` saved, and loaded into `back` (of the same shape); its bytes.
std::string SaveAndLoad(const IntervalRecalibration& pass,
                        IntervalRecalibration& back) {
  std::string saved;
  ByteWriter writer(&saved);
  pass.Save(writer);
  ByteReader reader(saved);
  EXPECT_TRUE(back.Load(reader));
  return saved;
}

TEST(IntervalRecalibrationTest, APassIsSpreadEvenlyOverItsDuration) {
  IntervalRecalibration pass(1, Options(100), 8);
  std::uint64_t seen = 0;
  // No pass before kFirstPassAt samples are stored.
  while (seen < IntervalRecalibration::kFirstPassAt) {
    EXPECT_FALSE(pass.running());
    LearnOne(pass, 1, seen, 100.0);
  }
  ASSERT_TRUE(pass.running());
  // 16 stored at 8 a sample: 2 samples, 8 each; then a pass of 18 over 3.
  EXPECT_EQ(RunPass(pass, 1, seen, 1.0, 1.0, 1.0),
            (std::vector<std::size_t>{8, 8}));
  EXPECT_EQ(RunPass(pass, 1, seen, 1.0, 1.0, 1.0),
            (std::vector<std::size_t>{6, 6, 6}));
  EXPECT_EQ(pass.SlotAt(0), 0u);
  // Past the window: the last 100 stored, over ceil(n / 8) samples times
  // n / 256 (the rate falls as 256 / n past 256 stored).
  while (seen < 400) RunPass(pass, 1, seen, 1.0, 1.0, 1.0);
  ASSERT_TRUE(pass.running());
  const std::uint64_t stored = seen;
  EXPECT_EQ(pass.SlotAt(0), stored - 100);
  const std::vector<std::size_t> spread = RunPass(pass, 1, seen, 1.0, 1.0, 1.0);
  const std::uint64_t full = IntervalRecalibration::kFullRateBelow;
  ASSERT_GT(stored, full);
  EXPECT_EQ(spread.size(), (stored * stored + 8 * full - 1) / (8 * full));
  std::size_t total = 0;
  const std::size_t most = (100 + spread.size() - 1) / spread.size();
  for (std::size_t count : spread) {
    EXPECT_LE(count, most);
    total += count;
  }
  EXPECT_EQ(total, 100u);
}

TEST(IntervalRecalibrationTest, AnExchangeablePassReplacesTheOlderScores) {
  IntervalRecalibration pass(2, Options(100), 8);
  std::uint64_t seen = 0;
  while (!pass.running()) LearnOne(pass, 2, seen, 100.0);
  // Band and spread scores alike: the samples are exchangeable. The pass
  // (16 rescored at 1.0) replaces the 16 scores of 100 before it; the two
  // streamed meanwhile stay.
  RunPass(pass, 2, seen, 1.0, 2.0, 2.0);
  EXPECT_TRUE(pass.exchangeable());
  EXPECT_EQ(pass.passes(), 1u);
  EXPECT_EQ(pass.replacements(), 1u);
  EXPECT_EQ(pass.intervals().kept(0), 18u);
  EXPECT_EQ(pass.intervals().Multiplier(0, 0.5), 1.0);
  EXPECT_EQ(pass.intervals().Multiplier(1, 0.9), 100.0);
  // Band scores 1.31 times the spread ones: a series, nothing replaced
  // (the scores are those streamed alone), and queries go back to the
  // streamed calibration (exchangeable() false).
  for (int i = 0; i < 30; ++i) LearnOne(pass, 2, seen, 50.0 + i);
  const std::size_t running_since = pass.passes();
  ASSERT_EQ(running_since, 1u);
  AdaptiveConformal streamed_only = pass.intervals();
  const std::size_t samples = RunPass(pass, 2, seen, 1.0, 1.31, 1.0).size();
  for (std::size_t i = 0; i < samples; ++i) {
    for (std::size_t t = 0; t < 2; ++t) streamed_only.Add(t, 100.0);
  }
  EXPECT_FALSE(pass.exchangeable());
  EXPECT_EQ(pass.replacements(), 1u);
  for (const double level : {0.1, 0.5, 0.9}) {
    EXPECT_EQ(pass.intervals().Multiplier(0, level),
              streamed_only.Multiplier(0, level));
  }
  // A short pass that finds a series does not end the recalibration.
  EXPECT_FALSE(pass.settled());
  EXPECT_TRUE(pass.running());
  EXPECT_TRUE(pass.collecting());
}

TEST(IntervalRecalibrationTest, ALongPassThatFindsASeriesEndsIt) {
  const std::size_t window = IntervalRecalibration::kSettledPass;
  IntervalRecalibration pass(1, Options(window), 1024);
  std::uint64_t seen = 0;
  while (seen < window) LearnOne(pass, 1, seen, 1.0);
  while (pass.running() && !pass.settled()) {
    RunPass(pass, 1, seen, 1.0, 3.0, 1.0);
  }
  EXPECT_TRUE(pass.settled());
  EXPECT_FALSE(pass.running());
  EXPECT_FALSE(pass.collecting());
  pass.AfterSample(seen + 1, seen + 1, 10, false);
  EXPECT_FALSE(pass.running());
  // Rate 0: never a pass, nothing collected.
  IntervalRecalibration off(1, Options(window), 0);
  EXPECT_FALSE(off.collecting());
  off.AfterSample(100, 100, 10, false);
  EXPECT_FALSE(off.running());
}

TEST(IntervalRecalibrationTest, NoPassRunsOnWhatLooksLikeASeries) {
  const double nan = std::nan("");
  // Honest errors 1.15 times the prequential ones or more, over the
  // targets known: a series at a glance.
  EXPECT_TRUE(IntervalRecalibration::LooksLikeASeries(
      std::vector<double>{0.12, 0.11, nan},
      std::vector<double>{0.1, 0.1, 0.5}));
  EXPECT_FALSE(IntervalRecalibration::LooksLikeASeries(
      std::vector<double>{0.12, 0.1, nan}, std::vector<double>{0.1, 0.1, 0.5}));
  EXPECT_FALSE(IntervalRecalibration::LooksLikeASeries(
      std::vector<double>{nan}, std::vector<double>{nan}));
  IntervalRecalibration pass(1, Options(100), 8);
  pass.AfterSample(50, 50, 10, true);
  EXPECT_FALSE(pass.running());
  std::uint64_t seen = 50;
  LearnOne(pass, 1, seen, 100.0);
  EXPECT_TRUE(pass.running());
  RunPass(pass, 1, seen, 1.0, 1.0, 1.0);
  EXPECT_TRUE(pass.exchangeable());
  EXPECT_TRUE(pass.running());
  // It drops the running pass, queries go back to the streamed scores, and
  // the learner stops collecting (a saved state says so too).
  LearnOne(pass, 1, seen, 100.0, /*may_start=*/false);
  EXPECT_FALSE(pass.running());
  EXPECT_FALSE(pass.exchangeable());
  EXPECT_FALSE(pass.collecting());
  IntervalRecalibration back(1, Options(100), 8);
  SaveAndLoad(pass, back);
  EXPECT_FALSE(back.collecting());
  LearnOne(pass, 1, seen, 100.0);
  EXPECT_TRUE(pass.running());
}

TEST(IntervalRecalibrationTest, TheShareOfTheNearestThatAreRecent) {
  // Ten stored, the last 4 recent (slots 6..9): of the neighbours tied for
  // nearest, the share among them.
  const std::vector<Neighbor> found = {{.id = 2, .distance = 0.5},
                                       {.id = 7, .distance = 0.5},
                                       {.id = 8, .distance = 0.5},
                                       {.id = 9, .distance = 0.7}};
  EXPECT_DOUBLE_EQ(IntervalRecalibration::RecentShareOfNearest(found, 10, 4),
                   2.0 / 3.0);
  EXPECT_DOUBLE_EQ(IntervalRecalibration::RecentShareOfNearest(found, 10, 2),
                   1.0 / 3.0);
  EXPECT_DOUBLE_EQ(IntervalRecalibration::RecentShareOfNearest(
                       std::vector<Neighbor>{{.id = 9, .distance = 0.1},
                                             {.id = 1, .distance = 0.2}},
                       10, 4),
                   1.0);
  // Nothing found, no lag, or a lag of the whole store: not counted.
  EXPECT_TRUE(std::isnan(IntervalRecalibration::RecentShareOfNearest(
      std::vector<Neighbor>{}, 10, 4)));
  EXPECT_TRUE(
      std::isnan(IntervalRecalibration::RecentShareOfNearest(found, 10, 0)));
  EXPECT_TRUE(
      std::isnan(IntervalRecalibration::RecentShareOfNearest(found, 10, 10)));
}

// The nearest neighbour of each new sample among n stored, the last n / 4
// of them recent: in a series always one of those, in no order one with
// chance 1/4.
TEST(IntervalRecalibrationTest, TheNearestNeighboursAgesTellASeries) {
  IntervalRecalibration series(1, Options(100), 8);
  std::size_t noted = 0;
  while (!series.NearestSaysASeries()) {
    series.NoteNearest(1.0, 0.25);
    ++noted;
  }
  // The variance reaches kNearestMinVariance at 22 samples (3/16 each),
  // where the excess, 16.5, is 8 standard deviations.
  EXPECT_EQ(noted, 22u);
  // A series at a glance: a running pass is dropped, as when the errors
  // say so.
  std::uint64_t seen = 0;
  while (seen < 50) LearnOne(series, 1, seen, 1.0, /*may_start=*/true);
  EXPECT_FALSE(series.running());
  EXPECT_FALSE(series.collecting());
  IntervalRecalibration young(1, Options(100), 8);
  seen = 0;
  while (seen < 50) LearnOne(young, 1, seen, 1.0);
  ASSERT_TRUE(young.running());
  for (int i = 0; i < 22; ++i) young.NoteNearest(1.0, 0.25);
  LearnOne(young, 1, seen, 1.0);
  EXPECT_FALSE(young.running());
  EXPECT_FALSE(young.exchangeable());
  // Samples in no order, 200 streams of up to 5,000: the nearest is recent
  // with its chance. At most 2 of them ever look like a series (a false
  // alarm returns queries to the streamed calibration, nothing worse).
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::size_t alarms = 0;
  for (int stream = 0; stream < 200; ++stream) {
    IntervalRecalibration glance(1, Options(100), 8);
    for (std::size_t n = 16; n < 5000; ++n) {
      const double chance = static_cast<double>(n / 4) / static_cast<double>(n);
      glance.NoteNearest(uniform(random) < chance ? 1.0 : 0.0, chance);
      if (glance.NearestSaysASeries()) {
        ++alarms;
        break;
      }
    }
  }
  EXPECT_LE(alarms, 2u);
  ::testing::Test::RecordProperty("false_alarms", static_cast<int>(alarms));
  // Not counted: no share, or no chance.
  IntervalRecalibration none(1, Options(100), 8);
  for (int i = 0; i < 100; ++i) {
    none.NoteNearest(std::nan(""), 0.25);
    none.NoteNearest(1.0, 0.0);
  }
  EXPECT_FALSE(none.NearestSaysASeries());
}

TEST(IntervalRecalibrationTest, APassInProgressIsSavedExactly) {
  IntervalRecalibration pass(2, Options(64), 4);
  std::uint64_t seen = 0;
  while (seen < 40) LearnOne(pass, 2, seen, 5.0 + seen % 7);
  // Ages noted short of a series, which the saved state carries on.
  for (int i = 0; i < 20; ++i) pass.NoteNearest(i % 2 == 0 ? 0.5 : 0.0, 0.25);
  // Halfway through a pass.
  ASSERT_TRUE(pass.running());
  for (int i = 0; i < 4; ++i) {
    const IntervalRecalibration::Positions due = pass.DueBefore(seen);
    for (std::size_t p = due.first; p < due.end; ++p) {
      const std::vector<double> scores = {0.1 * p, 0.2 * p};
      pass.Record(p, scores, scores, scores);
    }
    LearnOne(pass, 2, seen, 5.0);
  }
  IntervalRecalibration back(2, Options(64), 4);
  const std::string saved = SaveAndLoad(pass, back);
  ASSERT_FALSE(::testing::Test::HasFailure());
  // Both go on alike: the same positions due, the same scores replaced.
  for (int i = 0; i < 200; ++i) {
    const IntervalRecalibration::Positions due = pass.DueBefore(seen);
    const IntervalRecalibration::Positions due_back = back.DueBefore(seen);
    ASSERT_EQ(due.first, due_back.first);
    ASSERT_EQ(due.end, due_back.end);
    for (std::size_t p = due.first; p < due.end; ++p) {
      const std::vector<double> scores = {1.0 / (p + 1), 2.0 / (p + 1)};
      pass.Record(p, scores, scores, scores);
      back.Record(p, scores, scores, scores);
    }
    std::uint64_t seen_back = seen;
    pass.NoteNearest(0.5, 0.25);
    back.NoteNearest(0.5, 0.25);
    ASSERT_EQ(back.NearestSaysASeries(), pass.NearestSaysASeries());
    LearnOne(pass, 2, seen, 3.0);
    LearnOne(back, 2, seen_back, 3.0);
    ASSERT_EQ(back.passes(), pass.passes());
    for (std::size_t t = 0; t < 2; ++t) {
      ASSERT_EQ(back.intervals().Multiplier(t, 0.7),
                pass.intervals().Multiplier(t, 0.7));
    }
  }
  EXPECT_GT(pass.replacements(), 2u);
  // Damaged: cut short, or saved at another window.
  for (const std::size_t cut :
       {std::size_t{0}, std::size_t{5}, saved.size() - 1}) {
    IntervalRecalibration damaged(2, Options(64), 4);
    ByteReader short_reader(absl::string_view(saved).substr(0, cut));
    EXPECT_FALSE(damaged.Load(short_reader)) << cut;
  }
  IntervalRecalibration narrower(2, Options(8), 4);
  ByteReader whole(saved);
  EXPECT_FALSE(narrower.Load(whole));
}

TEST(LeftOutSlotsTest, NamesItsSlotsAndTheRunASearchMaySkip) {
  const LeftOutSlots none;
  EXPECT_FALSE(none.Contains(0));
  EXPECT_TRUE(none.run().empty());
  const LeftOutSlots band = LeftOutSlots::Between(10, 20);
  EXPECT_FALSE(band.Contains(9));
  EXPECT_TRUE(band.Contains(10));
  EXPECT_TRUE(band.Contains(15));
  EXPECT_TRUE(band.Contains(20));
  EXPECT_FALSE(band.Contains(21));
  EXPECT_EQ(band.run().lo, 10u);
  EXPECT_EQ(band.run().hi, 20u);
  // Every other slot: no run of consecutive slots to skip.
  const LeftOutSlots spread = LeftOutSlots::Between(10, 20, 2);
  EXPECT_TRUE(spread.Contains(10));
  EXPECT_FALSE(spread.Contains(11));
  EXPECT_TRUE(spread.Contains(20));
  EXPECT_FALSE(spread.Contains(22));
  EXPECT_TRUE(spread.run().empty());
  RecentSlots recent(3, 1);
  for (std::uint64_t s = 1; s <= 5; ++s) recent.Add(s - 1, s);
  const LeftOutSlots recent_slots(&recent);
  EXPECT_FALSE(recent_slots.Contains(1));
  EXPECT_TRUE(recent_slots.Contains(2));
  EXPECT_TRUE(recent_slots.Contains(4));
  EXPECT_EQ(recent_slots.run().lo, recent.run().lo);
}

}  // namespace
}  // namespace streamreg
