// A model's prediction intervals (docs/estimators.md, "Intervals"): on a
// stationary stream, held-out samples fall within them at the model's
// level; when the noise changes, adaptive conformal inference keeps the
// honest predictions' coverage at the level; the answers of a stream (the
// next sample's predictions) are covered at the level too; with
// interval_difficulty the queries' intervals widen where the data is
// sparse; a model too young to calibrate a level answers with the whole
// line.
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

// y_1 = sin(2 x_1) + x_2 / 2 + noise of sd 0.05 + |x_1| (heteroscedastic),
// y_2 = 0.05 x_3^2 + noise of sd 0.1.
Stream NoisyStream(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = uniform(random), b = uniform(random),
                 c = 10.0 * uniform(random);
    s.x.insert(s.x.end(), {a, b, c});
    s.y.push_back(std::sin(2 * a) + b / 2 +
                  (0.05 + std::abs(a)) * normal(random));
    s.y.push_back(0.05 * c * c + 0.1 * normal(random));
  }
  return s;
}

ModelConfig IntervalConfig(double level, double step) {
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEuclidean;
  config.regressor = RegressorKind::kNearest;
  config.interval_level = level;
  config.interval_step = step;
  return config;
}

// 4,000 samples learned, 3,000 held out, with split conformal (step 0), on
// three streams: at each level, the fraction within the interval is the
// level to within 2 points, in the mean over the streams (the scores are
// the current model's errors on the samples it learned, each left out:
// IntervalRecalibration; one stream's coverage varies by about a point,
// 2,000 kept scores and 3,000 held-out samples). The model's level is
// 0.9; the others are served from the same scores (PredictOptions).
TEST(ModelIntervalTest, HeldOutSamplesAreCoveredAtTheModelsLevel) {
  constexpr std::array kLevels = {0.8, 0.9, 0.95};
  constexpr int kStreams = 3;
  std::array<std::array<double, kTargets>, kLevels.size()> mean_coverage{};
  for (int seed = 0; seed < kStreams; ++seed) {
    SCOPED_TRACE(::testing::Message() << "stream " << seed);
    const Stream stream = NoisyStream(4000, 1 + 10 * seed);
    const Stream held_out = NoisyStream(3000, 2 + 10 * seed);
    auto model = MakeModel(IntervalConfig(0.9, 0.0));
    LearnAll(*model, stream, 0, stream.size());
    const ModelStats stats = model->stats();
    EXPECT_TRUE(stats.interval_recalibrated);
    for (std::size_t l = 0; l < kLevels.size(); ++l) {
      const double level = kLevels[l];
      const PredictOptions options = PredictOptions::AtLevel(level);
      std::array<std::size_t, kTargets> within{};
      for (std::size_t q = 0; q < held_out.size(); ++q) {
        const Prediction p = *model->Predict(held_out.input(q), options);
        for (std::size_t t = 0; t < kTargets; ++t) {
          const double y = held_out.sample(q).y[t];
          within[t] += p.lower[t] <= y && y <= p.upper[t];
          // The same half width everywhere: at the model's level, the one
          // the stats report.
          const double half = p.upper[t] - p.value[t];
          ASSERT_NEAR(p.value[t] - p.lower[t], half, 1e-12 * half);
          if (level == 0.9) {
            ASSERT_NEAR(half, stats.interval_half_width[t],
                        1e-12 * stats.interval_half_width[t]);
          }
        }
      }
      for (std::size_t t = 0; t < kTargets; ++t) {
        mean_coverage[l][t] +=
            static_cast<double>(within[t]) / held_out.size() / kStreams;
      }
    }
    // The scored samples' own coverage, over the whole stream.
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(stats.interval_coverage[t], 0.9, 0.02) << "target " << t;
    }
  }
  for (std::size_t l = 0; l < kLevels.size(); ++l) {
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(mean_coverage[l][t], kLevels[l], 0.02)
          << "level " << kLevels[l] << ", target " << t;
    }
  }
}

// Inputs in [-1, 1]^3, nine in ten of them with x_1 < 0 (dense) and the
// rest with x_1 > 0 (sparse); y_1 = sin(6 x_1) + noise of sd 0.05 (a
// curve that a local average follows closely only where its neighbours
// are near), y_2 = x_2 + noise of sd 0.05.
Stream DenseAndSparse(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 0.05);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = unit(random) < 0.9 ? -unit(random) : unit(random);
    const double b = uniform(random), c = uniform(random);
    s.x.insert(s.x.end(), {a, b, c});
    s.y.push_back(std::sin(6 * a) + normal(random));
    s.y.push_back(b + normal(random));
  }
  return s;
}

