// Model: all-or-nothing batches with errors naming the sample and field,
// predictions equal to brute-force references in the metric the index
// uses, predict-then-learn, capacity policies, refit = the batch
// estimator, determinism.
#include "core/model/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/background_priority.h"
#include "core/index/cover_tree.h"
#include "core/index/neighbor.h"
#include "core/metric/batch_gradients.h"
#include "core/metric/glml_metric.h"
#include "core/model/model_state.h"
#include "core/model/random_feature_refresh.h"
#include "core/regression/adaptive_conformal.h"
#include "core/regression/online_ridge.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/local_linear_reference.h"
#include "tests/support/model_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// The model's prediction for `query`, recomputed by brute force over the
// samples in `slots` (slot -> stream index), in the transform the model's
// index uses and with the model's current bandwidth or k per target. With
// a linear `base`, the neighbours' targets are their residuals
// y - base(x) and the prediction is base(query) plus the regressor's.
//
// An index of GLML's metric measures each target's distances under that
// target's metric at the query (GlmlMetric), from `gaussian`, learned
// independently.
// A base's fit at raw x, every target (empty: no base).
using BaseFit =
    std::function<void(std::span<const double> x, std::span<double> out)>;

BaseFit FitOf(const OnlineRidge* base) {
  if (base == nullptr) return {};
  return [base](std::span<const double> x, std::span<double> out) {
    base->Predict(x, out);
  };
}

Prediction Reference(const Model& model, const Stream& stream,
                     const std::vector<std::size_t>& slots,
                     std::span<const double> query, std::size_t index = 0,
                     const BaseFit& base = {},
                     const OnlineRidge* gaussian = nullptr) {
  const auto target = [&](std::size_t sample, std::size_t t) {
    const double y = stream.y[sample * kTargets + t];
    if (!base) return y;
    std::vector<double> fit(kTargets);
    base(stream.input(sample), fit);
    return y - fit[t];
  };
  std::vector<double> base_value(kTargets, 0.0);
  if (base) base(query, base_value);
  const MetricReport report = model.metric();
  const MetricTransform& transform = report.in_use[index];
  const ModelStats stats = model.stats();
  const std::vector<double> z = transform.Apply(query);
  const bool glml = report.metrics[index].kind == MetricKind::kGlml;
  std::vector<double> direction(kDim);
  if (glml) gaussian->DensityDirection(query, direction);
  // The stored samples by their distance from the query for target t.
  const auto sorted = [&](std::size_t t) {
    std::optional<GlmlMetric> metric;
    if (glml) {
      metric = GlmlMetricScaled(*gaussian, direction, transform.scale(), t,
                                model.config().glml_gamma_ratio);
    }
    std::vector<Neighbor> all;
    std::vector<double> difference(kDim);
    for (std::size_t slot = 0; slot < slots.size(); ++slot) {
      const std::vector<double> point =
          transform.Apply(stream.input(slots[slot]));
      for (std::size_t i = 0; i < kDim; ++i) difference[i] = point[i] - z[i];
      const double squared =
          metric.has_value()
              ? metric->SquaredDistance(difference)
              : std::inner_product(difference.begin(), difference.end(),
                                   difference.begin(), 0.0);
      all.push_back({slot, std::sqrt(squared)});
    }
    std::sort(all.begin(), all.end(), NeighborLess);
    return all;
  };
  Prediction out;
  // The samples a target used, as Prediction::used lists them: raw inputs
  // and raw targets, nearest first.
  const auto list_used = [&](const Neighbor& neighbor, std::size_t t) {
    const std::size_t sample = slots[neighbor.id];
    const std::span<const double> x = stream.input(sample);
    out.used[t].push_back({stream.sample(sample).sample_id, neighbor.distance,
                           std::vector<double>(x.begin(), x.end()),
                           stream.y[sample * kTargets + t]});
  };
  out.used.resize(kTargets);
  // Each target with the regressor it predicts with (REGRESSOR_AUTO's
  // choice per target).
  for (std::size_t t = 0; t < kTargets; ++t) {
    const std::vector<Neighbor> all = sorted(t);
    if (stats.regressor[t] == RegressorKind::kLocalLinear) {
      const std::size_t k = std::min<std::size_t>(stats.k[t], all.size());
      // Over the index's coordinates the fit chose: all, or the leading
      // ones (ModelConfig::local_linear_leading).
      const std::size_t coordinates = stats.coordinates[t];
      EXPECT_TRUE(coordinates == kDim ||
                  coordinates == model.config().local_linear_leading)
          << coordinates;
      std::vector<std::vector<double>> offsets;
      std::vector<double> y;
      for (std::size_t j = 0; j < k; ++j) {
        const std::size_t sample = slots[all[j].id];
        std::vector<double> offset = transform.Apply(stream.input(sample));
        for (std::size_t i = 0; i < kDim; ++i) offset[i] -= z[i];
        offset.resize(coordinates);
        offsets.push_back(std::move(offset));
        y.push_back(target(sample, t));
        list_used(all[j], t);
      }
      const LocalLinearReference fit =
          LocalLinearByQr(offsets, y, model.config().local_linear_ridge);
      out.neighbors.push_back(static_cast<std::uint32_t>(k));
      out.value.push_back(fit.value + base_value[t]);
      out.spread.push_back(fit.spread);
      continue;
    }
    const bool kernel = stats.regressor[t] == RegressorKind::kKernel;
    double total = 0.0, sum = 0.0;
    std::uint32_t count = 0;
    std::vector<std::pair<double, double>> used;  // (weight, y)
    for (std::size_t j = 0; j < all.size(); ++j) {
      const double w = kernel
                           ? KernelWeight(model.config().kernel,
                                          all[j].distance / stats.bandwidth[t])
                           : (j < stats.k[t] ? 1.0 : 0.0);
      if (w <= 0.0) continue;
      const double y = target(slots[all[j].id], t);
      used.emplace_back(w, y);
      list_used(all[j], t);
      total += w;
      sum += w * y;
      ++count;
    }
    out.neighbors.push_back(count);
    const double mean = count == 0 ? NAN : sum / total;
    double spread = 0.0;
    for (auto [w, y] : used) spread += w * (y - mean) * (y - mean);
    out.value.push_back(mean + base_value[t]);
    out.spread.push_back(count == 0 ? NAN : std::sqrt(spread / total));
  }
  return out;
}

// The model's linear base learned independently: from every sample of the
// stream it has seen, stored or not (none if the model has no base).
// With `gaussian`, GLML's Gaussian likewise (none if it has no GLML index).
std::optional<OnlineRidge> ReferenceBase(const Model& model,
                                         const Stream& stream,
                                         bool gaussian = false) {
  std::optional<OnlineRidge> base;
  const ModelConfig& config = model.config();
  if (gaussian ? config.SearchesGlml() : config.linear_base) {
    base.emplace(kDim, kTargets, config.base_ridge, config.base_forgetting,
                 gaussian ? 0.0 : config.base_relative_ridge);
    for (std::size_t s = 0; s < model.stats().samples_seen; ++s) {
      base->Add(stream.input(s), stream.sample(s).y);
    }
  }
  return base;
}

// The prediction index target t predicts from: its own (per-target
// metrics), the one of the metric it chose (METRIC_AUTO), or the shared one.
std::size_t IndexOf(const Model& model, std::size_t t) {
  const MetricReport report = model.metric();
  if (report.per_target) return t;
  const MetricKind chosen = model.stats().metric[t];
  for (std::size_t i = 0; i < report.metrics.size(); ++i) {
    if (report.metrics[i].kind == chosen) return i;
  }
  ADD_FAILURE() << "no index in the metric " << MetricKindName(chosen);
  return 0;
}

void ExpectMatchesReference(const Model& model, const Stream& stream,
                            const std::vector<std::size_t>& slots,
                            const Stream& queries, BaseFit base_fit = {}) {
  const std::optional<OnlineRidge> base = ReferenceBase(model, stream);
  if (!base_fit) base_fit = FitOf(base.has_value() ? &*base : nullptr);
  const std::optional<OnlineRidge> gaussian =
      ReferenceBase(model, stream, /*gaussian=*/true);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    SCOPED_TRACE(::testing::Message() << "query " << q);
    const absl::StatusOr<Prediction> got = model.Predict(queries.input(q));
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(got->used.empty());
    // Asked for, the samples each target used, beside the same values.
    const std::vector<std::span<const double>> one = {queries.input(q)};
    std::vector<Prediction> listed;
    ASSERT_TRUE(
        model.Predict(one, &listed, PredictOptions::WithNeighbors()).ok());
    ASSERT_EQ(listed[0].value, got->value);
    ASSERT_EQ(listed[0].used.size(), kTargets);
    for (std::size_t t = 0; t < kTargets; ++t) {
      const Prediction expected =
          Reference(model, stream, slots, queries.input(q), IndexOf(model, t),
                    base_fit, gaussian.has_value() ? &*gaussian : nullptr);
      ASSERT_EQ(got->neighbors[t], expected.neighbors[t]) << "target " << t;
      const std::vector<UsedNeighbor>& used = listed[0].used[t];
      ASSERT_EQ(used.size(), expected.used[t].size()) << "target " << t;
      for (std::size_t j = 0; j < used.size(); ++j) {
        const UsedNeighbor& want = expected.used[t][j];
        ASSERT_EQ(used[j].sample_id, want.sample_id) << "target " << t;
        EXPECT_NEAR(used[j].distance, want.distance, 1e-9);
        EXPECT_EQ(used[j].x, want.x);
        EXPECT_EQ(used[j].y, want.y);
      }
      if (expected.neighbors[t] == 0) continue;
      EXPECT_NEAR(got->value[t], expected.value[t], 1e-9);
      EXPECT_NEAR(got->spread[t], expected.spread[t], 1e-9);
    }
  }
}

