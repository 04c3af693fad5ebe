// The random-feature ridge built in the background against the same ridge
// learned in order on one thread: equal bit for bit once it is finished,
// whatever the timing of the samples fed meanwhile, at a capture mid-way,
// and after a resume from that capture.
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

// The ridge learned on one thread from samples [0, n), mapped by the job's
// transform.
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

std::vector<double> PredictAt(const RandomFeatureRidge& ridge,
                              std::vector<double> z) {
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
              PredictAt(InOrder(samples, 5000), query))
        << "pause " << pause;
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
            PredictAt(InOrder(samples, 2000), query));
  // The job goes on after a capture...
  FeedRows(refresh, samples, 2000, 3000, false);
  const RandomFeatureRefresh::Built finished = refresh.Finish();
  EXPECT_EQ(PredictAt(finished.ridge, query),
            PredictAt(InOrder(samples, 3000), query));
  // ... and a refresh resumed from the capture (recovery) reaches the
  // same ridge from the same samples.
  RandomFeatureRefresh resumed;
  resumed.Resume(std::move(captured));
  FeedRows(resumed, samples, 2000, 3000, true);
  EXPECT_EQ(PredictAt(resumed.Finish().ridge, query),
            PredictAt(finished.ridge, query));
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
