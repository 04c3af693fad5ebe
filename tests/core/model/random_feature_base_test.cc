// The random-feature base against its definition: after every sample, each
// stored slot's cached residual is, bit for bit, y - the ridge's fit at
// its x under the weights the ridge had after cache_taken_at() samples
// (a ridge learning the same samples beside it gives them), for every
// capacity policy; the cache never lags the store by more than the sweep
// schedule allows; a replacing fit takes over, with its residuals, once its
// sweep ends and not before; a snapshot mid-sweep restores a base that goes
// on exactly as the original; damaged snapshots are refused. The variance
// of the base's value is the noise variance times phi^T P phi under the
// ridge's P when the cache weights were taken.
#include "core/model/random_feature_base.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/cut_bytes.h"

namespace streamreg {
namespace {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

struct Row {
  std::vector<double> x, y;
};

// Inputs on scales far from 1; targets smooth in them.
std::vector<Row> MakeRows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Row> rows;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = 10 + 5 * normal(random), b = 0.01 * normal(random),
                 c = normal(random);
    rows.push_back({{a, b, c}, {std::sin(a / 5) + 100 * b, a * c / 10}});
  }
  return rows;
}

MetricTransform Standardizing() {
  return MetricTransform::Standardizing({10, 0, 0}, {5, 0.01, 1});
}
MetricTransform Stretched() {
  return MetricTransform::Diagonal({10, 0, 0}, {5, 0.01, 1}, {2, 0.5, 1});
}

RandomFeatureRidge::Options SmallOptions(std::uint64_t seed = 3) {
  return {.num_frequencies = 8, .lengthscale = 1.2, .ridge = 0.1, .seed = seed};
}

RandomFeatureRidge NewRidge(std::uint64_t seed = 3) {
  return RandomFeatureRidge(kDim, kTargets, SmallOptions(seed));
}

// A base and its store fed rows in order, with a ridge beside it learning
// the same samples in the same coordinates and solved whenever a sweep
// starts (as the base solves its own), whose state after each count is
// kept, and the count learned when the cache's weights were taken (tracked
// from the sweeps seen to start and end).
class Harness {
 public:
  explicit Harness(Capacity capacity)
      : store_(kDim, kTargets, capacity, 5),
        base_(Standardizing(), NewRidge()),
        beside_(NewRidge()) {
    ridges_after_.emplace(0, beside_);
  }

  void Learn(const Row& row) {
    const bool was_sweeping = base_.sweeping();
    const std::uint64_t sweeps_before = base_.sweeps();
    const SampleStore::Placement placed = store_.Place();
    std::optional<std::size_t> slot;
    if (placed.keep) {
      store_.Put(placed.slot, row.x, row.y, store_.seen());
      slot = placed.slot;
    }
    base_.Learn(row.x, row.y, slot, store_);
    beside_.Add(Standardizing().Apply(row.x), row.y);
    ++learned_;
    const bool ended = base_.sweeps() > sweeps_before;
    if (!was_sweeping && (base_.sweeping() || ended)) {
      sweep_from_ = learned_;
      ASSERT_TRUE(beside_.Solve());
    }
    if (ended) cache_from_ = sweep_from_;
    ridges_after_.emplace(learned_, beside_);
  }

  // Every stored slot's residual, against its definition.
  void ExpectResidualsAsDefined() const {
    const RandomFeaturePredictor& weights =
        ridges_after_.at(cache_from_).predictor();
    std::vector<double> fit(kTargets);
    for (std::size_t slot = 0; slot < store_.size(); ++slot) {
      weights.Predict(Standardizing().Apply(std::span(store_.x(slot), kDim)),
                      fit);
      for (std::size_t t = 0; t < kTargets; ++t) {
        ASSERT_EQ(base_.residual(slot)[t], store_.y(slot)[t] - fit[t])
            << "slot " << slot << " target " << t << " after " << learned_;
      }
    }
  }

  // The base's value and variance at x against their definitions: the fit
  // under the cache weights, and the noise variance the ridge estimates
  // now times phi^T P phi under P as it was when those weights were taken.
  void ExpectValueAndVarianceAsDefined(std::span<const double> x) const {
    std::vector<double> value(kTargets), variance(kTargets), want(kTargets);
    base_.Predict(x, value, variance);
    const RandomFeatureRidge& then = ridges_after_.at(cache_from_);
    const std::vector<double> z = Standardizing().Apply(x);
    then.Predict(z, want);
    const double relative = then.RelativeVariance(z);
    for (std::size_t t = 0; t < kTargets; ++t) {
      ASSERT_EQ(value[t], want[t]) << "target " << t << " after " << learned_;
      const double expected = beside_.NoiseVariance(t) * relative;
      ASSERT_NEAR(variance[t], expected, 1e-12 * expected)
          << "target " << t << " after " << learned_;
    }
  }