std::vector<std::size_t> FirstSlots(std::size_t n) {
  std::vector<std::size_t> slots(n);
  for (std::size_t s = 0; s < n; ++s) slots[s] = s;
  return slots;
}

TEST(ModelTest, ALargeStoreScoresOneSampleInItsStride) {
  // Twice the same stream, into a model at the default stride and one
  // that scores every sample: alike, bit for bit, while fewer than
  // kScoreEverySampleBelow are stored; then the first makes a prediction
  // (scores) for every second sample alone, and both store every sample.
  ModelConfig strided = BaseConfig();
  strided.metric = MetricKind::kEuclidean;
  strided.regressor = RegressorKind::kNearest;
  ModelConfig every = strided;
  every.max_scoring_stride = 1;
  const std::size_t threshold = ModelConfig::kScoreEverySampleBelow;
  const std::size_t n = threshold + 40;
  const Stream stream = MakeStream(n, 31);
  const std::vector<Sample> batch = Slice(stream, 0, n);
  std::vector<Prediction> strided_before, every_before;
  std::unique_ptr<Model> strided_model = MakeModel(strided);
  std::unique_ptr<Model> every_model = MakeModel(every);
  ASSERT_TRUE(strided_model->Learn(batch, &strided_before).ok());
  ASSERT_TRUE(every_model->Learn(batch, &every_before).ok());
  ASSERT_EQ(strided_before.size(), n);
  for (std::size_t s = 0; s < threshold; ++s) {
    ASSERT_EQ(strided_before[s].value, every_before[s].value) << "sample " << s;
    ASSERT_EQ(strided_before[s].value.size(), kTargets);
  }
  for (std::size_t s = threshold; s < n; ++s) {
    // Sample number s + 1 comes to a store of s >= threshold: stride 2.
    const bool scored = (s + 1) % 2 == 0;
    EXPECT_EQ(strided_before[s].value.size(), scored ? kTargets : 0u)
        << "sample " << s;
    EXPECT_EQ(every_before[s].value.size(), kTargets);
  }
  EXPECT_EQ(strided_model->stats().samples_stored, n);
  EXPECT_EQ(every_model->stats().samples_stored, n);
}

TEST(ModelTest, ABadSampleRejectsTheWholeBatchAndNamesIt) {
  const Stream stream = MakeStream(300, 1);
  auto model = MakeModel(BaseConfig());
  LearnAll(*model, stream, 0, 200);
  const Prediction before = *model->Predict(stream.input(250));
  const ModelStats stats_before = model->stats();

  std::vector<double> bad_x(stream.x.begin() + 10 * kDim,
                            stream.x.begin() + 11 * kDim);
  bad_x[2] = std::nan("");
  std::vector<Sample> batch;
  for (std::size_t s = 200; s < 220; ++s) batch.push_back(stream.sample(s));
  batch[10].x = bad_x;
  absl::Status status = model->Learn(batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("samples[10].x[2]: NaN"));

  const std::vector<double> short_y = {1.0};
  batch[10] = stream.sample(210);
  batch[5].y = short_y;
  status = model->Learn(batch);
  EXPECT_THAT(status.message(), HasSubstr("samples[5].y: has 1 values"));

  const std::vector<double> huge = {1.0, 1e300, 2.0};
  batch[5] = stream.sample(205);
  batch[19].x = huge;
  EXPECT_THAT(model->Learn(batch).message(), HasSubstr("samples[19].x[1]"));

  // Nothing changed.
  EXPECT_EQ(model->stats().samples_seen, stats_before.samples_seen);
  const Prediction after = *model->Predict(stream.input(250));
  EXPECT_EQ(after.value, before.value);
  EXPECT_EQ(after.neighbors, before.neighbors);
  EXPECT_THAT(model->Predict(huge).status().message(),
              HasSubstr("queries[0].x[1]"));
}

TEST(ModelTest, ValidateChecksOnceIntoTheTypeLearnTakes) {
  const Stream stream = MakeStream(40, 1);
  auto model = MakeModel(BaseConfig());
  std::vector<Sample> batch;
  for (std::size_t s = 0; s < 20; ++s) batch.push_back(stream.sample(s));
  batch[4].sample_id = 7;
  batch[9].sample_id = 7;
  EXPECT_THAT(model->Validate(batch).status().message(),
              HasSubstr("samples[9].sample_id: 7 repeats samples[4]"));
  batch[9].sample_id = 8;
  absl::StatusOr<ValidatedSamples> checked = model->Validate(batch);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->size(), 20u);

  // A copy of the values: the caller's may change or go.
  std::vector<double> changed(batch[3].x.begin(), batch[3].x.end());
  const double original = changed[0];
  changed[0] = std::nan("");
  batch[3].x = changed;
  EXPECT_EQ((*checked)[3].x[0], original);

  // Learning the checked samples in slices teaches what learning them as a
  // batch does.
  auto whole = MakeModel(BaseConfig());
  LearnAll(*whole, stream, 0, 20);
  ASSERT_TRUE(model->Learn(checked->First(5)).ok());
  ASSERT_TRUE(model->Learn(checked->Subspan(5, 15)).ok());
  EXPECT_EQ(model->stats().prequential_mse, whole->stats().prequential_mse);
  const Prediction a = *model->Predict(stream.input(30));
  const Prediction b = *whole->Predict(stream.input(30));
  EXPECT_EQ(a.value, b.value);

  // Samples checked for a model of other dimensions are refused.
  ModelConfig wider = BaseConfig();
  wider.input_dim = kDim + 1;
  auto other = MakeModel(wider);
  std::vector<double> x(kDim + 1, 0.5);
  const std::vector<double> y(BaseConfig().num_targets(), 1.0);
  const Sample wide{x, y, 0};
  absl::StatusOr<ValidatedSamples> other_checked = other->Validate({&wide, 1});
  ASSERT_TRUE(other_checked.ok());
  EXPECT_EQ(model->Learn(*other_checked).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->stats().samples_seen, 20u);
  const ValidatedSamples pair[] = {*checked, *other_checked};
  EXPECT_EQ(ValidatedSamples::Concatenate(pair).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Joined, the parts keep the type's promise: no id twice.
  const ValidatedSamples overlapping[] = {checked->First(10),
                                          checked->Subspan(9, 5)};
  EXPECT_THAT(ValidatedSamples::Concatenate(overlapping).status().message(),
              HasSubstr("sample_id 8 joined to a batch holding it"));
  const ValidatedSamples halves[] = {checked->First(10),
                                     checked->Subspan(10, 10)};
  absl::StatusOr<ValidatedSamples> whole_again =
      ValidatedSamples::Concatenate(halves);
  ASSERT_TRUE(whole_again.ok());
  EXPECT_EQ(whole_again->size(), 20u);
  EXPECT_EQ((*whole_again)[15].x[0], (*checked)[15].x[0]);
}

TEST(ModelTest, PredictionsEqualABruteForceReferenceInEveryMetric) {
  const Stream stream = MakeStream(1500, 2);
  const Stream queries = MakeStream(40, 3);
  // Targets that chose a local linear fit over fewer coordinates than all.
  std::size_t leading_fits = 0;
  // Every metric, and one of them again with a linear base (with a
  // forgetting factor, which the reference's base follows).
  for (auto [metric, linear_base] :
       {std::pair{MetricKind::kEuclidean, false},
        std::pair{MetricKind::kGradientWeights, false},
        std::pair{MetricKind::kEgop, false},
        std::pair{MetricKind::kGradientWeights, true},
        std::pair{MetricKind::kGlml, false},
        std::pair{MetricKind::kAuto, false},
        std::pair{MetricKind::kAuto, true}}) {
    for (RegressorKind regressor :
         {RegressorKind::kKernel, RegressorKind::kNearest,
          RegressorKind::kLocalLinear, RegressorKind::kAuto}) {
      SCOPED_TRACE(::testing::Message()
                   << MetricKindName(metric) << " "
                   << RegressorKindName(regressor)
                   << (linear_base ? " with a linear base" : ""));
      ModelConfig config = BaseConfig();
      config.metric = metric;
      config.regressor = regressor;
      config.linear_base = linear_base;
      config.base_forgetting = 0.999;
      config.kernel = Kernel::kEpanechnikov;
      // Under the EGOP, local linear fits over its leading 2 coordinates
      // too (the other metrics' fits use all 3).
      config.local_linear_leading = 2;
      auto model = MakeModel(config);
      LearnAll(*model, stream, 0, stream.size());
      ExpectMatchesReference(*model, stream, FirstSlots(stream.size()),
                             queries);
      const MetricReport report = model->metric();
      for (std::size_t i = 0; i < report.metrics.size(); ++i) {
        // An index of a learned metric follows it, not standardized
        // Euclidean (GLML's metric is per query, its index standardized).
        if (report.metrics[i].kind == MetricKind::kEuclidean ||
            report.metrics[i].kind == MetricKind::kGlml) {
          continue;
        }
        EXPECT_GT(report.in_use[i].RelativeChange(
                      MetricTransform::Standardizing({0, 0, 0}, {1, 1, 1})),
                  0.1);
      }
      const ModelStats stats = model->stats();
      for (std::size_t t = 0; t < kTargets; ++t) {
        EXPECT_EQ(stats.metric[t] == metric, metric != MetricKind::kAuto);
        if (stats.coordinates[t] == 2) ++leading_fits;
      }
    }
  }
  // This stream has the EGOP's local linear fits over the leading two
  // coordinates chosen, so the reference above checked them too.
  EXPECT_GT(leading_fits, 0u);
}

