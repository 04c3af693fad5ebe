#ifndef STREAMREG_TESTS_SUPPORT_MODEL_TEST_SUPPORT_H_
#define STREAMREG_TESTS_SUPPORT_MODEL_TEST_SUPPORT_H_

// A synthetic stream and model helpers shared by the engine's tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"

namespace streamreg {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

// Samples of `Inputs` inputs and `Targets` targets, row after row; sample s
// has the id first_id + s.
template <std::size_t Inputs, std::size_t Targets, std::uint64_t first_id = 1>
struct SampleRows {
  std::vector<double> x, y;
  std::size_t size() const { return y.size() / Targets; }
  Sample sample(std::size_t s) const {
    return Sample{{x.data() + s * Inputs, Inputs},
                  {y.data() + s * Targets, Targets},
                  first_id + s};
  }
  std::span<const double> input(std::size_t s) const {
    return {x.data() + s * Inputs, Inputs};
  }
};

using Stream = SampleRows<kDim, kTargets, 1000>;

// y_1 = sin(2 x_1) + x_2 / 2, y_2 = 5 x_3^2 + noise; x_3 has a larger
// scale, so standardization matters.
inline Stream MakeStream(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = uniform(random), b = uniform(random),
                 c = 10.0 * uniform(random);
    s.x.insert(s.x.end(), {a, b, c});
    s.y.push_back(std::sin(2 * a) + b / 2);
    s.y.push_back(0.05 * c * c + 0.1 * uniform(random));
  }
  return s;
}

inline ModelConfig BaseConfig() {
  ModelConfig config;
  config.input_dim = kDim;
  config.target_names = {"first", "second"};
  return config;
}

inline std::unique_ptr<Model> MakeModel(const ModelConfig& config) {
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Samples [begin, end) of a stream, as one batch.
inline std::vector<Sample> Slice(const Stream& stream, std::size_t begin,
                                 std::size_t end) {
  std::vector<Sample> batch;
  for (std::size_t s = begin; s < end; ++s) batch.push_back(stream.sample(s));
  return batch;
}

// A model of `config` that has learned samples [0, n) of any stream (with
// sample(s)), in one batch.
template <class AnyStream>
std::unique_ptr<Model> LearnedModel(const ModelConfig& config,
                                    const AnyStream& stream, std::size_t n) {
  std::unique_ptr<Model> model = MakeModel(config);
  std::vector<Sample> batch;
  for (std::size_t i = 0; i < n; ++i) batch.push_back(stream.sample(i));
  EXPECT_TRUE(model->Learn(batch).ok());
  return model;
}

inline void LearnAll(Model& model, const Stream& stream, std::size_t begin,
                     std::size_t end, std::size_t batch_size = 37) {
  std::vector<Sample> batch;
  for (std::size_t s = begin; s < end; s += batch_size) {
    batch.clear();
    for (std::size_t i = s; i < std::min(end, s + batch_size); ++i) {
      batch.push_back(stream.sample(i));
    }
    ASSERT_TRUE(model.Learn(batch).ok());
  }
}

// Rebuilds (and metric refreshes) start often and take over soon after, so
// tests meet that work in progress; unbounded stores' trees reference the
// stored rows from the start.
inline ModelConfig BusyConfig(ModelConfig config) {
  config.reference_rows_from = 0;
  config.small_store_below = 64;
  config.rebuild_lag = 40;
  config.drift_check_every = 16;
  return config;
}

// One target over 21 inputs, local linear under MLKR, whose fits choose
// between the leading 8 coordinates and all of them at each k of `k_grid`
// (the config alone: its grid's layout, not a model).
inline ModelConfig LeadingCoordinatesConfig(std::vector<std::size_t> k_grid) {
  ModelConfig config;
  config.input_dim = 21;
  config.target_names = {"y"};
  config.regressor = RegressorKind::kLocalLinear;
  config.metric = MetricKind::kMlkr;
  config.local_linear_leading = 8;
  config.k_grid = std::move(k_grid);
  return config;
}

inline std::vector<Prediction> PredictAll(const Model& model,
                                          const Stream& queries) {
  std::vector<Prediction> out;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    out.push_back(*model.Predict(queries.input(q)));
  }
  return out;
}

