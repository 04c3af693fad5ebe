// The error of the answers a model sent, measured as a client would
// (server/hosting/answer_errors.h): against brute force, nothing before
// the first answer, the model's interval kept until enough are scored,
// coverage at the level in the long run whatever the stream.
#include "server/hosting/answer_errors.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/answer_test_support.h"

namespace streamreg {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(AnswerErrorsTest, TheAnswersErrorIsTheirMeanSquareOverTheVarianceOfY) {
  AnswerErrors errors(2, AnswerOptions());
  std::mt19937_64 random(7);
  std::normal_distribution<double> normal;
  std::vector<double> truth0, truth1, answer0, answer1;
  for (int i = 0; i < 500; ++i) {
    const std::vector<double> y = {3.0 + 2.0 * normal(random),
                                   -1.0 + 0.5 * normal(random)};
    Prediction answer = AnswerOf({y[0] + 0.3 * normal(random), 0.0});
    truth0.push_back(y[0]);
    truth1.push_back(y[1]);
    answer0.push_back(answer.value[0]);
    answer1.push_back(answer.value[1]);
    errors.Answer(&answer, y);
  }
  // By brute force: the population variance of y, the mean squared error.
  const auto nmse = [](const std::vector<double>& p,
                       const std::vector<double>& y, double* mse) {
    double mean = 0.0;
    for (double v : y) mean += v / static_cast<double>(y.size());
    double variance = 0.0, squared = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      variance += (y[i] - mean) * (y[i] - mean) / static_cast<double>(y.size());
      squared += (p[i] - y[i]) * (p[i] - y[i]) / static_cast<double>(y.size());
    }
    *mse = squared;
    return squared / variance;
  };
  double mse0 = 0.0, mse1 = 0.0;
  const double nmse0 = nmse(answer0, truth0, &mse0);
  const double nmse1 = nmse(answer1, truth1, &mse1);
  const AnswerErrors::Figures figures = errors.figures();
  EXPECT_EQ(figures.answers, 500u);
  EXPECT_NEAR(figures.nmse[0], nmse0, 1e-12 * nmse0);
  EXPECT_NEAR(figures.nmse[1], nmse1, 1e-12 * nmse1);
  EXPECT_NEAR(figures.mse[0], mse0, 1e-12 * mse0);
  EXPECT_NEAR(figures.mse[1], mse1, 1e-12 * mse1);
  // Predicting 0 for a target of mean -1 and variance 0.25: about 5x worse
  // than its mean.
  EXPECT_GT(figures.nmse[1], 4.0);
  EXPECT_LT(figures.nmse[0], 0.05);
  // The recent figure is the prequential error's, forgotten alike.
  PrequentialScore recent(2, 0.999);
  for (std::size_t i = 0; i < truth0.size(); ++i) {
    recent.Add(std::vector<double>{answer0[i], answer1[i]},
               std::vector<double>{truth0[i], truth1[i]});
  }
  EXPECT_DOUBLE_EQ(figures.recent_nmse[0], recent.Nmse(0));
  EXPECT_DOUBLE_EQ(figures.recent_nmse[1], recent.Nmse(1));
}

TEST(AnswerErrorsTest, NothingIsKnownBeforeTheFirstAnswer) {
  const AnswerErrors::Figures figures =
      AnswerErrors(3, AnswerOptions()).figures();
  EXPECT_EQ(figures.answers, 0u);
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_TRUE(std::isnan(figures.nmse[t]));
    EXPECT_TRUE(std::isnan(figures.mse[t]));
    EXPECT_TRUE(std::isnan(figures.recent_nmse[t]));
    EXPECT_TRUE(std::isnan(figures.interval_coverage[t]));
    EXPECT_EQ(figures.interval_half_width[t], kInf);
  }
}

TEST(AnswerErrorsTest, AnAnswerKeepsTheModelsIntervalUntilEnoughAreScored) {
  AnswerErrors errors(1, AnswerOptions());
  // At 90%, the ceil((n + 1) 0.9)-th smallest of n scores exists from
  // n = 9 on.
  for (int i = 0; i < 9; ++i) {
    Prediction answer = AnswerOf({0.0});
    errors.Answer(&answer, std::vector<double>{0.5 * (i % 3)});
    EXPECT_EQ(answer.lower[0], -1.0) << i;
    EXPECT_EQ(answer.upper[0], 1.0) << i;
  }
  Prediction answer = AnswerOf({10.0});
  const AnswerErrors::Figures before = errors.figures();
  ASSERT_TRUE(std::isfinite(before.interval_half_width[0]));
  errors.Answer(&answer, std::vector<double>{10.0});
  EXPECT_DOUBLE_EQ(answer.upper[0] - 10.0, before.interval_half_width[0]);
  EXPECT_DOUBLE_EQ(10.0 - answer.lower[0], before.interval_half_width[0]);
  EXPECT_NE(answer.upper[0], 11.0);
  // An answer that came without an interval gets an infinite one until
  // then.
  AnswerErrors fresh(1, AnswerOptions());
  Prediction bare = AnswerOf({1.0}, false);
  fresh.Answer(&bare, std::vector<double>{1.5});
  EXPECT_EQ(bare.lower[0], -kInf);
  EXPECT_EQ(bare.upper[0], kInf);
}