// A random-feature base's lengthscale and ridge are chosen again as the
// store grows (each metric_refresh_growth), not only when the first index
// takes over new coordinates: chosen on the first 64 samples alone, they
// would be a noisy guess for the thousands after.
TEST(ModelTest, ARandomFeatureBaseIsRebuiltAsTheStoreGrows) {
  const Stream stream = MakeStream(1500, 25);
  std::uint64_t rebuilds[2] = {0, 0};
  for (const double growth : {0.0, 2.0}) {
    ModelConfig config = BaseConfig();
    config.metric = MetricKind::kEuclidean;
    config.random_feature_base = true;
    config.random_feature_frequencies = 8;
    config.metric_refresh_growth = growth;
    auto model = MakeModel(config);
    LearnAll(*model, stream, 0, stream.size());
    model->FinishRebuilds();
    rebuilds[growth == 0.0 ? 0 : 1] = model->stats().base_rebuilds;
  }
  // Without growth, only the index's take-overs rebuild it (4 here); with
  // it the growth points of a small store (x1.25) from 64 to 1,500 (64, 80,
  // 100, ..., 1,192: 15) start rebuilds too, less those passed over while
  // one was in flight or superseded by a take-over (13 in all here).
  EXPECT_GE(rebuilds[0], 1u);
  EXPECT_GE(rebuilds[1], rebuilds[0] + 5) << rebuilds[0];
}

// The random-feature base fitted in one batch to every sample of `stream`
// in `transform`'s coordinates, as a rebuild of `model`'s fits it.
RandomFeatureRidge BatchRandomBase(const Model& model,
                                   const MetricTransform& transform,
                                   const Stream& stream) {
  std::vector<double> z, y;
  for (std::size_t s = 0; s < stream.size(); ++s) {
    const std::vector<double> mapped = transform.Apply(stream.input(s));
    z.insert(z.end(), mapped.begin(), mapped.end());
    const Sample sample = stream.sample(s);
    y.insert(y.end(), sample.y.begin(), sample.y.end());
  }
  return RandomFeatureRefresh::BuildOver(
      RandomFeatureJob(model.config(), transform, stream.size()), z, y);
}

// Each prediction of `model` carries its base's posterior variance there:
// `ridge`'s noise variance times phi^T P phi in `transform`'s coordinates.
void ExpectBaseVariances(const Model& model, const Stream& queries,
                         const RandomFeatureRidge& ridge,
                         const MetricTransform& transform) {
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Prediction prediction = *model.Predict(queries.input(q));
    ASSERT_EQ(prediction.base_variance.size(), 2u);
    const double relative =
        ridge.RelativeVariance(transform.Apply(queries.input(q)));
    for (std::size_t t = 0; t < 2; ++t) {
      const double expected = ridge.NoiseVariance(t) * relative;
      EXPECT_NEAR(prediction.base_variance[t], expected, 1e-12 * expected)
          << "query " << q << " target " << t;
    }
  }
}

// After a refit, a random-feature base is the ridge fitted in one batch
// to every stored sample in the first index's coordinates (its lengthscale
// and ridge chosen on the newest fifth), every residual is taken under it,
// and a prediction is its fit plus the regressor's over those residuals:
// recomputed here by brute force from the samples.
TEST(ModelTest, ARandomFeatureBaseAfterARefitIsItsFitPlusTheResidualsUnderIt) {
  const Stream stream = MakeStream(1200, 21);
  const Stream queries = MakeStream(30, 22);
  for (MetricKind metric : {MetricKind::kEuclidean,
                            MetricKind::kGradientWeights, MetricKind::kMlkr}) {
    for (RegressorKind regressor :
         {RegressorKind::kKernel, RegressorKind::kNearest,
          RegressorKind::kLocalLinear}) {
      SCOPED_TRACE(::testing::Message() << MetricKindName(metric) << " "
                                        << RegressorKindName(regressor));
      ModelConfig config = BaseConfig();
      config.metric = metric;
      config.regressor = regressor;
      config.random_feature_base = true;
      config.random_feature_frequencies = 16;
      config.kernel = Kernel::kEpanechnikov;
      auto model = MakeModel(config);
      LearnAll(*model, stream, 0, stream.size());
      ASSERT_TRUE(model->Refit().ok());
      model->FinishRebuilds();
      const MetricTransform transform = model->metric().in_use[0];
      const RandomFeatureRidge ridge =
          BatchRandomBase(*model, transform, stream);
      const BaseFit fit = [&](std::span<const double> x,
                              std::span<double> out) {
        ridge.Predict(transform.Apply(x), out);
      };
      ExpectMatchesReference(*model, stream, FirstSlots(stream.size()), queries,
                             fit);
      ExpectBaseVariances(*model, queries, ridge, transform);
    }
  }
}

// Under the metric chosen per target, a random-feature base follows the
// coordinates of the metric the targets choose (most of them), here a
// learned one: both targets depend on the first input alone, the others
// are noise. After a refit its variance at a query is that of the batch
// fit in those coordinates; a model saved before the rule (legacy) keeps
// the first index's, the standardized inputs'.
TEST(ModelTest, UnderTheMetricChosenPerTargetARandomFeatureBaseFollowsIt) {
  std::mt19937_64 random(27);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Stream stream;
  for (std::size_t i = 0; i < 1500; ++i) {
    const double a = uniform(random);
    stream.x.insert(stream.x.end(),
                    {a, 3.0 * uniform(random), 3.0 * uniform(random)});
    stream.y.push_back(std::sin(3 * a));
    stream.y.push_back(std::cos(3 * a) + 0.05 * uniform(random));
  }
  const Stream queries = MakeStream(20, 28);
  for (const bool follows : {true, false}) {
    SCOPED_TRACE(follows ? "follows the choice" : "legacy");
    ModelConfig config = BaseConfig();
    config.metric = MetricKind::kAuto;
    config.regressor = RegressorKind::kNearest;
    config.random_feature_base = true;
    config.random_feature_frequencies = 8;
    config.random_base_follows_choice = follows;
    auto model = MakeModel(config);
    LearnAll(*model, stream, 0, stream.size());
    ASSERT_TRUE(model->Refit().ok());
    model->FinishRebuilds();
    const ModelStats stats = model->stats();
    const MetricReport metric = model->metric();
    // The index most targets chose (the first of those on ties).
    std::vector<std::size_t> chosen_by(metric.metrics.size(), 0);
    for (std::size_t i = 0; i < metric.metrics.size(); ++i) {
      for (MetricKind chosen : stats.metric) {
        chosen_by[i] += chosen == metric.metrics[i].kind;
      }
    }
    const std::size_t index =
        follows ? std::max_element(chosen_by.begin(), chosen_by.end()) -
                      chosen_by.begin()
                : 0;
    EXPECT_NE(metric.metrics[index].kind == MetricKind::kEuclidean, follows);
    ASSERT_EQ(stats.base_metric, metric.metrics[index].kind);
    const MetricTransform& transform = metric.in_use[index];
    ExpectBaseVariances(*model, queries,
                        BatchRandomBase(*model, transform, stream), transform);
  }
}

// A random-feature base follows a curved trend the linear base cannot:
// on y_2 = x_3^2 / 20 (x_3 in [-10, 10]) learned from a thousand samples,
// k-NN over its residuals predicts unseen samples with a fraction of the
// linear base's error.
TEST(ModelTest, ARandomFeatureBaseFollowsACurveTheLinearBaseCannot) {
  const Stream stream = MakeStream(1000, 23);
  const Stream held_out = MakeStream(300, 24);
  std::vector<double> error(2, 0.0);
  for (const bool random_features : {false, true}) {
    ModelConfig config = BaseConfig();
    config.metric = MetricKind::kEuclidean;
    config.regressor = RegressorKind::kNearest;
    config.k_grid = {8};
    config.random_feature_base = random_features;
    auto model = MakeModel(config);
    LearnAll(*model, stream, 0, stream.size());
    for (std::size_t q = 0; q < held_out.size(); ++q) {
      const Prediction prediction = *model->Predict(held_out.input(q));
      const double e = prediction.value[1] - held_out.sample(q).y[1];
      error[random_features] += e * e;
      // Only the random-feature base reports a variance.
      EXPECT_EQ(prediction.base_variance.size(), random_features ? 2u : 0u);
    }
  }
  EXPECT_LT(error[1], 0.5 * error[0])
      << "linear base " << error[0] << ", random-feature base " << error[1];
}

TEST(ModelTest, LocalLinearAndTheLinearBaseFollowTheSlopeBeyondTheData) {
  // y = 3 x_0 - x_1 (+ noise): learned where x_0 < 0, asked where x_0 is in
  // [0, 0.5]. A local average flattens at the edge of the data; a local
  // linear fit, or a local average of a linear base's residuals, continues
  // the slope.
  std::mt19937_64 random(21);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto sample = [&](double x0) {
    const double x1 = uniform(random), x2 = uniform(random);
    return std::vector<double>{x0, x1, x2, 3 * x0 - x1 + 0.05 * uniform(random),
                               x2};
  };
  std::vector<std::vector<double>> train, test;
  for (int s = 0; s < 1500; ++s) train.push_back(sample(uniform(random) - 1));
  for (int s = 0; s < 200; ++s)
    test.push_back(sample(0.25 * uniform(random) + 0.25));
  // k-NN; local linear; k-NN on a linear base.
  const std::pair<RegressorKind, bool> configs[] = {
      {RegressorKind::kNearest, false},
      {RegressorKind::kLocalLinear, false},
      {RegressorKind::kNearest, true}};
  double rmse[3] = {0.0, 0.0, 0.0};
  for (int c = 0; c < 3; ++c) {
    ModelConfig config = BaseConfig();
    config.metric = MetricKind::kEuclidean;
    config.regressor = configs[c].first;
    config.linear_base = configs[c].second;
    auto model = MakeModel(config);
    for (const std::vector<double>& row : train) {
      const Sample s{{row.data(), 3}, {row.data() + 3, 2}, 0};
      ASSERT_TRUE(model->Learn({&s, 1}).ok());
    }
    for (const std::vector<double>& row : test) {
      const Prediction p = *model->Predict({row.data(), 3});
      const double error = p.value[0] - row[3];
      rmse[c] += error * error / 200;
    }
    rmse[c] = std::sqrt(rmse[c]);
  }
  EXPECT_GT(rmse[0], 0.3);
  EXPECT_LT(rmse[1], 0.1);
  EXPECT_LT(rmse[2], 0.1);
}