// With interval_difficulty, the queries' intervals widen where the stored
// samples are sparse: the first target's error grows with its neighbours'
// distance, and the model learns that from its honest errors. Held out
// where the data is sparse, the same-width interval under-covers, the one
// that widens much less; over all held-out samples both are near the
// level, for the second target (whose error does not grow) too.
TEST(ModelIntervalTest, IntervalsWidenWhereTheDataIsSparse) {
  const Stream stream = DenseAndSparse(6000, 3);
  const Stream held_out = DenseAndSparse(4000, 4);
  const double level = 0.9;
  // By model (same width, widening): coverage and mean half width of the
  // first target where x_1 < 0 and where x_1 > 0, and overall.
  struct Region {
    double within = 0, half = 0, count = 0;
    double coverage() const { return within / count; }
    double mean_half() const { return half / count; }
  };
  std::array<std::array<Region, 2>, 2> regions{};  // [difficulty][sparse]
  std::array<std::array<double, kTargets>, 2> overall{};
  for (const bool difficulty : {false, true}) {
    ModelConfig config = IntervalConfig(level, 0.0);
    config.interval_difficulty = difficulty;
    auto model = MakeModel(config);
    LearnAll(*model, stream, 0, stream.size());
    for (std::size_t q = 0; q < held_out.size(); ++q) {
      const Prediction p = *model->Predict(held_out.input(q));
      for (std::size_t t = 0; t < kTargets; ++t) {
        const double y = held_out.sample(q).y[t];
        const bool within = p.lower[t] <= y && y <= p.upper[t];
        overall[difficulty][t] += within;
        if (t == 0) {
          Region& region = regions[difficulty][held_out.input(q)[0] > 0];
          region.within += within;
          region.half += p.upper[t] - p.value[t];
          region.count += 1;
        }
      }
    }
  }
  const double n = static_cast<double>(held_out.size());
  for (const bool difficulty : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "difficulty " << difficulty);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(overall[difficulty][t] / n, level, 0.03) << "target " << t;
    }
  }
  // The same width: one half width everywhere, under-covering the sparse
  // region.
  EXPECT_NEAR(regions[0][1].mean_half(), regions[0][0].mean_half(), 1e-9);
  EXPECT_LT(regions[0][1].coverage(), level - 0.1);
  // Widening: wider where sparse, and the shortfall of coverage there at
  // least a third smaller (measured: 0.68 -> 0.79 at 90%, the half width
  // 1.5 times the dense region's).
  EXPECT_GT(regions[1][1].mean_half(), 1.3 * regions[1][0].mean_half());
  EXPECT_LT(level - regions[1][1].coverage(),
            (level - regions[0][1].coverage()) * 2.0 / 3.0);
}

// A stream whose noise quadruples half way. Over the 1,000 samples after
// the change, the honest predictions' coverage with adaptive conformal
// inference is within Gibbs & Candès's bound of the level, (1 + 2 step) /
// (step T) for T samples, and closer to it than split conformal's over
// the same window; over the whole stream it is within a point.
TEST(ModelIntervalTest, AdaptiveCoverageHoldsWhenTheNoiseChanges) {
  Stream stream = NoisyStream(8000, 3);
  for (std::size_t s = 4000; s < stream.size(); ++s) {
    // Target 2's noise (sd 0.1) quadrupled: 4 times its deviation from
    // the noiseless value.
    const double c = stream.input(s)[2];
    double& y = stream.y[s * kTargets + 1];
    y = 0.05 * c * c + 4 * (y - 0.05 * c * c);
  }
  constexpr double kStep = 0.01;
  double after_change[2], whole[2];
  for (const double step : {0.0, kStep}) {
    auto model = MakeModel(IntervalConfig(0.9, step));
    LearnAll(*model, stream, 0, 4000);
    const double before = model->stats().interval_coverage[1] * 4000;
    LearnAll(*model, stream, 4000, 5000);
    const double then = model->stats().interval_coverage[1] * 5000;
    after_change[step > 0] = (then - before) / 1000;
    LearnAll(*model, stream, 5000, stream.size());
    whole[step > 0] = model->stats().interval_coverage[1];
    std::printf("step %g: after the change %.4f, whole %.4f\n", step,
                after_change[step > 0], whole[step > 0]);
  }
  EXPECT_NEAR(after_change[1], 0.9, (1 + 2 * kStep) / (kStep * 1000));
  EXPECT_GT(after_change[1], after_change[0]);
  EXPECT_NEAR(whole[1], 0.9, 0.01);
}

// A trajectory that never comes back: a circle in (x_1, x_2) while x_3
// sweeps from -10 to 10, so each sample is near the ticks just before it
// and far from those 200 ticks back. y as NoisyStream's, noise of sd 0.05
// and 0.1.
Stream Trajectory(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    const double phase = 2 * M_PI * static_cast<double>(i) / 500;
    const double a = std::sin(phase), b = std::cos(phase),
                 c = -10 + 20 * static_cast<double>(i) / n;
    s.x.insert(s.x.end(), {a, b, c});
    s.y.push_back(std::sin(2 * a) + b / 2 + 0.05 * normal(random));
    s.y.push_back(0.05 * c * c + 0.1 * normal(random));
  }
  return s;
}