inline void ExpectSamePredictions(const std::vector<Prediction>& a,
                                  const std::vector<Prediction>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t q = 0; q < a.size(); ++q) {
    SCOPED_TRACE(::testing::Message() << "query " << q);
    EXPECT_EQ(a[q].value, b[q].value);
    EXPECT_EQ(a[q].spread, b[q].spread);
    EXPECT_EQ(a[q].lower, b[q].lower);
    EXPECT_EQ(a[q].upper, b[q].upper);
    EXPECT_EQ(a[q].base_variance, b[q].base_variance);
    EXPECT_EQ(a[q].difficulty, b[q].difficulty);
    EXPECT_EQ(a[q].neighbors, b[q].neighbors);
  }
}

// Everything a client can observe, bit for bit. (memory_bytes depends on
// how an index was built; rebuild_waits on thread timing.)
inline void ExpectSameModel(const Model& a, const Model& b,
                            const Stream& queries) {
  ExpectSamePredictions(PredictAll(a, queries), PredictAll(b, queries));
  const ModelStats sa = a.stats(), sb = b.stats();
  EXPECT_EQ(sa.samples_seen, sb.samples_seen);
  EXPECT_EQ(sa.samples_stored, sb.samples_stored);
  EXPECT_EQ(sa.prequential_mse, sb.prequential_mse);
  EXPECT_EQ(sa.honest_mse, sb.honest_mse);
  EXPECT_EQ(sa.base_rebuilds, sb.base_rebuilds);
  EXPECT_EQ(sa.base_lengthscale, sb.base_lengthscale);
  EXPECT_EQ(sa.base_metric, sb.base_metric);
  EXPECT_EQ(sa.base_ridge, sb.base_ridge);
  EXPECT_EQ(sa.honest_lag, sb.honest_lag);
  EXPECT_EQ(sa.regressor, sb.regressor);
  // Both intervals' calibrations (the answers' is seen only through them).
  EXPECT_EQ(sa.interval_half_width, sb.interval_half_width);
  EXPECT_EQ(sa.interval_scored, sb.interval_scored);
  EXPECT_EQ(sa.interval_covered, sb.interval_covered);
  EXPECT_EQ(sa.answer_interval_half_width, sb.answer_interval_half_width);
  // Figures that are NaN until known.
  for (auto figure : {&ModelStats::prequential_nmse, &ModelStats::honest_nmse,
                      &ModelStats::answer_interval_coverage}) {
    for (std::size_t t = 0; t < (sa.*figure).size(); ++t) {
      EXPECT_EQ(std::isnan((sa.*figure)[t]), std::isnan((sb.*figure)[t]));
      if (!std::isnan((sa.*figure)[t])) {
        EXPECT_EQ((sa.*figure)[t], (sb.*figure)[t]);
      }
    }
  }
  EXPECT_EQ(sa.bandwidth, sb.bandwidth);
  EXPECT_EQ(sa.k, sb.k);
  EXPECT_EQ(sa.gradient_bandwidth, sb.gradient_bandwidth);
  EXPECT_EQ(sa.gradient_samples, sb.gradient_samples);
  EXPECT_EQ(sa.index_rebuilds, sb.index_rebuilds);
  EXPECT_EQ(sa.metric_refreshes, sb.metric_refreshes);
  EXPECT_EQ(sa.rebuild_in_progress, sb.rebuild_in_progress);
  const MetricReport ma = a.metric(), mb = b.metric();
  ASSERT_EQ(ma.metrics.size(), mb.metrics.size());
  for (std::size_t i = 0; i < ma.metrics.size(); ++i) {
    EXPECT_EQ(ma.metrics[i].weights, mb.metrics[i].weights);
    EXPECT_EQ(ma.metrics[i].matrix, mb.metrics[i].matrix);
    EXPECT_EQ(ma.metrics[i].map, mb.metrics[i].map);
    const MetricTransform &ta = ma.in_use[i], &tb = mb.in_use[i];
    EXPECT_TRUE(std::ranges::equal(ta.center(), tb.center()));
    EXPECT_TRUE(std::ranges::equal(ta.scale(), tb.scale()));
    EXPECT_TRUE(std::ranges::equal(ta.weights(), tb.weights()));
    EXPECT_TRUE(std::ranges::equal(ta.matrix(), tb.matrix()));
  }
  EXPECT_EQ(ma.gradient_samples, mb.gradient_samples);
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_MODEL_TEST_SUPPORT_H_
