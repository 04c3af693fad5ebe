// streamreg-bench-regression: what one learned sample and one prediction
// cost the model's global regressions — the linear base (OnlineRidge) and
// the random-feature ridge at several D, and the random-feature base with
// its residual cache over a store of n samples — and a combined
// prediction's local linear fits and a kept ball's scan, at the simulated
// arm's shape (21 inputs, 7 targets). Google Benchmark: figures, not a
// test.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/index/rows_within.h"
#include "core/metric/metric_transform.h"
#include "core/model/random_feature_base.h"
#include "core/model/sample_store.h"
#include "core/regression/adaptive_conformal.h"
#include "core/regression/difficulty_scale.h"
#include "core/regression/local_linear.h"
#include "core/regression/online_ridge.h"
#include "core/regression/random_feature_ridge.h"

namespace streamreg {
namespace {

constexpr std::size_t kInputs = 21;
constexpr std::size_t kTargets = 7;
constexpr std::size_t kRows = 4096;

// Standard normal inputs and targets, cycled through.
struct Rows {
  std::vector<double> x, y;
  Rows() : x(kRows * kInputs), y(kRows * kTargets) {
    std::mt19937_64 random(1);
    std::normal_distribution<double> normal;
    for (double& v : x) v = normal(random);
    for (double& v : y) v = normal(random);
  }
  std::span<const double> Input(std::size_t i) const {
    return {x.data() + (i % kRows) * kInputs, kInputs};
  }
  std::span<const double> Target(std::size_t i) const {
    return {y.data() + (i % kRows) * kTargets, kTargets};
  }
};
const Rows& TheRows() {
  static const Rows rows;
  return rows;
}

RandomFeatureRidge MakeRandomFeatures(const benchmark::State& state) {
  return RandomFeatureRidge(
      kInputs, kTargets,
      {.num_frequencies = static_cast<std::size_t>(state.range(0))});
}

OnlineRidge MakeLinear(const benchmark::State&) {
  return OnlineRidge(kInputs, kTargets, 1.0, 1.0);
}

// A regression that has learned the first 512 rows, solved if it solves
// (what a prediction is timed against).
template <class Regression>
Regression Trained(Regression model) {
  const Rows& rows = TheRows();
  for (std::size_t i = 0; i < 512; ++i) {
    model.Add(rows.Input(i), rows.Target(i));
  }
  if constexpr (requires { model.Solve(); }) model.Solve();
  return model;
}

// One learned sample per iteration.
template <class Regression>
void TimeLearning(benchmark::State& state, Regression& model) {
  const Rows& rows = TheRows();
  std::size_t i = 0;
  for (auto _ : state) {
    model.Add(rows.Input(i), rows.Target(i));
    ++i;
  }
}

// One prediction per iteration.
template <class Regression>
void TimePredictions(benchmark::State& state, const Regression& model) {
  const Rows& rows = TheRows();
  std::vector<double> out(kTargets);
  std::size_t i = 0;
  for (auto _ : state) {
    model.Predict(rows.Input(i++), out);
    benchmark::DoNotOptimize(out.data());
  }
}

// The random-feature benchmarks' D: from a small base to I-SSGPR's sizes.
void EveryFrequencyCount(benchmark::internal::Benchmark* benchmark) {
  for (const int frequencies : {16, 64, 256, 512, 1024}) {
    benchmark->Arg(frequencies);
  }
}

void BM_RandomFeatureRidgeAdd(benchmark::State& state) {
  RandomFeatureRidge model = MakeRandomFeatures(state);
  TimeLearning(state, model);
  state.counters["features"] = static_cast<double>(model.num_features());
}
BENCHMARK(BM_RandomFeatureRidgeAdd)
    ->Apply(EveryFrequencyCount)
    ->Unit(benchmark::kMicrosecond);

// One solve of a ridge that has learned 512 rows and one more sample
// since its last (a solve with nothing new returns at once): F^3 / 3.
void BM_RandomFeatureRidgeSolve(benchmark::State& state) {
  RandomFeatureRidge model = Trained(MakeRandomFeatures(state));
  const Rows& rows = TheRows();
  std::size_t i = 512;
  for (auto _ : state) {
    state.PauseTiming();
    model.Add(rows.Input(i), rows.Target(i));
    ++i;
    state.ResumeTiming();
    benchmark::DoNotOptimize(model.Solve());
  }
}
BENCHMARK(BM_RandomFeatureRidgeSolve)
    ->Apply(EveryFrequencyCount)
    ->Unit(benchmark::kMillisecond);

void BM_RandomFeatureRidgePredict(benchmark::State& state) {
  TimePredictions(state, Trained(MakeRandomFeatures(state)));
}
BENCHMARK(BM_RandomFeatureRidgePredict)
    ->Apply(EveryFrequencyCount)
    ->Unit(benchmark::kMicrosecond);

void BM_RandomFeatureRidgeVariance(benchmark::State& state) {
  const RandomFeatureRidge model = Trained(MakeRandomFeatures(state));
  const Rows& rows = TheRows();
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.RelativeVariance(rows.Input(i++)));
  }
}
BENCHMARK(BM_RandomFeatureRidgeVariance)
    ->Apply(EveryFrequencyCount)
    ->Unit(benchmark::kMicrosecond);

