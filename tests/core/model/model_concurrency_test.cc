// Model and MetricIndex under concurrent use (also run under
// ThreadSanitizer): predictions go on while one thread learns and indexes
// are rebuilt and swapped in the background.
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/index/brute_force_search.h"
#include "core/model/metric_index.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 4;

std::vector<double> RandomRows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  std::vector<double> rows(n * kDim);
  for (double& v : rows) v = normal(random);
  return rows;
}

TEST(MetricIndexTest, AWriteItCannotMakeFailsTheIndexVisibly) {
  const std::vector<double> rows = RandomRows(10, 3);
  MetricIndex index(MetricTransform::Standardizing({0, 0, 0, 0}, {1, 1, 1, 1}));
  for (std::size_t s = 0; s < 10; ++s) {
    index.Insert(s, {rows.data() + s * kDim, kDim});
  }
  EXPECT_TRUE(index.failure().ok());
  index.Insert(3, {rows.data(), kDim});  // slot 3 is indexed already
  EXPECT_EQ(index.failure().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(index.failure().message()),
              ::testing::HasSubstr("point id 3: already stored"));
  // The first failure stays.
  index.Remove(42);
  EXPECT_THAT(std::string(index.failure().message()),
              ::testing::HasSubstr("point id 3"));
  // Rebuilds still take over and searches still answer.
  index.RebuildNow(
      MetricTransform::Standardizing({0, 0, 0, 0}, {2, 2, 2, 2}), 10,
      [&](std::size_t begin, std::size_t end, std::vector<double>* out,
          std::vector<double>*) {
        out->assign(rows.begin() + begin * kDim, rows.begin() + end * kDim);
      });
  EXPECT_EQ(index.generation(), 1u);
}

TEST(MetricIndexTest, ARemovalOfAMissingSlotFailsTheIndex) {
  MetricIndex index(MetricTransform::Standardizing({0, 0, 0, 0}, {1, 1, 1, 1}));
  index.Remove(5);
  EXPECT_THAT(std::string(index.failure().message()),
              ::testing::HasSubstr("the metric index failed"));
}

TEST(MetricIndexTest, RebuildCatchesUpWithWritesMadeMeanwhile) {
  const std::size_t n = 6000;
  const std::vector<double> rows = RandomRows(n, 1);
  // The "store": slot -> row; slots are rewritten while the builder runs.
  std::vector<double> store(rows.begin(), rows.begin() + 4000 * kDim);
  std::mutex store_mutex;
  MetricIndex index(MetricTransform::Standardizing({0, 0, 0, 0}, {1, 1, 1, 1}));
  for (std::size_t s = 0; s < 4000; ++s) {
    index.Insert(s, {store.data() + s * kDim, kDim});
  }
  const MetricTransform target =
      MetricTransform::Diagonal({0, 0, 0, 0}, {1, 1, 1, 1}, {2, 1, 0.5, 0.1});
  index.BeginRebuild(target, 4000,
                     [&](std::size_t begin, std::size_t end,
                         std::vector<double>* out, std::vector<double>*) {
                       std::lock_guard lock(store_mutex);
                       out->assign(store.begin() + begin * kDim,
                                   store.begin() + end * kDim);
                     });
  // Meanwhile: append 2000 samples and replace every 7th old one.
  for (std::size_t s = 4000; s < n; ++s) {
    const std::span<const double> row(rows.data() + s * kDim, kDim);
    {
      std::lock_guard lock(store_mutex);
      store.insert(store.end(), row.begin(), row.end());
    }
    index.Insert(s, row);
    const std::size_t old = (s * 7) % 4000;
    index.Remove(old);
    {
      std::lock_guard lock(store_mutex);
      std::copy(row.begin(), row.end(), store.begin() + old * kDim);
    }
    index.Insert(old, row);
  }
  EXPECT_EQ(index.generation(), 0u);
  index.FinishRebuild();
  EXPECT_EQ(index.generation(), 1u);
  EXPECT_FALSE(index.rebuilding());
  // The new generation holds exactly the store, in the new coordinates.
  BruteForceSearch brute(kDim);
  for (std::size_t s = 0; s < n; ++s) {
    brute.Add(s, target.Apply({store.data() + s * kDim, kDim}));
  }
  const auto generation = index.current();
  EXPECT_EQ(generation->tree.size(), n);
  const std::vector<double> queries = RandomRows(50, 2);
  for (std::size_t q = 0; q < 50; ++q) {
    const std::vector<double> z =
        target.Apply({queries.data() + q * kDim, kDim});
    std::vector<Neighbor> got, expected;
    ASSERT_TRUE(generation->tree.Knn(z, 10, &got).ok());
    expected = brute.Knn(z, 10);
    EXPECT_EQ(got, expected);
  }
}

class ModelConcurrencyTest : public ::testing::TestWithParam<MetricKind> {};

// EGOP: the gradient refresh's thread; MLKR: the map's fits; GLML:
// predictions read the Gaussian the learner replaces.
TEST_P(ModelConcurrencyTest, PredictionsRunWhileLearningAndRebuildSwaps) {
  ModelConfig config;
  config.input_dim = kDim;
  config.target_names = {"y"};
  config.metric = GetParam();
  config.linear_base = GetParam() != MetricKind::kGlml;
  config.reference_rows_from = 0;  // the gradient index references rows
  config.small_store_below = 128;  // short rebuild lags
  config.rebuild_lag = 64;
  config.drift_check_every = 16;
  config.drift_tolerance = 0.01;
  auto model = *Model::Create(config);
  // MLKR's final refit is quadratic in the samples: half as many keep it
  // from dominating the ThreadSanitizer run (rebuilds still swap often).
  const std::size_t n = GetParam() == MetricKind::kMlkr ? 1500 : 3000;
  const std::vector<double> rows = RandomRows(n, 3);
  std::vector<double> targets(n);
  for (std::size_t s = 0; s < n; ++s) {
    targets[s] = std::sin(rows[s * kDim]) + rows[s * kDim + 1];
  }
  std::atomic<bool> done = false;
  std::atomic<std::size_t> predictions = 0;
  auto predict = [&](std::uint64_t seed) {
    const std::vector<double> queries = RandomRows(200, seed);
    std::size_t q = 0;
    while (!done.load()) {
      const absl::StatusOr<Prediction> p =
          model->Predict({queries.data() + (q++ % 200) * kDim, kDim});
      ASSERT_TRUE(p.ok());
      ASSERT_TRUE(std::isfinite(p->value[0]));
      const ModelStats stats = model->stats();
      ASSERT_LE(stats.samples_stored, n);
      (void)model->metric();
      predictions.fetch_add(1);
    }
  };
  std::thread first(predict, 4), second(predict, 5);
  for (std::size_t s = 0; s < n; ++s) {
    const Sample sample{{rows.data() + s * kDim, kDim}, {&targets[s], 1}, s};
    ASSERT_TRUE(model->Learn({&sample, 1}).ok());
  }
  ASSERT_TRUE(model->Refit().ok());
  done = true;
  first.join();
  second.join();
  EXPECT_GT(predictions.load(), 0u);
  EXPECT_GT(model->stats().index_rebuilds, 3u);
  EXPECT_EQ(model->stats().samples_stored, n);
}

INSTANTIATE_TEST_SUITE_P(Metrics, ModelConcurrencyTest,
                         ::testing::Values(MetricKind::kEgop, MetricKind::kMlkr,
                                           MetricKind::kGlml),
                         [](const auto& info) {
                           return std::string(MetricKindName(info.param));
                         });

}  // namespace
}  // namespace streamreg