// Held-out mean squared error per target of a model of `config` learned on
// the first 2,000 samples of `stream` and asked the next 500.
std::vector<double> HeldOutErrors(const ModelConfig& config,
                                  const Stream& stream, ModelStats* stats) {
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, 2000);
  std::vector<double> errors(kTargets, 0.0);
  for (std::size_t s = 2000; s < 2500; ++s) {
    const Prediction p = *model->Predict(stream.input(s));
    for (std::size_t t = 0; t < kTargets; ++t) {
      const double error = p.value[t] - stream.y[s * kTargets + t];
      errors[t] += error * error / 500;
    }
  }
  *stats = model->stats();
  return errors;
}

TEST(ModelTest, AutoPredictsEachTargetAboutAsWellAsTheBetterRegressor) {
  // MakeStream's targets: sin(2 x_1) + x_2 / 2 (smooth: local linear's
  // slope helps) and 0.05 x_3^2 + noise; without a base, so that the
  // regressors differ the most.
  const Stream stream = MakeStream(2500, 31);
  ModelConfig config = BaseConfig();
  config.linear_base = false;
  ModelStats stats;
  config.regressor = RegressorKind::kNearest;
  const std::vector<double> nearest = HeldOutErrors(config, stream, &stats);
  config.regressor = RegressorKind::kLocalLinear;
  const std::vector<double> local_linear =
      HeldOutErrors(config, stream, &stats);
  config.regressor = RegressorKind::kAuto;
  const std::vector<double> automatic = HeldOutErrors(config, stream, &stats);
  for (std::size_t t = 0; t < kTargets; ++t) {
    SCOPED_TRACE(
        ::testing::Message()
        << "target " << t << ": k-NN " << nearest[t] << ", local linear "
        << local_linear[t] << ", auto " << automatic[t] << " with "
        << RegressorKindName(stats.regressor[t]) << " k " << stats.k[t]);
    EXPECT_LE(automatic[t], 1.1 * std::min(nearest[t], local_linear[t]));
    EXPECT_NE(stats.regressor[t], RegressorKind::kAuto);
  }
  // The smooth target is local linear's.
  EXPECT_EQ(stats.regressor[0], RegressorKind::kLocalLinear);
  // A target that is pure noise is k-NN's: at the same k, a local mean has
  // less variance than a local plane's intercept.
  Stream noisy = stream;
  std::mt19937_64 random(32);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::size_t s = 0; s < noisy.size(); ++s) {
    noisy.y[s * kTargets + 1] = uniform(random);
  }
  const std::vector<double> noise = HeldOutErrors(config, noisy, &stats);
  EXPECT_EQ(stats.regressor[0], RegressorKind::kLocalLinear);
  EXPECT_EQ(stats.regressor[1], RegressorKind::kNearest);
  // No worse than predicting the mean (variance 1/3) by more than chance.
  EXPECT_LT(noise[1], 0.36);
}

TEST(ModelTest, AutoMetricPredictsEachTargetAboutAsWellAsTheBetterMetric) {
  // MakeStream's first target depends on x_1 and x_2, the second on x_3:
  // the shared metrics weigh all three, each target in its own way.
  const Stream stream = MakeStream(2500, 33);
  ModelConfig config = BaseConfig();
  config.regressor = RegressorKind::kNearest;
  ModelStats stats;
  std::vector<std::vector<double>> fixed;
  const MetricKind metrics[] = {
      MetricKind::kEuclidean, MetricKind::kGradientWeights, MetricKind::kEgop};
  for (MetricKind metric : metrics) {
    config.metric = metric;
    fixed.push_back(HeldOutErrors(config, stream, &stats));
  }
  config.metric = MetricKind::kAuto;
  const std::vector<double> automatic = HeldOutErrors(config, stream, &stats);
  for (std::size_t t = 0; t < kTargets; ++t) {
    SCOPED_TRACE(::testing::Message()
                 << "target " << t << ": Euclidean " << fixed[0][t] << ", GW "
                 << fixed[1][t] << ", EGOP " << fixed[2][t] << ", auto "
                 << automatic[t] << " in " << MetricKindName(stats.metric[t]));
    const double best = std::min({fixed[0][t], fixed[1][t], fixed[2][t]});
    EXPECT_LE(automatic[t], 1.1 * best);
    EXPECT_NE(stats.metric[t], MetricKind::kAuto);
  }
  // The choice matters: on the second target the standardized Euclidean
  // metric's error is about three times the EGOP's.
  EXPECT_LT(automatic[1], 0.5 * fixed[0][1]);
}

// A stream that repeats each sample four times in a row (a fast sensor's
// near copies, made exact): x uniform in [-1, 1], y = sin(3x) + noise, one
// input and one target.
struct RepeatingStream {
  std::vector<double> x, y;
};
RepeatingStream MakeRepeatingStream(std::size_t distinct, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  RepeatingStream s;
  for (std::size_t i = 0; i < distinct; ++i) {
    const double x = uniform(random);
    const double y = std::sin(3 * x) + 0.3 * uniform(random);
    for (int copy = 0; copy < 4; ++copy) {
      s.x.push_back(x);
      s.y.push_back(y);
    }
  }
  return s;
}

ModelConfig RepeatingStreamConfig(std::vector<std::size_t> k_grid,
                                  std::size_t honest_lag) {
  ModelConfig config;
  config.input_dim = 1;
  config.target_names = {"y"};
  config.metric = MetricKind::kEuclidean;
  config.regressor = RegressorKind::kNearest;
  config.k_grid = std::move(k_grid);
  config.honest_lag = honest_lag;
  // Exact nearest targets, not residuals.
  config.linear_base = false;
  return config;
}

ModelStats LearnRepeatingStream(const ModelConfig& config,
                                const RepeatingStream& stream) {
  auto model = MakeModel(config);
  for (std::size_t s = 0; s < stream.y.size(); ++s) {
    const Sample sample{{&stream.x[s], 1}, {&stream.y[s], 1}, s};
    EXPECT_TRUE(model->Learn({&sample, 1}).ok());
  }
  return model->stats();
}

// The y of the sample nearest sample t among samples 0 .. end-1 of `stream`,
// or with none, the mean of the y before t (sum / t; 0 for t = 0).
double NearestBefore(const RepeatingStream& stream, std::size_t end,
                     std::size_t t, double sum) {
  if (end == 0) return t == 0 ? 0.0 : sum / static_cast<double>(t);
  std::size_t best = 0;
  for (std::size_t j = 1; j < end; ++j) {
    if (std::abs(stream.x[j] - stream.x[t]) <
        std::abs(stream.x[best] - stream.x[t])) {
      best = j;
    }
  }
  return stream.y[best];
}

TEST(ModelTest, TheHonestErrorLeavesOutTheRecentSamples) {
  // With k = 1 and a lag of 3, the honest prediction of sample t leaves out
  // the last min(3, t / 10) samples (the lag grows with the stream): from
  // t = 30 on it is the nearest of samples 0 .. t-4 (in one dimension the
  // standardization keeps the order of distances), the prequential one the
  // nearest of 0 .. t-1; both fall back to the running mean of y. Both
  // errors are recomputed here by brute force and scored like the model
  // scores them.
  const RepeatingStream stream = MakeRepeatingStream(400, 11);
  const ModelConfig config = RepeatingStreamConfig({1}, 3);
  const ModelStats stats = LearnRepeatingStream(config, stream);
  PrequentialScore prequential(1, config.selection_forgetting);
  PrequentialScore honest(1, config.selection_forgetting);
  double sum = 0.0;
  for (std::size_t t = 0; t < stream.y.size(); ++t) {
    const double plain = NearestBefore(stream, t, t, sum);
    const double left_out =
        NearestBefore(stream, t - std::min<std::size_t>(3, t / 10), t, sum);
    prequential.Add({&plain, 1}, {&stream.y[t], 1});
    honest.Add({&left_out, 1}, {&stream.y[t], 1});
    sum += stream.y[t];
  }
  EXPECT_EQ(stats.honest_lag, 3u);
  EXPECT_NEAR(stats.prequential_mse[0], prequential.MeanSquaredError(0), 1e-12);
  EXPECT_NEAR(stats.honest_mse[0], honest.MeanSquaredError(0), 1e-12);
  // Three samples in four are copies of one just before: the prequential
  // figure flatters the model; the honest one does not.
  EXPECT_LT(stats.prequential_nmse[0], 0.5 * stats.honest_nmse[0]);
}