  const RandomFeatureBase& base() const { return base_; }
  const SampleStore& store() const { return store_; }
  std::size_t learned() const { return learned_; }
  // The count learned when the cache's weights were taken.
  std::size_t cache_from() const { return cache_from_; }

 private:
  SampleStore store_;
  RandomFeatureBase base_;
  RandomFeatureRidge beside_;
  std::size_t learned_ = 0;
  std::size_t sweep_from_ = 0;
  std::size_t cache_from_ = 0;
  // The ridge beside after each count of samples.
  std::map<std::size_t, RandomFeatureRidge> ridges_after_;
};

TEST(RandomFeatureBaseTest, ResidualsAreTakenUnderOneSetOfWeightsAsDefined) {
  const std::vector<Row> rows = MakeRows(1500, 1);
  Harness harness({CapacityPolicy::kUnbounded, 0});
  std::size_t most_behind = 0;
  for (const Row& row : rows) {
    harness.Learn(row);
    ASSERT_NO_FATAL_FAILURE(harness.ExpectResidualsAsDefined());
    // An unbounded store's size is the count learned.
    ASSERT_EQ(harness.base().cache_taken_at(), harness.cache_from());
    const std::size_t n = harness.learned();
    const std::size_t behind = n - harness.cache_from();
    // A sweep starts at a sixteenth's growth (and no sooner than the
    // solve's gap) and takes 16 slots a sample: the cache's weights are
    // never more than about an eighth behind, or two gaps.
    const std::size_t gap = RandomFeatureBase::SolveGap(harness.base().ridge());
    EXPECT_GT(gap, 1u);
    EXPECT_LE(behind, 2 + std::max(n / 7, 2 * gap)) << "after " << n;
    most_behind = std::max(most_behind, behind);
  }
  EXPECT_GT(most_behind, 1500u / 20);  // it does lag: a cache, not a recompute
  EXPECT_GT(harness.base().sweeps(), 30u);
  // The ridge learned every sample; the base predicts under the weights
  // its residuals were taken under.
  EXPECT_EQ(harness.base().ridge().weight(), 1500.0);
  std::vector<double> got(kTargets), want(kTargets);
  harness.base().Predict(rows[7].x, got);
  RandomFeatureRidge alone = NewRidge();
  for (std::size_t i = 0; i < harness.cache_from(); ++i) {
    alone.Add(Standardizing().Apply(rows[i].x), rows[i].y);
  }
  ASSERT_TRUE(alone.Solve());
  alone.Predict(Standardizing().Apply(rows[7].x), want);
  EXPECT_EQ(got, want);
}

// The posterior variance of the base's value (what a prediction reports
// with it): as defined after every sample, near the data and far from it;
// small where the base has seen data, and shrinking as it sees more.
TEST(RandomFeatureBaseTest,
     TheVarianceIsTheNoiseTimesTheCacheWeightsPosterior) {
  const std::vector<Row> rows = MakeRows(600, 7);
  Harness harness({CapacityPolicy::kUnbounded, 0});
  const std::vector<double> far = {40, 0.05, 4};  // 6, 5 and 4 sd out
  const auto variance_at = [&](std::span<const double> x) {
    std::vector<double> value(kTargets), variance(kTargets);
    harness.base().Predict(x, value, variance);
    return variance[0];
  };
  double near_early = 0;
  for (const Row& row : rows) {
    harness.Learn(row);
    ASSERT_NO_FATAL_FAILURE(harness.ExpectValueAndVarianceAsDefined(rows[3].x));
    ASSERT_NO_FATAL_FAILURE(harness.ExpectValueAndVarianceAsDefined(far));
    if (harness.learned() == 60) near_early = variance_at(rows[3].x);
  }
  EXPECT_GT(harness.base().sweeps(), 10u);
  const double near = variance_at(rows[3].x);
  EXPECT_GT(near, 0.0);
  EXPECT_LT(near, near_early / 3);
  EXPECT_GT(variance_at(far), 20 * near);
}