// The Learn answers predict the next sample of the stream: their intervals
// are calibrated on the prequential predictions, which are exactly such
// predictions, and by Gibbs & Candès's Proposition 4.1 the fraction of
// answers within them is within (1 + 2 step) / (step T) of the level over
// any T samples it scores (and answers), whatever the stream. On a trajectory,
// the queries' intervals calibrated on the streamed scores (which leave out
// the ticks before; without the recalibration, whose passes find this
// stream's samples exchangeable and calibrate queries on the next tick as
// the answers are) miss the level for them, either way: the honest
// prediction of target 1 (which follows x_3's sweep) is much worse than the
// answer, and that of target 0 (on the circle, found a lap before) better.
TEST(ModelIntervalTest, TheAnswersOfAStreamAreCoveredAtTheModelsLevel) {
  constexpr std::size_t kSamples = 6000;
  constexpr double kStep = 0.005;
  const Stream stream = Trajectory(kSamples, 6);
  ModelConfig config = IntervalConfig(0.9, kStep);
  config.interval_recalibration = 0;
  auto model = MakeModel(config);
  std::size_t answers_within[kTargets] = {}, queries_within[kTargets] = {};
  std::size_t answered = 0;
  for (std::size_t s = 0; s < kSamples; ++s) {
    const Sample sample = stream.sample(s);
    const Prediction as_query = *model->Predict(sample.x);
    std::vector<Prediction> answer;
    ASSERT_TRUE(model->Learn({&sample, 1}, &answer).ok());
    // Past ModelConfig::kScoreEverySampleBelow stored, one sample in 2 is
    // scored (predicted, and its interval calibrated); the others get none.
    if (answer[0].value.empty()) {
      ASSERT_GE(s, ModelConfig::kScoreEverySampleBelow) << "sample " << s;
      continue;
    }
    ++answered;
    ASSERT_EQ(answer[0].value, as_query.value);
    for (std::size_t t = 0; t < kTargets; ++t) {
      const double y = sample.y[t];
      answers_within[t] += answer[0].lower[t] <= y && y <= answer[0].upper[t];
      queries_within[t] += as_query.lower[t] <= y && y <= as_query.upper[t];
    }
  }
  EXPECT_EQ(answered, ModelConfig::kScoreEverySampleBelow +
                          (kSamples - ModelConfig::kScoreEverySampleBelow) / 2);
  const ModelStats stats = model->stats();
  for (std::size_t t = 0; t < kTargets; ++t) {
    const double answers = static_cast<double>(answers_within[t]) / answered;
    const double queries = static_cast<double>(queries_within[t]) / answered;
    std::printf("target %zu: answers %.4f, as queries %.4f\n", t, answers,
                queries);
    // What the calibration counted is what the answers got.
    EXPECT_DOUBLE_EQ(stats.answer_interval_coverage[t], answers);
    EXPECT_NEAR(answers, 0.9, (1 + 2 * kStep) / (kStep * answered));
    EXPECT_GT(std::abs(queries - 0.9), 0.05) << "target " << t;
  }
  EXPECT_LT(queries_within[0], answers_within[0]);
  EXPECT_GT(queries_within[1], answers_within[1]);
  EXPECT_GT(stats.answer_interval_half_width[1], 0.0);
  EXPECT_LT(stats.answer_interval_half_width[1], stats.interval_half_width[1]);
}

// At 90% the multiplier needs ceil(0.9 (n + 1)) <= n scores: 9. Before,
// the interval is the whole line; from then on it is finite.
TEST(ModelIntervalTest, AModelTooYoungForItsLevelAnswersWithTheWholeLine) {
  const Stream stream = NoisyStream(40, 5);
  auto model = MakeModel(IntervalConfig(0.9, 0.005));
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  for (std::size_t n = 1; n <= 20; ++n) {
    LearnAll(*model, stream, n - 1, n);
    const Prediction p = *model->Predict(stream.input(30));
    for (std::size_t t = 0; t < kTargets; ++t) {
      if (n < 9) {
        EXPECT_EQ(p.lower[t], -kInfinity) << n;
        EXPECT_EQ(p.upper[t], kInfinity) << n;
      } else {
        EXPECT_TRUE(std::isfinite(p.lower[t]) && std::isfinite(p.upper[t]))
            << n;
        EXPECT_LE(p.lower[t], p.value[t]);
        EXPECT_GE(p.upper[t], p.value[t]);
      }
    }
  }
}

}  // namespace
}  // namespace streamreg