TEST(ModelTest, QueriesIntervalsAreCalibratedWithoutTheIntervalLag) {
  // With k = 1, an honest lag of 3 and an interval lag of 20, the queries'
  // calibration scores sample t on the nearest of samples
  // 0 .. t-1-min(20, t/4) (a query's prediction without them; the honest
  // one while both lags are equal), over the RMS of the honest errors
  // before it. Rebuilt here by brute force, with the honest lag's
  // calibration beside it: the model's counts and half width must be the
  // interval lag's, and differ from the honest lag's.
  const RepeatingStream stream = MakeRepeatingStream(400, 11);
  ModelConfig config = RepeatingStreamConfig({1}, 3);
  config.interval_lag = 20;
  ASSERT_EQ(config.interval_lag_divisor, 4u);  // the default
  const ModelStats stats = LearnRepeatingStream(config, stream);
  PrequentialScore honest(1, config.selection_forgetting);
  const AdaptiveConformal::Options options = {.level = config.interval_level,
                                              .window = config.interval_window,
                                              .step = config.interval_step};
  AdaptiveConformal lagged(1, options);
  AdaptiveConformal honest_calibration(1, options);
  double sum = 0.0;
  const auto scale = [&honest] {
    const double rms = std::sqrt(honest.MeanSquaredError(0));
    return rms > 0.0 ? rms : 1.0;
  };
  for (std::size_t t = 0; t < stream.y.size(); ++t) {
    const double y = stream.y[t];
    const double query = NearestBefore(
        stream, t - std::min<std::size_t>(20, t / config.interval_lag_divisor),
        t, sum);
    const double left_out =
        NearestBefore(stream, t - std::min<std::size_t>(3, t / 10), t, sum);
    lagged.Add(0, std::abs(y - query) / scale());
    honest_calibration.Add(0, std::abs(y - left_out) / scale());
    honest.Add({&left_out, 1}, {&y, 1});
    sum += y;
  }
  EXPECT_EQ(stats.honest_lag, 3u);
  EXPECT_EQ(stats.interval_lag, 20u);
  EXPECT_NEAR(stats.honest_mse[0], honest.MeanSquaredError(0), 1e-12);
  EXPECT_EQ(stats.interval_scored[0], lagged.scored(0));
  EXPECT_EQ(stats.interval_covered[0], lagged.covered(0));
  const double half_width = lagged.Multiplier(0) * scale();
  EXPECT_NEAR(stats.interval_half_width[0], half_width, 1e-9 * half_width);
  // The honest lag's calibration is another: this one is not it.
  const double honest_half_width = honest_calibration.Multiplier(0) * scale();
  EXPECT_GT(std::abs(half_width - honest_half_width), 1e-3 * half_width);
}

// `n` samples of y = sin(3x) + noise at distinct x, in no order.
RepeatingStream DistinctStream(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  RepeatingStream s;
  for (std::size_t i = 0; i < n; ++i) {
    s.x.push_back(uniform(random));
    s.y.push_back(std::sin(3 * s.x.back()) + 0.3 * uniform(random));
  }
  return s;
}

TEST(ModelTest, AYoungModelsIntervalsAreCalibratedOnItsLeaveOneOutErrors) {
  // With k = 1 and a recalibration fast enough that each pass rescores
  // every stored sample before the next one is learned, a model of n
  // samples in no order keeps the scores of the pass made before sample n:
  // each of samples 0 .. n-2 predicted by the nearest of the others among
  // them (leave-one-out), and sample n-1's streamed one, the nearest of
  // all before it (nothing left out, as the passes found the samples
  // exchangeable); all over the honest errors' RMS after n-1 samples.
  // Rebuilt here by brute force: the half width is their conformal
  // quantile at alpha (restarted by the replacement) times the scale now.
  const RepeatingStream stream = DistinctStream(300, 5);
  ModelConfig config = RepeatingStreamConfig({1}, 3);
  config.interval_recalibration = 1024;
  const ModelStats stats = LearnRepeatingStream(config, stream);
  const std::size_t n = stream.y.size();
  PrequentialScore honest(1, config.selection_forgetting);
  double sum = 0.0;
  const auto scale = [&honest] {
    const double rms = std::sqrt(honest.MeanSquaredError(0));
    return rms > 0.0 ? rms : 1.0;
  };
  // The nearest of samples 0 .. end-1 to x, but `skip`.
  const auto nearest = [&stream](double x, std::size_t end, std::size_t skip) {
    std::size_t best = end;
    for (std::size_t j = 0; j < end; ++j) {
      if (j != skip && (best == end || std::abs(stream.x[j] - x) <
                                           std::abs(stream.x[best] - x))) {
        best = j;
      }
    }
    return stream.y[best];
  };
  for (std::size_t t = 0; t + 1 < n; ++t) {
    const double left_out =
        NearestBefore(stream, t - std::min<std::size_t>(3, t / 10), t, sum);
    honest.Add({&left_out, 1}, {&stream.y[t], 1});
    sum += stream.y[t];
  }
  AdaptiveConformal expected(1, {.level = config.interval_level,
                                 .window = config.interval_window,
                                 .step = 0.0});
  for (std::size_t j = 0; j + 1 < n; ++j) {
    expected.Add(
        0, std::abs(stream.y[j] - nearest(stream.x[j], n - 1, j)) / scale());
  }
  expected.Add(
      0,
      std::abs(stream.y[n - 1] - nearest(stream.x[n - 1], n - 1, n)) / scale());
  const double last = NearestBefore(
      stream, n - 1 - std::min<std::size_t>(3, (n - 1) / 10), n - 1, sum);
  honest.Add({&last, 1}, {&stream.y[n - 1], 1});
  EXPECT_TRUE(stats.interval_recalibrated);
  EXPECT_GT(stats.interval_recalibration_passes, n / 2);
  EXPECT_NEAR(stats.honest_mse[0], honest.MeanSquaredError(0), 1e-12);
  const double half_width = expected.Multiplier(0) * scale();
  EXPECT_NEAR(stats.interval_half_width[0], half_width, 1e-9 * half_width);
  // The streamed scores alone give other intervals: this is not them.
  config.interval_recalibration = 0;
  const ModelStats streamed = LearnRepeatingStream(config, stream);
  EXPECT_FALSE(streamed.interval_recalibrated);
  EXPECT_EQ(streamed.interval_recalibration_passes, 0u);
  EXPECT_GT(std::abs(streamed.interval_half_width[0] - half_width),
            1e-3 * half_width);
}

TEST(ModelTest, ASeriesInTimeKeepsItsStreamedScores) {
  // Each x four times in a row: a sample's nearest neighbours are its
  // copies just before. Their ages say a series within a few dozen
  // samples, and from then on no pass runs: nothing is replaced, and the
  // intervals are those of a model that never recalibrates. (Without an
  // honest lag, so that the errors do not say it first.)
  const RepeatingStream stream = MakeRepeatingStream(150, 3);
  ModelConfig config = RepeatingStreamConfig({1, 2}, 0);
  config.interval_lag = 100;
  config.interval_recalibration = 1024;
  const ModelStats recalibrating = LearnRepeatingStream(config, stream);
  config.interval_recalibration = 0;
  const ModelStats streamed = LearnRepeatingStream(config, stream);
  EXPECT_GT(recalibrating.interval_recalibration_passes, 0u);
  EXPECT_LE(recalibrating.interval_recalibration_passes, 20u);
  EXPECT_FALSE(recalibrating.interval_recalibrated);
  EXPECT_EQ(recalibrating.interval_half_width, streamed.interval_half_width);
  EXPECT_EQ(recalibrating.interval_covered, streamed.interval_covered);
  // With the honest lag, the errors say it before any pass.
  config.honest_lag = 3;
  config.interval_recalibration = 1024;
  EXPECT_LE(LearnRepeatingStream(config, stream).interval_recalibration_passes,
            1u);
}

TEST(ModelTest, AnIntervalLagNoLongerThanTheHonestLagChangesNothing) {
  // interval_lag <= honest_lag: the honest predictions calibrate, as
  // without it (EffectiveIntervalLag 0).
  const RepeatingStream stream = MakeRepeatingStream(300, 13);
  ModelConfig config = RepeatingStreamConfig({1, 2, 4}, 10);
  config.interval_lag = 0;
  const ModelStats without = LearnRepeatingStream(config, stream);
  config.interval_lag = 10;
  const ModelStats with = LearnRepeatingStream(config, stream);
  EXPECT_EQ(with.interval_lag, 0u);
  EXPECT_EQ(with.interval_covered, without.interval_covered);
  EXPECT_EQ(with.interval_half_width, without.interval_half_width);
}

TEST(ModelTest, WithoutALagTheHonestErrorIsThePrequentialOne) {
  // With honest_lag 0 nothing is left out: the honest prediction (read from
  // the grid's values at each target's choice) and the prediction made
  // before learning (fitted again at that choice) are the same numbers, for
  // every regressor.
  const Stream stream = MakeStream(600, 21);
  for (RegressorKind regressor :
       {RegressorKind::kNearest, RegressorKind::kKernel,
        RegressorKind::kLocalLinear, RegressorKind::kAuto}) {
    SCOPED_TRACE(RegressorKindName(regressor));
    ModelConfig config = BaseConfig();
    config.regressor = regressor;
    config.honest_lag = 0;
    auto model = MakeModel(config);
    LearnAll(*model, stream, 0, stream.size());
    const ModelStats stats = model->stats();
    ASSERT_EQ(stats.honest_mse.size(), kTargets);
    for (std::size_t t = 0; t < kTargets; ++t) {
      EXPECT_GT(stats.honest_mse[t], 0.0);
      EXPECT_NEAR(stats.honest_mse[t], stats.prequential_mse[t],
                  1e-9 * stats.prequential_mse[t]);
    }
  }
}