// One sample learned by the random-feature base (Prepare, then Commit
// with the sample stored) over a store of range(1) samples, D = range(0):
// the ridge's step, the sample's residuals and the sweep's share. The
// counter commit_us is the part under the model's exclusive lock.
void BM_RandomFeatureBaseLearn(benchmark::State& state) {
  const Rows& rows = TheRows();
  const auto n = static_cast<std::size_t>(state.range(1));
  SampleStore store(kInputs, kTargets, {CapacityPolicy::kUnbounded, 0}, 1);
  RandomFeatureBase base(
      MetricTransform::Standardizing(std::vector<double>(kInputs, 0.0),
                                     std::vector<double>(kInputs, 1.0)),
      MakeRandomFeatures(state));
  std::size_t i = 0;
  const auto learn = [&] {
    base.Prepare(rows.Input(i), rows.Target(i), store);
    const SampleStore::Placement placed = store.Place();
    store.Put(placed.slot, rows.Input(i), rows.Target(i), i + 1);
    const auto start = std::chrono::steady_clock::now();
    base.Commit(placed.slot, store);
    ++i;
    return std::chrono::steady_clock::now() - start;
  };
  while (i < n) learn();
  std::chrono::duration<double, std::micro> committing{0};
  const std::uint64_t sweeps = base.sweeps();
  for (auto _ : state) committing += learn();
  state.counters["commit_us"] =
      committing.count() / static_cast<double>(state.iterations());
  state.counters["sweeps"] = static_cast<double>(base.sweeps() - sweeps);
}
BENCHMARK(BM_RandomFeatureBaseLearn)
    ->Args({16, 100'000})
    ->Args({64, 10'000})
    ->Args({64, 100'000})
    ->Iterations(20'000)
    ->Unit(benchmark::kMicrosecond);
// I-SSGPR's sizes, over fewer samples (the store's 10,000 take 7 s to
// learn at D = 1,024): two or three sweeps and their solves.
BENCHMARK(BM_RandomFeatureBaseLearn)
    ->Args({256, 10'000})
    ->Args({512, 10'000})
    ->Args({1024, 10'000})
    ->Iterations(2'000)
    ->Unit(benchmark::kMicrosecond);

// The random-feature base's value at a query (its map, features and
// weights), D = range(0), and with range(1) its posterior variance too:
// what a prediction of a model with the base adds to the regressor's.
void BM_RandomFeatureBasePredict(benchmark::State& state) {
  const Rows& rows = TheRows();
  SampleStore store(kInputs, kTargets, {CapacityPolicy::kUnbounded, 0}, 1);
  RandomFeatureBase base(
      MetricTransform::Standardizing(std::vector<double>(kInputs, 0.0),
                                     std::vector<double>(kInputs, 1.0)),
      MakeRandomFeatures(state));
  for (std::size_t i = 0; i < 512; ++i) {
    const SampleStore::Placement placed = store.Place();
    store.Put(placed.slot, rows.Input(i), rows.Target(i), i + 1);
    base.Learn(rows.Input(i), rows.Target(i), placed.slot, store);
  }
  std::vector<double> value(kTargets), variance(kTargets);
  const std::span<double> wanted =
      state.range(1) != 0 ? std::span<double>(variance) : std::span<double>();
  std::size_t i = 0;
  for (auto _ : state) {
    base.Predict(rows.Input(i++), value, wanted);
    benchmark::DoNotOptimize(value.data());
    benchmark::DoNotOptimize(variance.data());
  }
}
BENCHMARK(BM_RandomFeatureBasePredict)
    ->ArgsProduct({{16, 64, 256, 512, 1024}, {0, 1}})
    ->ArgNames({"D", "variance"});

// One learned sample's calibration of the intervals, for the arm's 7
// targets, over a full window of range(0) scores: 7 sorted insertions and
// removals; and the multipliers a prediction reads.
void BM_AdaptiveConformalAdd(benchmark::State& state) {
  const auto window = static_cast<std::size_t>(state.range(0));
  AdaptiveConformal conformal(kTargets, {.window = window});
  std::mt19937_64 random(1);
  std::exponential_distribution<double> exponential(1.0);
  std::vector<double> scores(1 << 16);
  for (double& score : scores) score = exponential(random);
  std::size_t i = 0;
  for (std::size_t s = 0; s < window; ++s) {
    for (std::size_t t = 0; t < kTargets; ++t)
      conformal.Add(t, scores[i++ % scores.size()]);
  }
  for (auto _ : state) {
    for (std::size_t t = 0; t < kTargets; ++t) {
      benchmark::DoNotOptimize(conformal.Add(t, scores[i++ % scores.size()]));
    }
  }
}
BENCHMARK(BM_AdaptiveConformalAdd)->Arg(500)->Arg(2000)->Arg(10000);

void BM_AdaptiveConformalMultipliers(benchmark::State& state) {
  AdaptiveConformal conformal(kTargets, {});
  for (int s = 0; s < 2000; ++s) {
    for (std::size_t t = 0; t < kTargets; ++t) conformal.Add(t, 0.001 * s);
  }
  for (auto _ : state) {
    for (std::size_t t = 0; t < kTargets; ++t) {
      benchmark::DoNotOptimize(conformal.Multiplier(t));
    }
  }
}
BENCHMARK(BM_AdaptiveConformalMultipliers);

// One scored sample's difficulty scale, for the arm's 7 targets at
// range(0) features: 7 updates of the forgotten sums and non-negative
// slope fits; and the relative scales a query's intervals read.
std::vector<double> DifficultyMagnitudes(std::size_t count) {
  std::mt19937_64 random(2);
  std::lognormal_distribution<double> lognormal(0.0, 0.5);
  std::vector<double> magnitudes(count);
  for (double& f : magnitudes) f = lognormal(random);
  return magnitudes;
}

void BM_DifficultyScaleAdd(benchmark::State& state) {
  const auto p = static_cast<std::size_t>(state.range(0));
  DifficultyScale scale(kTargets, p, 2000.0);
  const std::vector<double> f = DifficultyMagnitudes(p * 4096);
  std::size_t i = 0;
  for (auto _ : state) {
    for (std::size_t t = 0; t < kTargets; ++t) {
      const std::span<const double> row(f.data() + (i++ % 4096) * p, p);
      scale.Add(t, row, row[0], 1.0);
    }
  }
}
BENCHMARK(BM_DifficultyScaleAdd)->Arg(1)->Arg(3);

void BM_DifficultyScaleRelative(benchmark::State& state) {
  constexpr std::size_t kFeatures = 3;
  DifficultyScale scale(kTargets, kFeatures, 2000.0);
  const std::vector<double> f = DifficultyMagnitudes(kFeatures * 4096);
  for (std::size_t k = 0; k < 4096; ++k) {
    const std::span<const double> row(f.data() + k * kFeatures, kFeatures);
    for (std::size_t t = 0; t < kTargets; ++t) scale.Add(t, row, row[0], 1.0);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    for (std::size_t t = 0; t < kTargets; ++t) {
      const std::span<const double> row(f.data() + (i++ % 4096) * kFeatures,
                                        kFeatures);
      benchmark::DoNotOptimize(scale.Relative(t, row));
    }
  }
}
BENCHMARK(BM_DifficultyScaleRelative);

void BM_OnlineRidgeAdd(benchmark::State& state) {
  OnlineRidge model = MakeLinear(state);
  TimeLearning(state, model);
}
BENCHMARK(BM_OnlineRidgeAdd);

void BM_OnlineRidgePredict(benchmark::State& state) {
  TimePredictions(state, Trained(MakeLinear(state)));
}
BENCHMARK(BM_OnlineRidgePredict);

// A combined prediction's local linear fits with a base per target: 256
// neighbours gathered with their offsets and 2m target columns (the
// residuals, then the raw targets), fits in one pass (LocalLinearPrefix) at
// k = 128 for the residuals, 192 for the raw targets and 256 for both, as
// the candidates' chosen k spread over the grid: the normal equations,
// three Cholesky factors and their solves. Over all coordinates (the
// argument 0) or the first few (ModelConfig::local_linear_leading).
void BM_LocalLinearPrefix(benchmark::State& state) {
  const auto coordinates = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kNeighbors = 256;
  const Rows& rows = TheRows();
  std::vector<Neighbor> sorted(kNeighbors);
  for (std::size_t j = 0; j < kNeighbors; ++j) {
    sorted[j] = {j, 0.01 * static_cast<double>(j + 1)};
  }
  std::vector<double> columns(2 * kTargets);
  NeighborTargets near(2 * kTargets);
  const std::vector<double> query(kInputs, 0.0);
  near.GatherWithOffsets(
      sorted, query,
      [&](std::uint64_t id) {
        const std::span<const double> y = rows.Target(id);
        std::copy(y.begin(), y.end(), columns.begin());
        std::copy(y.begin(), y.end(), columns.begin() + kTargets);
        return columns.data();
      },
      [&](std::uint64_t id) { return rows.Input(id).data(); });
  std::vector<std::size_t> all_columns(2 * kTargets);
  std::iota(all_columns.begin(), all_columns.end(), std::size_t{0});
  const std::span<const std::size_t> residual_columns =
      std::span(all_columns).first(kTargets);
  const std::span<const std::size_t> raw_columns =
      std::span(all_columns).last(kTargets);
  LocalAverage fit;
  for (auto _ : state) {
    LocalLinearPrefix prefix(near, 1.0, coordinates);
    prefix.FitAt({.k = 128, .coordinates = coordinates}, &fit,
                 residual_columns);
    prefix.FitAt({.k = 192, .coordinates = coordinates}, &fit, raw_columns);
    prefix.FitAt({.k = 256, .coordinates = coordinates}, &fit, all_columns);
    benchmark::DoNotOptimize(fit.value.data());
  }
}
BENCHMARK(BM_LocalLinearPrefix)->Arg(0)->Arg(8);

// A kept ball's scan (RecentNeighborhoods::Knn): the rows of 2,048 stored
// points within a limit of a query, at the arm's 21 coordinates; the limit
// keeps about a tenth of them, the rest stop early or are measured in full
// and dropped. STREAMREG_NO_AVX2=1 runs the SSE2 code.
void BM_KeptBallScan(benchmark::State& state) {
  constexpr std::size_t kBall = 2048;
  const Rows& rows = TheRows();
  std::vector<std::uint64_t> ids(kBall);
  std::iota(ids.begin(), ids.end(), 0);
  const PointRows ball{rows.x.data(), ids.data(), kBall, kInputs};
  std::vector<Neighbor> within;
  std::size_t i = 0;
  for (auto _ : state) {
    within.clear();
    AppendRowsWithin(rows.Input(kBall + i++ % kBall).data(), ball, 5.3,
                     &within);
    benchmark::DoNotOptimize(within.data());
  }
  state.SetItemsProcessed(
      static_cast<std::int64_t>(state.iterations() * kBall));
  state.counters["within"] = static_cast<double>(within.size());
}
BENCHMARK(BM_KeptBallScan);

}  // namespace
}  // namespace streamreg

BENCHMARK_MAIN();
