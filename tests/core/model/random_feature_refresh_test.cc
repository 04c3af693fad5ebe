// The random-feature ridge built in the background: equal bit for bit to
// the same build on one thread once it is finished, whatever the timing of
// the samples fed meanwhile, at a capture mid-way and after a resume from
// it; equal to learning every sample in order, to rounding; and its choice
// of lengthscale and ridge, the least held-out error of the candidates.
#include "core/model/random_feature_refresh.h"

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

// Raw samples (x then y per row), the inputs on scales far from 1.
std::vector<std::vector<double>> MakeSamples(std::size_t n) {
  std::mt19937_64 random(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> rows;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = 10 + 5 * normal(random), b = 0.01 * normal(random),
                 c = normal(random);
    rows.push_back({a, b, c, std::sin(a / 5) + 100 * b, a * c / 10});
  }
  return rows;
}

RandomFeatureRefresh::Job MakeJob(std::size_t num_slots) {
  return {.transform = MetricTransform::Standardizing({10, 0, 0}, {5, 0.01, 1}),
          .num_targets = kTargets,
          .options = {.num_frequencies = 8, .lengthscale = 1.2, .seed = 3},
          .num_slots = num_slots};
}

// What the store would hand the job: rows [begin, end) of `samples`.
CopySlotRows StoreOf(const std::vector<std::vector<double>>& samples) {
  return [&samples](std::size_t begin, std::size_t end, std::vector<double>* x,
                    std::vector<double>* y) {
    x->clear();
    y->clear();
    for (std::size_t i = begin; i < end; ++i) {
      x->insert(x->end(), samples[i].begin(), samples[i].begin() + kDim);
      y->insert(y->end(), samples[i].begin() + kDim, samples[i].end());
    }
  };
}

// The job's rows [0, n), mapped.
void Mapped(const std::vector<std::vector<double>>& samples, std::size_t n,
            std::vector<double>* z, std::vector<double>* y) {
  const RandomFeatureRefresh::Job job = MakeJob(0);
  z->assign(n * kDim, 0.0);
  y->clear();
  for (std::size_t i = 0; i < n; ++i) {
    job.transform.Apply(std::span<const double>(samples[i].data(), kDim),
                        std::span<double>(z->data() + i * kDim, kDim));
    y->insert(y->end(), samples[i].begin() + kDim, samples[i].end());
  }
}

// On one thread: the job's build over stored samples [0, stored), then
// samples [stored, n) learned in order.
RandomFeatureRidge OneThread(const std::vector<std::vector<double>>& samples,
                             std::size_t stored, std::size_t n) {
  std::vector<double> z, y;
  Mapped(samples, stored, &z, &y);
  RandomFeatureRidge ridge =
      RandomFeatureRefresh::BuildOver(MakeJob(stored), z, y);
  const RandomFeatureRefresh::Job job = MakeJob(0);
  std::vector<double> mapped(kDim);
  for (std::size_t i = stored; i < n; ++i) {
    job.transform.Apply(std::span<const double>(samples[i].data(), kDim),
                        mapped);
    ridge.Add(mapped,
              std::span<const double>(samples[i].data() + kDim, kTargets));
  }
  return ridge;
}

// Every sample learned in order by Add.
RandomFeatureRidge InOrder(const std::vector<std::vector<double>>& samples,
                           std::size_t n) {
  const RandomFeatureRefresh::Job job = MakeJob(0);
  RandomFeatureRidge ridge(kDim, kTargets, job.options);
  std::vector<double> z(kDim);
  for (std::size_t i = 0; i < n; ++i) {
    job.transform.Apply(std::span<const double>(samples[i].data(), kDim), z);
    ridge.Add(z, std::span<const double>(samples[i].data() + kDim, kTargets));
  }
  return ridge;
}

void ExpectNear(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-7 * (1 + std::abs(b[i]))) << i;
  }
}

// The ridge's values at z once solved over every sample it learned (on a
// copy), and its noise estimate.
std::vector<double> PredictAt(RandomFeatureRidge ridge, std::vector<double> z) {
  EXPECT_TRUE(ridge.Solve());
  std::vector<double> out(kTargets);
  ridge.Predict(z, out);
  out.push_back(ridge.RelativeVariance(z));
  out.push_back(ridge.NoiseVariance(0));
  return out;
}