TEST(AnswerErrorsTest, TheCoverageReportedIsTheFractionOfAnswersWithin) {
  AnswerErrors errors(2, AnswerOptions());
  std::mt19937_64 random(3);
  std::normal_distribution<double> normal;
  std::vector<std::uint64_t> within(2, 0);
  const int answers = 3000;
  for (int i = 0; i < answers; ++i) {
    const std::vector<double> y = {normal(random), 5.0 * normal(random)};
    Prediction answer = AnswerOf({0.0, 0.0});
    errors.Answer(&answer, y);
    for (std::size_t t = 0; t < 2; ++t) {
      within[t] += answer.lower[t] <= y[t] && y[t] <= answer.upper[t];
    }
  }
  const AnswerErrors::Figures figures = errors.figures();
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(figures.interval_coverage[t],
              static_cast<double>(within[t]) / answers);
  }
}

// Gibbs & Candes (2021), Proposition 4.1: whatever the errors, over T
// answers the fraction outside their interval is within (1 + 2 step) /
// (step T) of 1 - level; here plus the first answers, which keep the
// model's interval. The stream is hostile: answers from a model that
// stops learning for a while (errors 30x larger for 2,000 answers), twice,
// and a target whose errors grow steadily.
TEST(AnswerErrorsTest, AnswersFromAStaleModelAreCoveredAtTheLevelInTheLongRun) {
  const double step = 0.005;
  AnswerErrors errors(2, AnswerOptions(step));
  std::mt19937_64 random(11);
  std::normal_distribution<double> normal;
  const int answers = 30'000;
  std::vector<int> outside(2, 0);
  for (int i = 0; i < answers; ++i) {
    const bool stale =
        (i >= 8'000 && i < 10'000) || (i >= 20'000 && i < 22'000);
    const double error0 = (stale ? 30.0 : 1.0) * normal(random);
    const double error1 = (1.0 + i / 1000.0) * normal(random);
    const std::vector<double> y = {error0, error1};
    Prediction answer = AnswerOf({0.0, 0.0}, false);
    errors.Answer(&answer, y);
    for (std::size_t t = 0; t < 2; ++t) {
      outside[t] += !(answer.lower[t] <= y[t] && y[t] <= answer.upper[t]);
    }
  }
  const double bound = (1.0 + 2.0 * step) / (step * answers) + 9.0 / answers;
  for (std::size_t t = 0; t < 2; ++t) {
    const double miscoverage = static_cast<double>(outside[t]) / answers;
    EXPECT_NEAR(miscoverage, 0.1, bound) << "target " << t;
  }
  const AnswerErrors::Figures figures = errors.figures();
  EXPECT_NEAR(figures.interval_coverage[0], 0.9, bound);
}

TEST(AnswerErrorsTest, ReportsKeepTheModelsHalfWidthWhereTheAnswersHaveNone) {
  AnswerErrors::Figures figures;
  figures.interval_half_width = {2.0, kInf};
  figures.interval_coverage = {0.9, std::nan("")};
  std::vector<double> half_width = {5.0, 7.0};
  std::vector<double> coverage = {0.5, 0.5};
  figures.CopyIntervalsTo(&half_width, &coverage);
  EXPECT_EQ(half_width, (std::vector<double>{2.0, 7.0}));
  EXPECT_EQ(coverage[0], 0.9);
  EXPECT_TRUE(std::isnan(coverage[1]));
}

TEST(AnswerErrorsTest, StreamsAnsweredAtOnceAreAllCounted) {
  AnswerErrors errors(1, AnswerOptions());
  std::vector<std::thread> streams;
  for (int s = 0; s < 4; ++s) {
    streams.emplace_back([&errors, s] {
      for (int i = 0; i < 1000; ++i) {
        Prediction answer = AnswerOf({0.0});
        errors.Answer(&answer, std::vector<double>{(i % 7) - 3.0 + s});
      }
    });
  }
  for (std::thread& stream : streams) stream.join();
  EXPECT_EQ(errors.figures().answers, 4000u);
}

}  // namespace
}  // namespace streamreg