TEST(RandomFeatureBaseTest, WindowsAndReservoirsReplaceSlotsAndTheirResiduals) {
  const std::vector<Row> rows = MakeRows(900, 2);
  for (const CapacityPolicy policy :
       {CapacityPolicy::kWindow, CapacityPolicy::kReservoir}) {
    SCOPED_TRACE(CapacityPolicyName(policy));
    Harness harness({policy, 200});
    for (const Row& row : rows) {
      harness.Learn(row);
      ASSERT_NO_FATAL_FAILURE(harness.ExpectResidualsAsDefined());
    }
    EXPECT_EQ(harness.store().size(), 200u);
    // A full store sweeps every 12 samples (200 / 16) for 13 (200 / 16).
    EXPECT_GT(harness.base().sweeps(), 25u);
    EXPECT_LE(harness.learned() - harness.cache_from(), 30u);
  }
}

TEST(RandomFeatureBaseTest, AReplacingFitTakesOverWhenItsSweepEnds) {
  const std::vector<Row> rows = MakeRows(1200, 3);
  SampleStore store(kDim, kTargets, {CapacityPolicy::kUnbounded, 0}, 5);
  RandomFeatureBase base(Standardizing(), NewRidge());
  auto learn = [&](const Row& row) {
    const SampleStore::Placement placed = store.Place();
    store.Put(placed.slot, row.x, row.y, store.seen());
    base.Learn(row.x, row.y, placed.slot, store);
  };
  for (std::size_t i = 0; i < 800; ++i) learn(rows[i]);
  // The new fit: learned the first 800 samples in its own coordinates.
  RandomFeatureRidge incoming = NewRidge(9);
  for (std::size_t i = 0; i < 800; ++i) {
    incoming.Add(Stretched().Apply(rows[i].x), rows[i].y);
  }
  // Solved over them when the replacement begins.
  ASSERT_TRUE(incoming.Solve());
  const RandomFeaturePredictor taken = incoming.predictor();
  base.Replace({Stretched(), incoming}, store);
  ASSERT_TRUE(base.replacing());
  std::size_t i = 800;
  std::vector<double> got(kTargets);
  while (base.replacing()) {
    // The fit in use until then is the old one (its transform).
    EXPECT_EQ(base.transform().Apply(rows[0].x),
              Standardizing().Apply(rows[0].x));
    incoming.Add(Stretched().Apply(rows[i].x), rows[i].y);
    learn(rows[i++]);
  }
  // 800 slots at 16 a sample.
  EXPECT_EQ(i, 800u + 50u);
  // Then the new fit (which learned every sample since), predicting under
  // its weights at the replacement, with every slot's residual under them.
  std::vector<double> want(kTargets);
  base.Predict(rows[0].x, got);
  taken.Predict(Stretched().Apply(rows[0].x), want);
  EXPECT_EQ(got, want);
  EXPECT_EQ(base.ridge().weight(), incoming.weight());
  EXPECT_EQ(base.cache_taken_at(), 800u);
  std::vector<double> fit(kTargets);
  for (std::size_t slot = 0; slot < store.size(); ++slot) {
    taken.Predict(Stretched().Apply(std::span(store.x(slot), kDim)), fit);
    for (std::size_t t = 0; t < kTargets; ++t) {
      ASSERT_EQ(base.residual(slot)[t], store.y(slot)[t] - fit[t]) << slot;
    }
  }
}