void FeedRows(RandomFeatureRefresh& refresh,
              const std::vector<std::vector<double>>& samples,
              std::size_t begin, std::size_t end, bool pause) {
  for (std::size_t i = begin; i < end; ++i) {
    refresh.Feed(std::span<const double>(samples[i].data(), kDim),
                 std::span<const double>(samples[i].data() + kDim, kTargets));
    if (pause && i % 50 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  }
}

TEST(RandomFeatureRefreshTest, HoldsTheStoredSamplesThenEveryOneFedInOrder) {
  const std::vector<std::vector<double>> samples = MakeSamples(5000);
  const std::vector<double> query = {0.3, -0.2, 1.1};
  for (const bool pause : {false, true}) {
    RandomFeatureRefresh refresh;
    refresh.Start(MakeJob(4000), StoreOf(samples));
    EXPECT_TRUE(refresh.running());
    // Fed while the job still reads the store (or after, with pauses).
    FeedRows(refresh, samples, 4000, 5000, pause);
    RandomFeatureRefresh::Built built = refresh.Finish();
    EXPECT_FALSE(refresh.running());
    EXPECT_EQ(built.ridge.weight(), 5000.0);
    EXPECT_EQ(PredictAt(built.ridge, query),
              PredictAt(OneThread(samples, 4000, 5000), query))
        << "pause " << pause;
    // The batch start is the same minimizer as learning in order.
    std::vector<double> a = PredictAt(built.ridge, query);
    std::vector<double> b = PredictAt(InOrder(samples, 5000), query);
    a.pop_back();  // the noise estimates start differently
    b.pop_back();
    ExpectNear(a, b);
  }
}

TEST(RandomFeatureRefreshTest, ACaptureMidWayResumesToTheSameRidge) {
  const std::vector<std::vector<double>> samples = MakeSamples(3000);
  const std::vector<double> query = {-1.0, 0.5, 0.0};
  RandomFeatureRefresh refresh;
  refresh.Start(MakeJob(1000), StoreOf(samples));
  FeedRows(refresh, samples, 1000, 2000, false);
  RandomFeatureRefresh::Built captured = refresh.Capture();
  EXPECT_EQ(PredictAt(captured.ridge, query),
            PredictAt(OneThread(samples, 1000, 2000), query));
  // The job goes on after a capture...
  FeedRows(refresh, samples, 2000, 3000, false);
  const RandomFeatureRefresh::Built finished = refresh.Finish();
  EXPECT_EQ(PredictAt(finished.ridge, query),
            PredictAt(OneThread(samples, 1000, 3000), query));
  // ... and a refresh resumed from the capture (recovery) reaches the
  // same ridge from the same samples.
  RandomFeatureRefresh resumed;
  resumed.Resume(std::move(captured));
  FeedRows(resumed, samples, 2000, 3000, true);
  EXPECT_EQ(PredictAt(resumed.Finish().ridge, query),
            PredictAt(finished.ridge, query));
}

TEST(RandomFeatureRefreshTest, ChoosesTheCandidateWithTheLeastHeldOutError) {
  const std::vector<std::vector<double>> samples = MakeSamples(1500);
  std::vector<double> z, y;
  Mapped(samples, 1500, &z, &y);
  RandomFeatureRefresh::Job job = MakeJob(1500);
  job.options.num_frequencies = 100;
  job.lengthscales = {0.05, 1.0, 50.0};
  job.ridges = {1e-3, 0.3};
  RandomFeatureRefresh::Choice choice;
  const RandomFeatureRidge built =
      RandomFeatureRefresh::BuildOver(job, z, y, &choice);
  // Each candidate scored by hand: fitted to the first 1,200 in order,
  // its squared errors over the last 300 over their variance.
  double least = 0;
  bool first = true;
  std::vector<double> predicted(kTargets);
  for (double lengthscale : job.lengthscales) {
    for (double ridge : job.ridges) {
      RandomFeatureRidge::Options options = job.options;
      // (With the first 64 of the 100 frequencies.)
      options.num_frequencies = RandomFeatureRefresh::kMaxChoiceFrequencies;
      options.lengthscale = lengthscale;
      options.ridge = ridge;
      RandomFeatureRidge fit(kDim, kTargets, options);
      for (std::size_t i = 0; i < 1200; ++i) {
        fit.Add(std::span<const double>(z.data() + i * kDim, kDim),
                std::span<const double>(y.data() + i * kTargets, kTargets));
      }
      ASSERT_TRUE(fit.Solve());
      double error = 0;
      for (std::size_t t = 0; t < kTargets; ++t) {
        double mean = 0, variance = 0, squared = 0;
        for (std::size_t i = 1200; i < 1500; ++i) mean += y[i * kTargets + t];
        mean /= 300;
        for (std::size_t i = 1200; i < 1500; ++i) {
          fit.Predict(std::span<const double>(z.data() + i * kDim, kDim),
                      predicted);
          variance += std::pow(y[i * kTargets + t] - mean, 2);
          squared += std::pow(predicted[t] - y[i * kTargets + t], 2);
        }
        error += squared / variance;
      }
      if (lengthscale == choice.lengthscale && ridge == choice.ridge) {
        EXPECT_NEAR(choice.error, error, 1e-6 * error);
      }
      if (first || error < least) least = error;
      first = false;
    }
  }
  EXPECT_NEAR(choice.error, least, 1e-6 * least);
  EXPECT_EQ(choice.lengthscale, 1.0);  // neither extreme
  EXPECT_EQ(built.options().lengthscale, choice.lengthscale);
  EXPECT_EQ(built.options().ridge, choice.ridge);
  EXPECT_EQ(built.options().num_frequencies, 100u);
  EXPECT_EQ(built.weight(), 1500.0);
}

// Over more stored samples than a choice takes, the candidates are scored
// on the newest kMaxChoiceSamples (fitted to the first four fifths of
// them), and the chosen one is solved over all.
TEST(RandomFeatureRefreshTest, ChoosesOverTheNewestSamplesAndFitsAll) {
  constexpr std::size_t kMax = RandomFeatureRefresh::kMaxChoiceSamples;
  const std::size_t n = kMax + 904;
  const std::vector<std::vector<double>> samples = MakeSamples(n);
  std::vector<double> z, y;
  Mapped(samples, n, &z, &y);
  RandomFeatureRefresh::Job job = MakeJob(n);
  job.options.num_frequencies = 8;
  job.lengthscales = {0.3, 3.0};
  job.ridges = {1e-2};
  RandomFeatureRefresh::Choice choice;
  const RandomFeatureRidge built =
      RandomFeatureRefresh::BuildOver(job, z, y, &choice);
  const std::size_t first = n - kMax;
  const std::size_t fitted = first + kMax * 4 / 5;
  RandomFeatureRidge::Options options = job.options;
  options.lengthscale = choice.lengthscale;
  options.ridge = choice.ridge;
  RandomFeatureRidge fit(kDim, kTargets, options);
  for (std::size_t i = first; i < fitted; ++i) {
    fit.Add(std::span<const double>(z.data() + i * kDim, kDim),
            std::span<const double>(y.data() + i * kTargets, kTargets));
  }
  ASSERT_TRUE(fit.Solve());
  double error = 0;
  std::vector<double> predicted(kTargets);
  for (std::size_t t = 0; t < kTargets; ++t) {
    double mean = 0, variance = 0, squared = 0;
    for (std::size_t i = fitted; i < n; ++i) mean += y[i * kTargets + t];
    mean /= static_cast<double>(n - fitted);
    for (std::size_t i = fitted; i < n; ++i) {
      fit.Predict(std::span<const double>(z.data() + i * kDim, kDim),
                  predicted);
      variance += std::pow(y[i * kTargets + t] - mean, 2);
      squared += std::pow(predicted[t] - y[i * kTargets + t], 2);
    }
    error += squared / variance;
  }
  EXPECT_NEAR(choice.error, error, 1e-6 * error);
  EXPECT_EQ(built.weight(), static_cast<double>(n));
}

// What a rebuild costs, as a model budgets it: F = 1 + 3 + 2 * 8 = 20
// features, F^2 / 2 = 200 multiply-adds a sample summed and F^3 / 6 a
// factorization; with a choice, each candidate lengthscale's sums over
// four fifths of the newest kMaxChoiceSamples and a factorization per
// candidate pair.
TEST(RandomFeatureRefreshTest, CountsTheMultiplyAddsOfItsSumsAndSolves) {
  const double sample = 200.0, factorization = 8000.0 / 6.0;
  RandomFeatureRefresh::Job job = MakeJob(1000);
  // No candidates: the one fit over every sample.
  EXPECT_DOUBLE_EQ(RandomFeatureRefresh::MultiplyAdds(job),
                   1000 * sample + factorization);
  job.lengthscales = {0.5, 1.0, 2.0};
  job.ridges = {1e-3, 1e-2};
  EXPECT_DOUBLE_EQ(
      RandomFeatureRefresh::MultiplyAdds(job),
      1000 * sample + factorization + 3 * 800 * sample + 6 * factorization);
  // Over more than kMaxChoiceSamples, the choice's sums stay bounded.
  const std::size_t most = RandomFeatureRefresh::kMaxChoiceSamples;
  job.num_slots = 10 * most;
  EXPECT_DOUBLE_EQ(RandomFeatureRefresh::MultiplyAdds(job),
                   static_cast<double>(10 * most) * sample + factorization +
                       3 * static_cast<double>(most * 4 / 5) * sample +
                       6 * factorization);
  // With more frequencies than a choice uses, the candidates have F = 1 + 3
  // + 2 * 64 = 132 features, the chosen fit F = 1 + 3 + 2 * 100 = 204.
  job.options.num_frequencies = 100;
  job.num_slots = 1000;
  EXPECT_DOUBLE_EQ(RandomFeatureRefresh::MultiplyAdds(job),
                   1000 * 204.0 * 204 / 2 + 204.0 * 204 * 204 / 6 +
                       3 * 800 * 132.0 * 132 / 2 + 6 * 132.0 * 132 * 132 / 6);
  job.options.num_frequencies = 8;
  // Too few samples to choose among: the options' own.
  job.num_slots = RandomFeatureRefresh::kMinChoiceSamples - 1;
  EXPECT_DOUBLE_EQ(RandomFeatureRefresh::MultiplyAdds(job),
                   static_cast<double>(job.num_slots) * sample + factorization);
}

TEST(RandomFeatureRefreshTest, IsAbandonedWhenDestroyedWhileRunning) {
  const std::vector<std::vector<double>> samples = MakeSamples(20000);
  RandomFeatureRefresh refresh;
  refresh.Start(MakeJob(20000), StoreOf(samples));
  FeedRows(refresh, samples, 0, 10, false);
  // Destroyed here: stops and joins without waiting for the whole store.
}

}  // namespace
}  // namespace streamreg