TEST(ModelTest, PerTargetBasePredictsEachTargetAsTheModelItChose) {
  // Target 0 is linear (the base fits it exactly), target 1 a step with
  // plateaus. With per_target_base each target predicts like the model
  // with the base or like the model without it, whichever it chose by the
  // honest error: the same neighbours, grid scores and choices (Euclidean,
  // every grid value scored on every sample), so the same numbers.
  using Rows = SampleRows<kDim, kTargets>;
  Rows stream;
  std::mt19937_64 random(31);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::size_t i = 0; i < 1500; ++i) {
    const double a = uniform(random), b = uniform(random), c = uniform(random);
    stream.x.insert(stream.x.end(), {a, b, c});
    stream.y.push_back(4 * a + 3 * b - 2 * c);
    stream.y.push_back(std::tanh(20 * a) + 0.05 * uniform(random));
  }
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEuclidean;
  config.full_grid_below = 1 << 20;
  ModelConfig without = config;
  without.linear_base = false;
  ModelConfig chosen = config;
  chosen.per_target_base = true;
  const auto with_base_model = LearnedModel(config, stream, 1200);
  const auto without_model = LearnedModel(without, stream, 1200);
  const auto per_target = LearnedModel(chosen, stream, 1200);
  const ModelStats stats = per_target->stats();
  ASSERT_EQ(stats.uses_base.size(), kTargets);
  // The base fits the linear target exactly: the residuals are zero.
  EXPECT_TRUE(stats.uses_base[0]);
  EXPECT_LT(stats.honest_nmse[0], 1e-4);
  EXPECT_GT(without_model->stats().honest_nmse[0], 1e-3);
  for (std::size_t q = 1200; q < 1500; ++q) {
    const Prediction got = *per_target->Predict(stream.input(q));
    const Prediction with = *with_base_model->Predict(stream.input(q));
    const Prediction raw = *without_model->Predict(stream.input(q));
    for (std::size_t t = 0; t < kTargets; ++t) {
      const Prediction& expected = stats.uses_base[t] ? with : raw;
      EXPECT_NEAR(got.value[t], expected.value[t], 1e-9)
          << "query " << q << ", target " << t;
      EXPECT_EQ(got.neighbors[t], expected.neighbors[t]);
    }
  }
  // Each target's honest error is its chosen model's.
  for (std::size_t t = 0; t < kTargets; ++t) {
    const ModelStats expected =
        stats.uses_base[t] ? with_base_model->stats() : without_model->stats();
    EXPECT_EQ(stats.k[t], expected.k[t]) << "target " << t;
  }
  // It needs a base to choose.
  chosen.linear_base = false;
  EXPECT_EQ(Model::Create(chosen).status().message(),
            "per_target_base: needs linear_base (the choice is between the "
            "base and no base)");
}

TEST(ModelTest, TheHonestErrorChoosesK) {
  // On near copies the prequential error prefers k = 1 (it looks the copy
  // up); leaving the copies out shows that averaging 16 neighbours
  // predicts new inputs better.
  const RepeatingStream stream = MakeRepeatingStream(500, 12);
  EXPECT_EQ(LearnRepeatingStream(RepeatingStreamConfig({1, 16}, 0), stream).k,
            std::vector<std::uint32_t>{1});
  EXPECT_EQ(LearnRepeatingStream(RepeatingStreamConfig({1, 16}, 3), stream).k,
            std::vector<std::uint32_t>{16});
}

TEST(ModelTest, PerTargetMetricsPredictEachTargetInItsOwnIndex) {
  const Stream stream = MakeStream(1200, 4);
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kGradientWeights;
  config.per_target_metric = true;
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size());
  const MetricReport report = model->metric();
  ASSERT_EQ(report.metrics.size(), kTargets);
  ASSERT_TRUE(report.per_target);
  // Target 1 depends on x_1, x_2; target 2 on x_3 only.
  EXPECT_GT(report.metrics[0].weights[0], 3 * report.metrics[0].weights[2]);
  EXPECT_GT(report.metrics[1].weights[2], 3 * report.metrics[1].weights[0]);
  const Stream queries = MakeStream(20, 5);
  const std::optional<OnlineRidge> base = ReferenceBase(*model, stream);
  ASSERT_TRUE(base.has_value());  // the default
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Prediction got = *model->Predict(queries.input(q));
    for (std::size_t t = 0; t < kTargets; ++t) {
      const Prediction expected =
          Reference(*model, stream, FirstSlots(stream.size()), queries.input(q),
                    t, FitOf(&*base));
      ASSERT_EQ(got.neighbors[t], expected.neighbors[t]);
      if (expected.neighbors[t] > 0) {
        EXPECT_NEAR(got.value[t], expected.value[t], 1e-9);
      }
    }
  }
}

TEST(ModelTest, LearnReportsThePredictionMadeBeforeLearning) {
  const Stream stream = MakeStream(400, 6);
  for (bool linear_base : {false, true}) {
    SCOPED_TRACE(linear_base ? "with a linear base" : "");
    ModelConfig config = BaseConfig();
    config.metric = MetricKind::kEgop;
    config.linear_base = linear_base;
    auto learner = MakeModel(config);
    auto predictor = MakeModel(config);
    for (std::size_t s = 0; s < stream.size(); ++s) {
      const Sample sample = stream.sample(s);
      std::vector<Prediction> before;
      ASSERT_TRUE(learner->Learn({&sample, 1}, &before).ok());
      const Prediction expected = *predictor->Predict(sample.x);
      ASSERT_TRUE(predictor->Learn({&sample, 1}).ok());
      ASSERT_EQ(before.size(), 1u);
      EXPECT_EQ(before[0].value, expected.value) << "sample " << s;
      EXPECT_EQ(before[0].neighbors, expected.neighbors);
    }
    // The model's live quality figure reflects a learnable target.
    const ModelStats stats = learner->stats();
    EXPECT_LT(stats.prequential_nmse[0], 0.5);
    EXPECT_LT(stats.prequential_nmse[1], 0.5);
  }
}

TEST(ModelTest, WindowKeepsTheLastSamplesAndEvictsTheOldest) {
  const Stream stream = MakeStream(530, 7);
  // With a linear base too: it learns every sample, evicted or not.
  for (bool linear_base : {false, true}) {
    SCOPED_TRACE(linear_base ? "with a linear base" : "");
    ModelConfig config = BaseConfig();
    config.capacity = {CapacityPolicy::kWindow, 100};
    config.regressor = RegressorKind::kNearest;
    config.linear_base = linear_base;
    auto model = MakeModel(config);
    LearnAll(*model, stream, 0, stream.size());
    const ModelStats stats = model->stats();
    EXPECT_EQ(stats.samples_seen, 530u);
    EXPECT_EQ(stats.samples_stored, 100u);
    // Slot s holds the newest sample with index = s (mod 100).
    std::vector<std::size_t> slots(100);
    for (std::size_t s = 430; s < 530; ++s) slots[s % 100] = s;
    ExpectMatchesReference(*model, stream, slots, MakeStream(30, 8));
  }
}

TEST(ModelTest, ReservoirKeepsAUniformSampleOfTheStream) {
  // Over many seeds, every position of the stream is kept with probability
  // limit / n.
  const Stream stream = MakeStream(200, 9);
  std::vector<double> kept_early(1, 0.0), kept_late(1, 0.0);
  constexpr int kSeeds = 200;
  double mean_first_half = 0.0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    SampleStore store(kDim, kTargets, {CapacityPolicy::kReservoir, 50}, seed);
    std::vector<std::size_t> position(50);
    for (std::size_t s = 0; s < 200; ++s) {
      const SampleStore::Placement p = store.Place();
      if (p.keep) position[p.slot] = s;
    }
    for (std::size_t s : position) mean_first_half += s < 100 ? 1.0 : 0.0;
  }
  // Half of the kept samples come from each half of the stream.
  EXPECT_NEAR(mean_first_half / (kSeeds * 50), 0.5, 0.03);
  ModelConfig config = BaseConfig();
  config.capacity = {CapacityPolicy::kReservoir, 50};
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size());
  EXPECT_EQ(model->stats().samples_stored, 50u);
  EXPECT_EQ(model->stats().samples_seen, 200u);
}

TEST(ModelTest, RefitIsThePapersBatchEstimator) {
  const Stream stream = MakeStream(1500, 10);
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEgop;
  // Growth refreshes estimate at 64 samples at most; Refit at all of them.
  config.metric_refresh_samples = 64;
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size());
  std::size_t calls = 0, last_done = 0;
  ASSERT_TRUE(model
                  ->Refit([&](std::size_t done, std::size_t total) {
                    EXPECT_EQ(total, stream.size());
                    EXPECT_GE(done, last_done);
                    last_done = done;
                    ++calls;
                  })
                  .ok());
  EXPECT_GT(calls, 10u);
  EXPECT_EQ(last_done, stream.size());

  // The batch estimate computed here: standardize, index, estimate at
  // every sample from all samples, same h and t.
  const std::size_t n = stream.size();
  std::vector<double> mean(kDim, 0.0), sd(kDim, 0.0);
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < kDim; ++i)
      mean[i] += stream.x[s * kDim + i] / n;
  }
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < kDim; ++i) {
      const double d = stream.x[s * kDim + i] - mean[i];
      sd[i] += d * d / n;
    }
  }
  for (double& v : sd) v = std::sqrt(v);
  std::vector<double> z(stream.x.size());
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < kDim; ++i) {
      z[s * kDim + i] = (stream.x[s * kDim + i] - mean[i]) / sd[i];
    }
  }
  std::vector<std::uint64_t> ids(n);
  for (std::size_t s = 0; s < n; ++s) ids[s] = s;
  const CoverTree tree = *CoverTree::Build(kDim, z, ids);
  const double h = model->stats().gradient_bandwidth;
  GradientStatistics expected(kDim, kTargets, true);
  AddBatchGradients(
      tree, ids,
      [&](std::uint64_t id) { return stream.y.data() + id * kTargets; },
      config.kernel, h, h / 2, config.gradient_estimator, &expected);
  const MetricReport report = model->metric();
  ASSERT_EQ(report.gradient_samples, static_cast<double>(n));
  std::vector<double> scales(kTargets);
  for (std::size_t t = 0; t < kTargets; ++t) {
    double m = 0.0, v = 0.0;
    for (std::size_t s = 0; s < n; ++s) m += stream.y[s * kTargets + t] / n;
    for (std::size_t s = 0; s < n; ++s) {
      const double d = stream.y[s * kTargets + t] - m;
      v += d * d / n;
    }
    scales[t] = std::sqrt(v);
  }
  const LearnedMetric batch =
      EstimateMetric(MetricKind::kEgop, expected, kAllTargets, scales);
  for (std::size_t k = 0; k < kDim * kDim; ++k) {
    EXPECT_NEAR(report.metrics[0].matrix[k], batch.matrix[k],
                1e-8 * std::abs(batch.matrix[k]) + 1e-12);
  }
  // And the index now uses the refitted metric.
  EXPECT_LT(report.in_use[0].RelativeChange(TransformFor(
                batch, {mean.begin(), mean.end()}, sd, config.egop_ridge)),
            1e-6);
}

