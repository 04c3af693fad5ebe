// The write path of a model (core/model/model_learner.h), seen where it
// hands its work to the rest of the model: the prequential error is the
// forgotten mean of the squared errors of the predictions it made before
// learning each sample (recomputed here from those answers), and every
// sample it learns is stored and indexed where a search finds it — each
// of the last W under a window of W, and none evicted. (The learner runs
// under Model's locks and batches, so it is driven through Model::Learn.)
#include <cmath>
#include <vector>

#include "core/regression/prequential_selector.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

// The recursion of PrequentialScore over the answers, target by target:
// E <- g E + (prediction - y)^2, N <- g N + 1, g forgotten as the model
// forgets (EffectiveForgetting).
struct ForgottenMeanSquaredError {
  explicit ForgottenMeanSquaredError(std::size_t targets, double forgetting)
      : forgetting(forgetting), squared(targets, 0.0) {}
  void Add(const Prediction& answer, std::span<const double> y) {
    const double g = EffectiveForgetting(forgetting, ++added);
    weight = g * weight + 1.0;
    for (std::size_t t = 0; t < squared.size(); ++t) {
      const double error = answer.value[t] - y[t];
      squared[t] = g * squared[t] + error * error;
    }
  }
  double Mean(std::size_t t) const { return squared[t] / weight; }

  double forgetting;
  std::uint64_t added = 0;
  double weight = 0.0;
  std::vector<double> squared;
};

TEST(ModelLearnerTest, ThePrequentialErrorIsThatOfTheAnswersBeforeLearning) {
  for (MetricKind metric : {MetricKind::kEuclidean, MetricKind::kEgop}) {
    SCOPED_TRACE(MetricKindName(metric));
    ModelConfig config = BaseConfig();
    config.metric = metric;
    auto model = MakeModel(config);
    const Stream stream = MakeStream(600, 11);
    ForgottenMeanSquaredError expected(kTargets,
                                       model->config().selection_forgetting);
    for (std::size_t s = 0; s < stream.size(); ++s) {
      const Sample sample = stream.sample(s);
      std::vector<Prediction> before;
      ASSERT_TRUE(model->Learn({&sample, 1}, &before).ok());
      // A small store: every sample is scored.
      ASSERT_EQ(before[0].value.size(), kTargets) << "sample " << s;
      expected.Add(before[0], sample.y);
    }
    const ModelStats stats = model->stats();
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_NEAR(stats.prequential_mse[t], expected.Mean(t),
                  1e-9 * expected.Mean(t))
          << "target " << t;
    }
    EXPECT_EQ(stats.samples_seen, stream.size());
  }
}

// With the one nearest neighbour as the regressor, a stored sample's own
// inputs find it: its prediction is its own y (no base added to it).
TEST(ModelLearnerTest, EverySampleKeptIsStoredAndIndexedAndNoneEvicted) {
  for (std::size_t window : {0, 150}) {
    SCOPED_TRACE(window == 0 ? "unbounded" : "a window of 150");
    ModelConfig config = BaseConfig();
    config.regressor = RegressorKind::kNearest;
    config.k_grid = {1};
    config.linear_base = false;  // its own y, not a base's value plus it
    if (window > 0) config.capacity = {CapacityPolicy::kWindow, window};
    auto model = MakeModel(config);
    const Stream stream = MakeStream(400, 12);
    LearnAll(*model, stream, 0, stream.size());
    const std::size_t first_kept = window == 0 ? 0 : stream.size() - window;
    EXPECT_EQ(model->stats().samples_stored, stream.size() - first_kept);
    for (std::size_t s = 0; s < stream.size(); ++s) {
      const absl::StatusOr<Prediction> found = model->Predict(stream.input(s));
      ASSERT_TRUE(found.ok()) << found.status();
      const Sample sample = stream.sample(s);
      const bool itself =
          found->value[0] == sample.y[0] && found->value[1] == sample.y[1];
      EXPECT_EQ(itself, s >= first_kept) << "sample " << s;
    }
  }
}

}  // namespace
}  // namespace streamreg