TEST(RandomFeatureBaseTest, ASnapshotMidSweepGoesOnExactlyAsTheOriginal) {
  const std::vector<Row> rows = MakeRows(1000, 4);
  for (const bool replacing : {false, true}) {
    SCOPED_TRACE(replacing ? "replacing" : "growth sweep");
    SampleStore store(kDim, kTargets, {CapacityPolicy::kUnbounded, 0}, 5);
    RandomFeatureBase base(Standardizing(), NewRidge());
    auto learn = [&](RandomFeatureBase& into, const Row& row) {
      const SampleStore::Placement placed = store.Place();
      store.Put(placed.slot, row.x, row.y, store.seen());
      into.Learn(row.x, row.y, placed.slot, store);
    };
    std::size_t i = 0;
    while (i < 600 || !base.sweeping()) learn(base, rows[i++]);
    if (replacing) base.Replace({Stretched(), NewRidge(9)}, store);
    ASSERT_TRUE(base.sweeping());
    std::string saved;
    ByteWriter writer(&saved);
    base.Save(writer);
    ByteReader reader(saved);
    std::optional<RandomFeatureBase> back =
        RandomFeatureBase::Load(reader, kDim, kTargets);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->sweeping(), base.sweeping());
    EXPECT_EQ(back->replacing(), replacing);
    // The two go on over the same store (the original's samples are the
    // restored one's: both learn each into their own copy of the cache).
    SampleStore::Placement placed;
    for (; i < rows.size(); ++i) {
      placed = store.Place();
      store.Put(placed.slot, rows[i].x, rows[i].y, store.seen());
      base.Learn(rows[i].x, rows[i].y, placed.slot, store);
      back->Learn(rows[i].x, rows[i].y, placed.slot, store);
    }
    EXPECT_EQ(back->sweeps(), base.sweeps());
    EXPECT_EQ(back->cache_taken_at(), base.cache_taken_at());
    std::vector<double> a(kTargets), b(kTargets);
    for (std::size_t slot = 0; slot < store.size(); ++slot) {
      ASSERT_EQ(std::vector<double>(back->residual(slot).begin(),
                                    back->residual(slot).end()),
                std::vector<double>(base.residual(slot).begin(),
                                    base.residual(slot).end()))
          << slot;
    }
    std::vector<double> a_variance(kTargets), b_variance(kTargets);
    for (std::size_t q = 0; q < 20; ++q) {
      base.Predict(rows[q].x, a, a_variance);
      back->Predict(rows[q].x, b, b_variance);
      EXPECT_EQ(a, b);
      EXPECT_EQ(a_variance, b_variance);
      const std::vector<double> z = base.transform().Apply(rows[q].x);
      EXPECT_EQ(base.ridge().RelativeVariance(z),
                back->ridge().RelativeVariance(z));
    }
  }
}

// Readers share the model's lock with Prepare: it changes nothing they
// read (the base's value, any slot's residual); Commit does (the base's
// value when a sweep ends).
TEST(RandomFeatureBaseTest, PrepareChangesNothingReadersSee) {
  const std::vector<Row> rows = MakeRows(400, 6);
  SampleStore store(kDim, kTargets, {CapacityPolicy::kWindow, 150}, 5);
  RandomFeatureBase base(Standardizing(), NewRidge());
  std::size_t changed_residuals = 0;
  for (const Row& row : rows) {
    std::vector<double> before(kTargets), after(kTargets);
    std::vector<double> variance_before(kTargets), variance_after(kTargets);
    base.Predict(rows[0].x, before, variance_before);
    std::vector<double> residuals;
    for (std::size_t slot = 0; slot < store.size(); ++slot) {
      residuals.insert(residuals.end(), base.residual(slot).begin(),
                       base.residual(slot).end());
    }
    base.Prepare(row.x, row.y, store);
    base.Predict(rows[0].x, after, variance_after);
    ASSERT_EQ(before, after);
    ASSERT_EQ(variance_before, variance_after);
    for (std::size_t slot = 0; slot < store.size(); ++slot) {
      for (std::size_t t = 0; t < kTargets; ++t) {
        ASSERT_EQ(base.residual(slot)[t], residuals[slot * kTargets + t]);
      }
    }
    const SampleStore::Placement placed = store.Place();
    store.Put(placed.slot, row.x, row.y, store.seen());
    const std::uint64_t sweeps = base.sweeps();
    base.Commit(placed.slot, store);
    base.Predict(rows[0].x, after);
    EXPECT_EQ(before != after, base.sweeps() > sweeps);
    for (std::size_t slot = 0; slot < residuals.size() / kTargets; ++slot) {
      changed_residuals += base.residual(slot)[0] != residuals[slot * kTargets];
    }
  }
  EXPECT_GT(changed_residuals, 1000u);  // sweeps and replaced slots
}

TEST(RandomFeatureBaseTest, RefusesDamagedSnapshots) {
  const std::vector<Row> rows = MakeRows(100, 5);
  SampleStore store(kDim, kTargets, {CapacityPolicy::kUnbounded, 0}, 5);
  RandomFeatureBase base(Standardizing(), NewRidge());
  for (const Row& row : rows) {
    const SampleStore::Placement placed = store.Place();
    store.Put(placed.slot, row.x, row.y, store.seen());
    base.Learn(row.x, row.y, placed.slot, store);
  }
  std::string saved;
  ByteWriter writer(&saved);
  base.Save(writer);
  ExpectEveryCutLoadsAsNothing(saved, [](ByteReader& reader) {
    return RandomFeatureBase::Load(reader, kDim, kTargets);
  });
  ByteReader other(saved);
  EXPECT_FALSE(RandomFeatureBase::Load(other, kDim + 1, kTargets).has_value());
  ByteReader whole(saved);
  EXPECT_TRUE(RandomFeatureBase::Load(whole, kDim, kTargets).has_value());
}

}  // namespace
}  // namespace streamreg
