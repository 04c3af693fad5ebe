// Replicas of one model sharing their MLKR fits (MlkrFitExchange): a
// replica that takes every fit from another, or holds its fits back and
// computes them itself, learns the same model bit for bit as one that
// shares nothing.
#include <memory>
#include <mutex>
#include <vector>

#include "core/io/record_writer.h"
#include "core/io/string_file.h"
#include "core/metric/mlkr_fit_exchange.h"
#include "core/model/model.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

// Hands each fit shared to the models it is told of, as the cluster's
// exchange hands it to the other servers' replicas.
class Relay : public MlkrFitExchange {
 public:
  explicit Relay(bool computes_first) : computes_first_(computes_first) {}
  void To(Model* model) { to_.push_back(model); }
  bool ComputesFirst() const override { return computes_first_; }
  void Share(std::uint64_t fit, const std::vector<MlkrMap>& maps) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++shared_;
    for (Model* model : to_) model->OfferMlkrFit(fit, maps);
  }
  std::uint64_t shared() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return shared_;
  }

 private:
  const bool computes_first_;
  std::vector<Model*> to_;  // set before the first fit
  mutable std::mutex mutex_;
  std::uint64_t shared_ = 0;
};

ModelConfig MlkrConfig() {
  ModelConfig config = BusyConfig(BaseConfig());
  config.metric = MetricKind::kMlkr;
  return config;
}

// Fits start at 64, 128, ..., 1024 stored samples and take over half the
// samples they read later: by 1600 all five have, and none has started
// since.
constexpr std::size_t kLearned = 1600;

TEST(MlkrFitSharingTest, AReplicaTakingEveryFitLearnsWhatOneComputingThemDoes) {
  const Stream stream = MakeStream(2 * kLearned + 200, 11);
  const Stream queries = MakeStream(200, 12);
  std::unique_ptr<Model> alone = MakeModel(MlkrConfig());
  LearnAll(*alone, stream, 0, kLearned);
  const std::uint64_t fits = alone->stats().mlkr_fits_computed;
  ASSERT_EQ(fits, 5u);

  std::unique_ptr<Model> computing = MakeModel(MlkrConfig());
  std::unique_ptr<Model> taking = MakeModel(MlkrConfig());
  auto relay = std::make_shared<Relay>(true);
  relay->To(taking.get());
  computing->ShareMlkrFits(relay);
  taking->ShareMlkrFits(std::make_shared<Relay>(false));
  // Past the take-over of every fit started by kLearned: each computed,
  // and shared, before `taking` starts it.
  LearnAll(*computing, stream, 0, 2 * kLearned);
  LearnAll(*taking, stream, 0, kLearned);

  EXPECT_EQ(taking->stats().mlkr_fits_computed, 0u);
  EXPECT_EQ(taking->stats().mlkr_fits_taken, fits);
  EXPECT_GE(relay->shared(), fits);
  ExpectSameModel(*taking, *alone, queries);
}

TEST(MlkrFitSharingTest, AReplicaNobodySharesWithComputesEachFitItself) {
  const Stream stream = MakeStream(kLearned, 13);
  const Stream queries = MakeStream(200, 14);
  std::unique_ptr<Model> alone = MakeModel(MlkrConfig());
  LearnAll(*alone, stream, 0, kLearned);
  // Every fit held back, then computed once the learner waits for it at
  // its take-over point (and shared).
  std::unique_ptr<Model> held = MakeModel(MlkrConfig());
  auto exchange = std::make_shared<Relay>(false);
  held->ShareMlkrFits(exchange);
  LearnAll(*held, stream, 0, kLearned);

  EXPECT_EQ(held->stats().mlkr_fits_computed,
            alone->stats().mlkr_fits_computed);
  EXPECT_EQ(held->stats().mlkr_fits_taken, 0u);
  EXPECT_EQ(exchange->shared(), held->stats().mlkr_fits_computed);
  ExpectSameModel(*held, *alone, queries);
}

TEST(MlkrFitSharingTest, ASnapshotOfAReplicaHoldingAFitBackIsWritten) {
  const Stream stream = MakeStream(kLearned, 15);
  std::unique_ptr<Model> held = MakeModel(MlkrConfig());
  held->ShareMlkrFits(std::make_shared<Relay>(false));
  // Past a fit's start, before its take-over point: a fit held back.
  LearnAll(*held, stream, 0, 1030);
  ASSERT_TRUE(held->stats().rebuild_in_progress);
  const ModelSnapshot snapshot = held->CaptureSnapshot();
  StringWritableFile file("snapshot");
  RecordWriter writer(&file);
  std::uint64_t records = 0;
  // Waits for the fit: which starts, since something waits for it.
  EXPECT_TRUE(snapshot.Write(writer, &records).ok());
  EXPECT_GT(records, 0u);
  EXPECT_EQ(held->stats().mlkr_fits_computed, 5u);  // at 64, ..., 1024
}

}  // namespace
}  // namespace streamreg