TEST(ModelTest, IsDeterministicForASeedAndSampleOrder) {
  const Stream stream = MakeStream(3000, 11);
  const Stream queries = MakeStream(50, 12);
  ModelConfig config = BaseConfig();
  config.metric = MetricKind::kEgop;
  config.capacity = {CapacityPolicy::kReservoir, 1500};
  config.seed = 99;
  // A short lag, so thread timing would show if it could change results.
  config.small_store_below = 64;
  config.rebuild_lag = 40;
  config.drift_check_every = 16;
  auto first = MakeModel(config);
  auto second = MakeModel(config);
  LearnAll(*first, stream, 0, stream.size(), 1);
  LearnAll(*second, stream, 0, stream.size(), 250);
  EXPECT_GT(first->stats().index_rebuilds, 3u);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Prediction a = *first->Predict(queries.input(q));
    const Prediction b = *second->Predict(queries.input(q));
    EXPECT_EQ(a.value, b.value);
    EXPECT_EQ(a.spread, b.spread);
    EXPECT_EQ(a.neighbors, b.neighbors);
  }
  const ModelStats a = first->stats(), b = second->stats();
  EXPECT_EQ(a.prequential_mse, b.prequential_mse);
  EXPECT_EQ(a.bandwidth, b.bandwidth);
  EXPECT_EQ(first->metric().metrics[0].matrix,
            second->metric().metrics[0].matrix);
  // Another seed keeps another reservoir.
  config.seed = 100;
  auto third = MakeModel(config);
  LearnAll(*third, stream, 0, stream.size());
  EXPECT_NE(third->stats().prequential_mse, a.prequential_mse);
}

// A model of `metric` with every kind of background work (growth
// refreshes of the metric, the random-feature base's rebuilds, index
// rebuilds) starting often and taking over soon after it starts.
ModelConfig EveryKindOfWork(MetricKind metric) {
  ModelConfig config = BusyConfig(BaseConfig());
  config.metric = metric;
  config.random_feature_base = true;
  config.random_feature_frequencies = 16;
  return config;
}

// A learner that stops where a take-over's background work is not done
// (LearnUntilWait) and comes back once it is learns exactly what Learn
// does: every kind of background work (growth refreshes of the gradient
// sums and the MLKR maps, the random-feature base, index rebuilds) taking
// over soon after it starts, so the stops are met. At each stop the
// background work is prioritized (what a read parked behind the learner
// asks for), which changes when the MLKR fits end, not what they give.
TEST(ModelTest, LearningUntilEachWaitLearnsWhatLearningThroughDoes) {
  const Stream stream = MakeStream(2500, 31);
  const Stream queries = MakeStream(40, 32);
  for (MetricKind metric : {MetricKind::kEgop, MetricKind::kMlkr}) {
    SCOPED_TRACE(std::string(MetricKindName(metric)));
    const ModelConfig config = EveryKindOfWork(metric);
    auto through = MakeModel(config);
    auto stopping = MakeModel(config);
    LearnAll(*through, stream, 0, stream.size(), 100);
    std::size_t stops = 0;
    std::vector<Sample> rest = Slice(stream, 0, stream.size());
    while (!rest.empty()) {
      absl::StatusOr<ValidatedSamples> batch = stopping->Validate(rest);
      ASSERT_TRUE(batch.ok()) << batch.status();
      absl::StatusOr<Model::PartLearned> part =
          stopping->LearnUntilWait(*batch);
      ASSERT_TRUE(part.ok()) << part.status();
      rest.erase(rest.begin(), rest.begin() + part->learned);
      if (part->resume_when == nullptr) {
        EXPECT_TRUE(rest.empty());
        break;
      }
      ++stops;
      EXPECT_TRUE(part->waits_for_background_work);  // no time slice
      stopping->PrioritizeBackgroundWork();
      while (!part->resume_when()) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    // Recorded, not asserted (timing): 12 (EGOP) and 14 (MLKR) stops here.
    ::testing::Test::RecordProperty(
        absl::StrCat("stops_", MetricKindName(metric)), stops);
    const ModelStats a = through->stats(), b = stopping->stats();
    EXPECT_EQ(a.samples_seen, b.samples_seen);
    EXPECT_EQ(a.prequential_mse, b.prequential_mse);
    EXPECT_EQ(a.metric_refreshes, b.metric_refreshes);
    EXPECT_EQ(a.index_rebuilds, b.index_rebuilds);
    EXPECT_EQ(a.base_rebuilds, b.base_rebuilds);
    EXPECT_EQ(a.fits_prioritized + a.fit_priority_refused, 0u);
    if (metric == MetricKind::kMlkr) {
      // Some stop waited for a fit (a lowered thread: one of the stops).
      EXPECT_GE(b.fits_prioritized + b.fit_priority_refused, 1u);
      EXPECT_EQ(b.fit_priority_refused > 0, !LoweredThreadsCanBeRaised());
    }
    ExpectSamePredictions(PredictAll(*through, queries),
                          PredictAll(*stopping, queries));
  }
}

// An unbounded store only appends, so its indexes (and metric refreshes)
// reference the stored rows where the transform is diagonal instead of
// keeping mapped copies (here from the first sample on; by default from
// 2^18 samples on); a window larger than the stream holds the same
// samples in the same slots with copies. Same model bit for bit, in less
// memory: the coordinates are computed exactly as the copies were.
TEST(ModelTest, IndexesThatReferenceTheStoreAnswerAsCopiesWould) {
  const Stream stream = MakeStream(1500, 17);
  const Stream queries = MakeStream(60, 18);
  for (MetricKind metric : {MetricKind::kGradientWeights, MetricKind::kEgop,
                            MetricKind::kEuclidean}) {
    SCOPED_TRACE(std::string(MetricKindName(metric)));
    ModelConfig config = BusyConfig(BaseConfig());
    config.metric = metric;
    config.reference_rows_from = 0;
    // A bounded store never recalibrates its queries' intervals: without
    // it the two differ in their indexes alone.
    config.interval_recalibration = 0;
    auto referencing = MakeModel(config);
    config.capacity = {CapacityPolicy::kWindow, stream.size() + 1};
    auto copying = MakeModel(config);
    LearnAll(*referencing, stream, 0, stream.size(), 1);
    LearnAll(*copying, stream, 0, stream.size(), 1);
    EXPECT_GT(referencing->stats().index_rebuilds, 3u);
    if (metric != MetricKind::kEuclidean) {
      EXPECT_GT(referencing->stats().metric_refreshes, 1u);
    }
    ExpectSameModel(*referencing, *copying, queries);
    EXPECT_LT(referencing->stats().memory_bytes, copying->stats().memory_bytes);
  }
}

// Predictions wait for the refresh schedule only where an index generation
// is replaced — a take-over, a pointer swap of a build already done — not
// at drift checks nor for metric refreshes, small store or large.
TEST(ModelTest, PredictionsWaitOnlyForTakeOvers) {
  const Stream stream = MakeStream(4000, 21);
  ModelConfig config = BaseConfig();
  config.small_store_below = 1000;
  config.rebuild_lag = 100;
  config.drift_check_every = 16;
  auto model = MakeModel(config);
  LearnAll(*model, stream, 0, stream.size(), 1);
  const ModelStats stats = model->stats();
  EXPECT_GT(stats.index_rebuilds, 5u);
  EXPECT_GT(stats.metric_refreshes, 5u);
  // At most one window per rebuild that took over (indexes taking over at
  // the same sample share one); 250 drift checks opened none.
  EXPECT_GT(stats.settle_windows, 0u);
  EXPECT_LE(stats.settle_windows, stats.index_rebuilds);
  EXPECT_EQ(stats.prediction_waits, 0u);  // nobody predicted meanwhile
}

// A model's log under TakeOverRule::kLogged: batches of samples and
// take-over records, in order.
struct LogEntry {
  std::size_t begin = 0, end = 0;  // samples [begin, end), learned so,
  BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded;
  std::optional<TakeOverKey> record;  // or a record
};
using ModelLogEntries = std::vector<LogEntry>;

ModelConfig LoggedConfig(ModelConfig config) {
  config.take_over = TakeOverRule::kLogged;
  return config;
}

// Records every piece of background work running and unrecorded (done
// or not, if `done_only` is false) into `log` and applies each.
void RecordTakeOvers(Model& model, bool done_only, ModelLogEntries& log) {
  for (const UnrecordedWork& work : model.UnrecordedTakeOvers()) {
    if (done_only && !work.done) continue;
    EXPECT_TRUE(model.ApplyTakeOverRecord(work.key))
        << TakeOverKeyName(work.key);
    log.push_back({.begin = 0,
                   .end = 0,
                   .take_overs = BatchTakeOvers::kWhereRecorded,
                   .record = work.key});
  }
}

// What a model's host does: learns the stream in batches and, after each,
// appends a record of each piece of background work done by then (where it
// is depends on thread timing). Every `fixed_every`th batch (0: none) is
// learned at fixed counts (a bulk Ingest's among a Learn stream's).
// Returns the log it wrote.
ModelLogEntries LearnAndRecordWhatIsDone(Model& model, const Stream& stream,
                                         std::size_t batch_size,
                                         std::size_t fixed_every) {
  ModelLogEntries log;
  for (std::size_t s = 0, b = 1; s < stream.size(); s += batch_size, ++b) {
    const std::size_t end = std::min(stream.size(), s + batch_size);
    const BatchTakeOvers take_overs = fixed_every > 0 && b % fixed_every == 0
                                          ? BatchTakeOvers::kAtFixedCounts
                                          : BatchTakeOvers::kWhereRecorded;
    EXPECT_TRUE(model.Learn(Slice(stream, s, end), nullptr, take_overs).ok());
    log.push_back({.begin = s,
                   .end = end,
                   .take_overs = take_overs,
                   .record = std::nullopt});
    RecordTakeOvers(model, /*done_only=*/true, log);
  }
  return log;
}

// Applies a log in order, as recovery and a follower replica do.
void Replay(Model& model, const Stream& stream, const ModelLogEntries& log) {
  for (const LogEntry& entry : log) {
    if (entry.record.has_value()) {
      EXPECT_TRUE(model.ApplyTakeOverRecord(*entry.record))
          << TakeOverKeyName(*entry.record);
    } else {
      ASSERT_TRUE(model
                      .Learn(Slice(stream, entry.begin, entry.end), nullptr,
                             entry.take_overs)
                      .ok());
    }
  }
}

// Background work recorded as soon as it starts takes over at its fixed
// count, as under kFixedCount (the learner then waits there for work not
// done, as a replay waits for work its log recorded done elsewhere): the
// take-over is at the later of the record and the fixed count.
TEST(TakeOverRuleTest, WorkRecordedBeforeItsFixedCountTakesOverThere) {
  const Stream stream = MakeStream(2500, 61);
  const Stream queries = MakeStream(40, 62);
  for (MetricKind metric : {MetricKind::kEgop, MetricKind::kMlkr}) {
    SCOPED_TRACE(std::string(MetricKindName(metric)));
    const ModelConfig config = EveryKindOfWork(metric);
    auto fixed = MakeModel(config);
    auto logged = MakeModel(LoggedConfig(config));
    LearnAll(*fixed, stream, 0, stream.size(), 1);
    ModelLogEntries log;
    for (std::size_t s = 0; s < stream.size(); ++s) {
      RecordTakeOvers(*logged, /*done_only=*/false, log);
      ASSERT_TRUE(logged->Learn(Slice(stream, s, s + 1)).ok());
    }
    EXPECT_TRUE(fixed->UnrecordedTakeOvers().empty());  // none under it
    const ModelStats a = fixed->stats(), b = logged->stats();
    EXPECT_GT(a.index_rebuilds, 3u);
    EXPECT_GT(a.metric_refreshes, 1u);
    EXPECT_EQ(a.index_rebuilds, b.index_rebuilds);
    EXPECT_EQ(a.metric_refreshes, b.metric_refreshes);
    ExpectSameModel(*fixed, *logged, queries);
  }
}

// Under kLogged nothing takes over that the log has not recorded, and the
// learner never stops for it: a model learning on without records is
// never held up by background work (LearnUntilWait learns every sample).
TEST(TakeOverRuleTest, LearningNeverWaitsForWorkTheLogHasNotRecorded) {
  const Stream stream = MakeStream(2500, 63);
  auto model = MakeModel(LoggedConfig(EveryKindOfWork(MetricKind::kMlkr)));
  absl::StatusOr<ValidatedSamples> batch =
      model->Validate(Slice(stream, 0, stream.size()));
  ASSERT_TRUE(batch.ok()) << batch.status();
  absl::StatusOr<Model::PartLearned> part = model->LearnUntilWait(*batch);
  ASSERT_TRUE(part.ok()) << part.status();
  EXPECT_EQ(part->learned, stream.size());
  EXPECT_EQ(part->resume_when, nullptr);
  const ModelStats stats = model->stats();
  EXPECT_EQ(stats.index_rebuilds, 0u);
  EXPECT_EQ(stats.metric_refreshes, 0u);
  EXPECT_EQ(stats.base_rebuilds, 0u);
  EXPECT_EQ(stats.rebuild_waits, 0u);
  EXPECT_EQ(stats.refresh_waits, 0u);
  // The work waits for its records: the first MLKR fit, the first
  // prediction index's rebuild and the random-feature base's.
  std::vector<TakeOverKey::Work> waiting;
  for (const UnrecordedWork& work : model->UnrecordedTakeOvers()) {
    waiting.push_back(work.key.work);
  }
  EXPECT_THAT(waiting, ::testing::IsSupersetOf(
                           {TakeOverKey::Work::kMlkrFit,
                            TakeOverKey::Work::kPredictionIndexRebuild,
                            TakeOverKey::Work::kRandomFeatureRebuild}));
}

// A model that recorded its work as it was done (positions in the log
// that depend on thread timing) never waited for it, and a model that
// replays its log — recovery, a follower replica — is that model bit for
// bit, whatever its own threads' timing; so with some batches learned at
// fixed counts among them.
TEST(TakeOverRuleTest, ReplayingTheLogGivesTheModelThatWroteIt) {
  const Stream stream = MakeStream(3000, 65);
  const Stream queries = MakeStream(40, 66);
  for (MetricKind metric : {MetricKind::kGradientWeights, MetricKind::kMlkr}) {
    SCOPED_TRACE(std::string(MetricKindName(metric)));
    ModelConfig config = LoggedConfig(BusyConfig(BaseConfig()));
    config.metric = metric;
    for (std::size_t fixed_every : {std::size_t{0}, std::size_t{7}}) {
      SCOPED_TRACE(::testing::Message() << "fixed_every " << fixed_every);
      auto writer = MakeModel(config);
      const ModelLogEntries log =
          LearnAndRecordWhatIsDone(*writer, stream, 10, fixed_every);
      const ModelStats wrote = writer->stats();
      EXPECT_GT(wrote.index_rebuilds, 3u);
      // (The stream outruns the MLKR fits here: one or two take over.)
      EXPECT_GE(wrote.metric_refreshes, 1u);
      if (fixed_every == 0) {
        EXPECT_EQ(wrote.rebuild_waits, 0u);
        EXPECT_EQ(wrote.refresh_waits, 0u);
      }
      auto replayed = MakeModel(config);
      Replay(*replayed, stream, log);
      ExpectSameModel(*writer, *replayed, queries);
      EXPECT_EQ(replayed->stats().index_rebuilds, wrote.index_rebuilds);
      EXPECT_EQ(replayed->stats().metric_refreshes, wrote.metric_refreshes);
    }
  }
}

// A batch learned at fixed counts (a bulk Ingest's) takes its work over at
// the fixed counts, with no record, as under kFixedCount: a model of
// such batches alone is the model of kFixedCount, bit for bit.
TEST(TakeOverRuleTest, BatchesAtFixedCountsTakeOverAsTheFixedCountRule) {
  const Stream stream = MakeStream(2500, 69);
  const Stream queries = MakeStream(40, 70);
  for (MetricKind metric : {MetricKind::kEgop, MetricKind::kMlkr}) {
    SCOPED_TRACE(std::string(MetricKindName(metric)));
    const ModelConfig config = EveryKindOfWork(metric);
    auto fixed = MakeModel(config);
    auto logged = MakeModel(LoggedConfig(config));
    LearnAll(*fixed, stream, 0, stream.size(), 100);
    for (std::size_t s = 0; s < stream.size(); s += 100) {
      ASSERT_TRUE(logged
                      ->Learn(Slice(stream, s, s + 100), nullptr,
                              BatchTakeOvers::kAtFixedCounts)
                      .ok());
    }
    EXPECT_GT(fixed->stats().index_rebuilds, 3u);
    EXPECT_EQ(fixed->stats().index_rebuilds, logged->stats().index_rebuilds);
    EXPECT_EQ(fixed->stats().metric_refreshes,
              logged->stats().metric_refreshes);
    ExpectSameModel(*fixed, *logged, queries);
  }
}

// A record names one piece of work: one of work that is not running (a
// wrong earliest point, work already taken over) or recorded already
// changes nothing, and under kFixedCount no record is taken.
TEST(TakeOverRuleTest, ARecordOfNoWorkRunningChangesNothing) {
  const Stream stream = MakeStream(300, 67);
  const Stream queries = MakeStream(20, 68);
  ModelConfig config = LoggedConfig(BusyConfig(BaseConfig()));
  config.metric = MetricKind::kMlkr;
  auto model = MakeModel(config);
  auto untouched = MakeModel(config);
  LearnAll(*model, stream, 0, 200, 1);
  LearnAll(*untouched, stream, 0, 200, 1);
  std::vector<UnrecordedWork> running = model->UnrecordedTakeOvers();
  ASSERT_FALSE(running.empty());
  TakeOverKey other = running[0].key;
  ++other.earliest;
  EXPECT_FALSE(model->ApplyTakeOverRecord(other));
  other.earliest -= 2;
  EXPECT_FALSE(model->ApplyTakeOverRecord(other));
  EXPECT_FALSE(model->ApplyTakeOverRecord(
      {TakeOverKey::Work::kPredictionIndexRebuild, 7, 100}));
  LearnAll(*model, stream, 200, 300, 1);
  LearnAll(*untouched, stream, 200, 300, 1);
  ExpectSameModel(*model, *untouched, queries);
  // Recorded once, then again: the second changes nothing.
  running = model->UnrecordedTakeOvers();
  ASSERT_FALSE(running.empty());
  EXPECT_TRUE(model->ApplyTakeOverRecord(running[0].key));
  EXPECT_FALSE(model->ApplyTakeOverRecord(running[0].key));
  auto fixed = MakeModel(BusyConfig(BaseConfig()));
  LearnAll(*fixed, stream, 0, 300, 1);
  EXPECT_FALSE(fixed->ApplyTakeOverRecord(running[0].key));
}

}  // namespace
}  // namespace streamreg
