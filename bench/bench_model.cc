// streamreg-bench-model: the learning engine's costs on a robot-like
// stream — ingest (predict-then-learn with online metric updates) and
// predict, per sample, at a given model size n.
//
// For each metric and n: learn the first n samples of a 7-joint arm's
// stream (d = 21 inputs q, q', q''; m = 7 torques), let background index
// rebuilds finish, then time `--measure` more samples learned one per call
// (as a robot streams them) and `--queries` held-out predictions one per
// call. The stream is streamreg-robot-sim's simulated Panda (the workload
// of bench/robot_bench.sh). Prints a table; --json writes the figures.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_support.h"
#include "client/loadgen/robot_stream.h"
#include "common/command_line.h"
#include "common/normalized_error.h"
#include "core/model/model.h"
#include "nlohmann/json.hpp"
#include "tests/support/synthetic_points.h"

ABSL_FLAG(std::string, sizes, "10000,100000", "Comma-separated model sizes n");
ABSL_FLAG(std::string, metrics, "euclidean,gw,egop", "Metrics to measure");
ABSL_FLAG(std::string, regressor, "knn", "knn, kernel or local_linear");
ABSL_FLAG(int, honest_lag, -1,
          "Tuning.honest_lag of the models (-1: the model's default)");
ABSL_FLAG(int, interval_lag, -1,
          "Tuning.interval_lag of the models (-1: the model's default)");
ABSL_FLAG(bool, per_target, false, "One metric (and index) per target");
ABSL_FLAG(bool, linear_base, true,
          "A linear base under the regressor (--nolinear_base: none)");
ABSL_FLAG(double, base_relative_ridge, -1,
          "The linear base's relative ridge (< 0: the default)");
ABSL_FLAG(bool, per_target_base, false,
          "With the base: each target with it or without it (by the honest "
          "error)");
ABSL_FLAG(bool, combine, false,
          "Each target's candidates combined (ModelConfig::combine)");
ABSL_FLAG(bool, random_feature_base, false,
          "The base a random-feature ridge (with --linear_base)");
ABSL_FLAG(int, random_feature_frequencies, -1,
          "The random-feature base's D (-1: the model's default)");
ABSL_FLAG(std::vector<std::string>, random_feature_lengthscales, {},
          "The random-feature base's candidate lengthscales, times sqrt(d) "
          "(none: the model's default)");
ABSL_FLAG(std::string, gradient_estimator, "local_linear",
          "local_linear (slopes) or finite_differences (the papers')");
ABSL_FLAG(int, metric_refresh_samples, -1,
          "Tuning.metric_refresh_samples (-1: the model's default; 0: every "
          "stored sample)");
ABSL_FLAG(int, mlkr_fit_steps, -1,
          "Evaluations of the MLKR objective per descent of a fit (negative: "
          "the model's default)");
ABSL_FLAG(int, mlkr_fit_samples, -1,
          "Stored samples an MLKR fit reads at most (negative: the model's "
          "default)");
ABSL_FLAG(int, mlkr_fit_budget, -1,
          "Samples read x evaluations per descent an MLKR fit does at most "
          "(0: no budget; negative: the model's default)");
ABSL_FLAG(int, mlkr_rank, -1,
          "The MLKR map's rank (0: full rank; -1: the model's default)");
ABSL_FLAG(int, local_linear_leading, -1,
          "Tuning.local_linear_leading: the coordinates of the local linear "
          "fits over the leading ones (0: every fit over all; -1: the "
          "model's default)");
ABSL_FLAG(int, combination_recency, -1,
          "Tuning.combination_recency: with --combine, the power p of a "
          "sample's weight s^p in the aggregation (0: every sample the same; "
          "-1: the model's default)");
ABSL_FLAG(int, max_k, -1,
          "The regressor's default k grid without its k above this (-1: the "
          "whole grid)");
ABSL_FLAG(int, measure, 2000, "Samples learned (timed) after the first n");
ABSL_FLAG(int, queries, 2000, "Held-out predictions timed");
ABSL_FLAG(std::string, held_out, "second_arm",
          "The held-out queries: second_arm (a second arm, the same task 37 s "
          "later, its own sensor noise) or later (the same arm's samples "
          "right after the learned ones)");
ABSL_FLAG(std::string, json, "", "Write the results as JSON to this file");

namespace streamreg {
namespace {

constexpr std::size_t kJoints = kArmJoints;
using Clock = BenchClock;

struct Figures {
  std::string metric;
  std::size_t n = 0;
  double warmup_samples_per_s = 0;
  double learn_us_median = 0, learn_us_p99 = 0, learn_samples_per_s = 0;
  // Every other sample learned as the server learns it: LearnUntilWait,
  // which checks before each sample whether a take-over would wait (and
  // waits outside the call when it would), paired with Learn on the same
  // model for its cost.
  double until_wait_us_median = 0, until_wait_us_p99 = 0;
  double predict_us_median = 0, predict_us_p99 = 0;
  double predict_neighbors_mean = 0;  // over targets and queries
  double nmse = 0;                    // prequential, mean over targets
  double honest_nmse = 0;             // honest (leave-recent-out), the same
  double held_out_nmse = 0;           // on the held-out arm, the same
  // The model's own mean squared errors over the held-out one's, means over
  // targets (the same normalization on both sides: nMSE divides by
  // variances of different spans).
  double prequential_to_held_out = 0;
  double honest_to_held_out = 0;
  double gradient_bandwidth = 0;
  std::vector<double> bandwidths;  // per target
  // Per target, what it predicts with at the end: "metric regressor k|h".
  std::vector<std::string> choices;
  std::uint64_t rebuilds = 0, rebuild_waits = 0;
  // Refit at n: the papers' batch estimator over every stored sample, then
  // every index rebuilt (what a growth refresh costs, and more).
  double refit_s = 0;
};

// The samples learned (inputs, torques) and the held-out queries.
struct ArmData {
  PointSet inputs;
  std::vector<double> torques;
  PointSet held_out;
  std::vector<double> held_out_torques;
};

// The simulated Panda (task seed 1). The held-out queries are a second arm
// doing the same task 37 s later in the motion, with its own sensor noise
// (--held_out=second_arm), or the same arm's next samples, never learned
// (--held_out=later: the segment right after the stream, which the honest
// error's recent window estimates).
ArmData PandaArm(std::size_t total, std::size_t queries) {
  const std::string held_out_kind = absl::GetFlag(FLAGS_held_out);
  if (held_out_kind == "later") {
    ArmStream stream(total + queries);
    const std::size_t d = stream.inputs.dim;
    auto& x = stream.inputs.coordinates;
    auto& y = stream.torques;
    PointSet held_out{d, std::vector<double>(x.begin() + total * d, x.end())};
    std::vector<double> held_out_torques(y.begin() + total * kJoints, y.end());
    x.resize(total * d);
    y.resize(total * kJoints);
    return {std::move(stream.inputs), std::move(y), std::move(held_out),
            std::move(held_out_torques)};
  }
  if (held_out_kind != "second_arm") {
    std::cerr << "streamreg-bench-model: --held_out: second_arm or later, got "
              << held_out_kind << "\n";
    std::exit(2);
  }
  ArmStream learned(total);
  ArmStream held_out(queries, total + 37000, 2);
  return {std::move(learned.inputs), std::move(learned.torques),
          std::move(held_out.inputs), std::move(held_out.torques)};
}

// Sets `field` from an integer flag given as 0 or more (negative: the
// model's default).
void SetIfGiven(const absl::Flag<int>& flag, std::size_t* field) {
  if (const int value = absl::GetFlag(flag); value >= 0) {
    *field = static_cast<std::size_t>(value);
  }
}

Figures Measure(MetricKind metric, RegressorKind regressor, std::size_t n,
                std::size_t measure, std::size_t queries) {
  const std::size_t total = n + measure;
  const ArmData data = PandaArm(total, queries);
  const PointSet& inputs = data.inputs;
  const std::vector<double>& torques = data.torques;
  const PointSet& held_out = data.held_out;

  ModelConfig config = ArmConfig(metric);
  config.regressor = regressor;
  config.per_target_metric = absl::GetFlag(FLAGS_per_target);
  config.linear_base = absl::GetFlag(FLAGS_linear_base);
  config.per_target_base = absl::GetFlag(FLAGS_per_target_base);
  config.combine = absl::GetFlag(FLAGS_combine);
  if (absl::GetFlag(FLAGS_base_relative_ridge) >= 0) {
    config.base_relative_ridge = absl::GetFlag(FLAGS_base_relative_ridge);
  }
  config.gradient_estimator =
      *ParseGradientEstimatorKind(absl::GetFlag(FLAGS_gradient_estimator));
  config.random_feature_base = absl::GetFlag(FLAGS_random_feature_base);
  SetIfGiven(FLAGS_random_feature_frequencies,
             &config.random_feature_frequencies);
  if (const std::vector<std::string> given =
          absl::GetFlag(FLAGS_random_feature_lengthscales);
      !given.empty()) {
    config.random_feature_lengthscales.clear();
    for (const std::string& field : given) {
      double value = 0.0;
      if (!absl::SimpleAtod(field, &value)) {
        std::cerr << "--random_feature_lengthscales: not a number: " << field
                  << "\n";
        std::exit(2);
      }
      config.random_feature_lengthscales.push_back(value);
    }
  }
  SetIfGiven(FLAGS_honest_lag, &config.honest_lag);
  SetIfGiven(FLAGS_interval_lag, &config.interval_lag);
  SetIfGiven(FLAGS_metric_refresh_samples, &config.metric_refresh_samples);
  SetIfGiven(FLAGS_mlkr_fit_steps, &config.mlkr_fit_steps);
  SetIfGiven(FLAGS_mlkr_fit_samples, &config.mlkr_fit_samples);
  SetIfGiven(FLAGS_mlkr_fit_budget, &config.mlkr_fit_budget);
  SetIfGiven(FLAGS_mlkr_rank, &config.mlkr_rank);
  SetIfGiven(FLAGS_local_linear_leading, &config.local_linear_leading);
  SetIfGiven(FLAGS_combination_recency, &config.combination_recency);
  if (const int max_k = absl::GetFlag(FLAGS_max_k); max_k >= 0) {
    config.k_grid = DefaultKGridFor(regressor);
    std::erase_if(config.k_grid, [max_k](std::size_t k) {
      return k > static_cast<std::size_t>(max_k);
    });
    if (config.k_grid.empty()) {
      std::cerr << "--max_k: " << max_k << " is below every k of the grid\n";
      std::exit(2);
    }
  }
  absl::StatusOr<std::unique_ptr<Model>> created = Model::Create(config);
  if (!created.ok()) {
    std::cerr << "the model's configuration: " << created.status() << "\n";
    std::exit(2);
  }
  std::unique_ptr<Model> model = *std::move(created);
  auto sample = [&](std::size_t s) {
    return Sample{inputs.point(s), {torques.data() + s * kJoints, kJoints}, s};
  };

  Figures figures;
  figures.metric = std::string(MetricKindName(metric));
  figures.n = n;
  const Clock::time_point start = Clock::now();
  constexpr std::size_t kBatch = 100;
  std::vector<Sample> batch;
  for (std::size_t s = 0; s < n; s += kBatch) {
    batch.clear();
    for (std::size_t i = s; i < std::min(n, s + kBatch); ++i) {
      batch.push_back(sample(i));
    }
    if (!model->Learn(batch).ok()) std::abort();
  }
  figures.warmup_samples_per_s = n / Seconds(Clock::now() - start);
  model->FinishRebuilds();

  std::vector<double> learn_us, until_wait_us;
  const Clock::time_point learn_start = Clock::now();
  for (std::size_t s = n; s < total; ++s) {
    const Sample one = sample(s);
    const absl::StatusOr<ValidatedSamples> validated =
        model->Validate({&one, 1});
    if (!validated.ok()) std::abort();
    const Clock::time_point before = Clock::now();
    if (s % 2 == 0) {
      if (!model->Learn(*validated).ok()) std::abort();
      learn_us.push_back(1e6 * Seconds(Clock::now() - before));
      continue;
    }
    for (;;) {
      absl::StatusOr<Model::PartLearned> part =
          model->LearnUntilWait(*validated);
      if (!part.ok()) std::abort();
      if (part->learned == 1) break;
      while (!part->resume_when()) std::this_thread::yield();
    }
    until_wait_us.push_back(1e6 * Seconds(Clock::now() - before));
  }
  figures.learn_samples_per_s = measure / Seconds(Clock::now() - learn_start);
  figures.learn_us_median = Percentile(learn_us, 0.5);
  figures.learn_us_p99 = Percentile(learn_us, 0.99);
  figures.until_wait_us_median = Percentile(until_wait_us, 0.5);
  figures.until_wait_us_p99 = Percentile(until_wait_us, 0.99);

  std::vector<double> predict_us;
  NormalizedError held_out_error(kJoints);
  std::vector<double> held_out_squares(kJoints, 0.0);
  for (std::size_t q = 0; q < held_out.size(); ++q) {
    const Clock::time_point before = Clock::now();
    const absl::StatusOr<Prediction> prediction =
        model->Predict(held_out.point(q));
    predict_us.push_back(1e6 * Seconds(Clock::now() - before));
    if (!prediction.ok()) std::abort();
    const std::span<const double> truth(
        data.held_out_torques.data() + q * kJoints, kJoints);
    held_out_error.Add(prediction->value, truth);
    for (std::size_t t = 0; t < kJoints; ++t) {
      const double error = prediction->value[t] - truth[t];
      held_out_squares[t] += error * error / held_out.size();
    }
    for (std::uint32_t count : prediction->neighbors) {
      figures.predict_neighbors_mean +=
          static_cast<double>(count) / (kJoints * held_out.size());
    }
  }
  figures.predict_us_median = Percentile(predict_us, 0.5);
  figures.predict_us_p99 = Percentile(predict_us, 0.99);
  const ModelStats stats = model->stats();
  for (std::size_t t = 0; t < kJoints; ++t) {
    figures.nmse += stats.prequential_nmse[t] / kJoints;
    figures.honest_nmse += stats.honest_nmse[t] / kJoints;
    figures.prequential_to_held_out +=
        stats.prequential_mse[t] / held_out_squares[t] / kJoints;
    figures.honest_to_held_out +=
        stats.honest_mse[t] / held_out_squares[t] / kJoints;
  }
  figures.held_out_nmse = held_out_error.MeanNmse();
  figures.gradient_bandwidth = stats.gradient_bandwidth;
  figures.rebuilds = stats.index_rebuilds;
  figures.rebuild_waits = stats.rebuild_waits;
  figures.bandwidths = stats.bandwidth;
  const Clock::time_point refit_start = Clock::now();
  if (!model->Refit().ok()) std::abort();
  figures.refit_s = Seconds(Clock::now() - refit_start);
  for (std::size_t t = 0; t < kJoints; ++t) {
    figures.choices.push_back(absl::StrFormat(
        "%s %s %s", MetricKindName(stats.metric[t]),
        RegressorKindName(stats.regressor[t]),
        stats.k[t] != 0 ? absl::StrCat("k=", stats.k[t])
                        : absl::StrFormat("h=%.3g", stats.bandwidth[t])));
  }
  return figures;
}

int Main() {
  std::vector<std::size_t> sizes;
  for (absl::string_view field :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    std::size_t n = 0;
    if (!absl::SimpleAtoi(field, &n)) {
      std::cerr << "--sizes: not a number: " << field << "\n";
      return 2;
    }
    sizes.push_back(n);
  }
  const absl::StatusOr<RegressorKind> regressor =
      ParseRegressorKind(absl::GetFlag(FLAGS_regressor));
  if (!regressor.ok()) {
    std::cerr << regressor.status() << "\n";
    return 2;
  }
  if (const absl::Status estimator =
          ParseGradientEstimatorKind(absl::GetFlag(FLAGS_gradient_estimator))
              .status();
      !estimator.ok()) {
    std::cerr << estimator << "\n";
    return 2;
  }
  nlohmann::json results = nlohmann::json::array();
  std::cout << absl::StrFormat(
      "%-10s %8s %12s %12s %12s %12s %12s %12s %10s %10s %8s %8s %7s %7s "
      "%8s %6s %6s %8s %s\n",
      "metric", "n", "warmup/s", "learn/s", "learn µs", "learn p99",
      "until-wait µs", "until-wait p99", "predict µs", "pred p99", "ratio",
      "nbrs", "nMSE", "honest", "held-out", "p/ho", "h/ho", "refit s",
      "waits/rebuilds");
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_metrics), ',')) {
    const absl::StatusOr<MetricKind> metric = ParseMetricKind(name);
    if (!metric.ok()) {
      std::cerr << metric.status() << "\n";
      return 2;
    }
    for (std::size_t n : sizes) {
      const Figures f =
          Measure(*metric, *regressor, n, absl::GetFlag(FLAGS_measure),
                  absl::GetFlag(FLAGS_queries));
      const double ratio = f.learn_us_median / f.predict_us_median;
      std::cout << absl::StrFormat(
          "%-10s %8d %12.0f %12.0f %12.1f %12.1f %12.1f %12.1f %10.1f %10.1f "
          "%8.1f %8.0f %7.4f %7.4f %8.4f %6.2f %6.2f %8.2f %d/%d\n",
          f.metric, f.n, f.warmup_samples_per_s, f.learn_samples_per_s,
          f.learn_us_median, f.learn_us_p99, f.until_wait_us_median,
          f.until_wait_us_p99, f.predict_us_median, f.predict_us_p99, ratio,
          f.predict_neighbors_mean, f.nmse, f.honest_nmse, f.held_out_nmse,
          f.prequential_to_held_out, f.honest_to_held_out, f.refit_s,
          f.rebuild_waits, f.rebuilds);
      std::cout << "  per torque: " << absl::StrJoin(f.choices, ", ") << "\n";
      results.push_back(
          {{"metric", f.metric},
           {"n", f.n},
           {"warmup_samples_per_s", f.warmup_samples_per_s},
           {"learn_samples_per_s", f.learn_samples_per_s},
           {"learn_us_median", f.learn_us_median},
           {"learn_us_p99", f.learn_us_p99},
           {"until_wait_us_median", f.until_wait_us_median},
           {"until_wait_us_p99", f.until_wait_us_p99},
           {"predict_us_median", f.predict_us_median},
           {"predict_us_p99", f.predict_us_p99},
           {"predict_neighbors_mean", f.predict_neighbors_mean},
           {"learn_predict_ratio", ratio},
           {"prequential_nmse_mean", f.nmse},
           {"honest_nmse_mean", f.honest_nmse},
           {"held_out_nmse_mean", f.held_out_nmse},
           {"prequential_to_held_out_mse", f.prequential_to_held_out},
           {"honest_to_held_out_mse", f.honest_to_held_out},
           {"bandwidths", f.bandwidths},
           {"choices", f.choices},
           {"gradient_bandwidth", f.gradient_bandwidth},
           {"refit_s", f.refit_s},
           {"index_rebuilds", f.rebuilds},
           {"rebuild_waits", f.rebuild_waits}});
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::ofstream(path) << results.dump(2) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = "streamreg-bench-model",
      .synopsis =
          "[--sizes N,N] [--metrics euclidean,gw,egop] [--json OUT] [flags]",
      .summary =
          "The learning engine's costs on the simulated arm's stream: per "
          "sample, "
          "learning (predict-then-learn with online metric updates) and "
          "predicting, at each model size n, for each metric. Prints a "
          "table; --json writes the figures.",
      .flags = streamreg::FlagsDefinedIn({"bench/bench_model.cc"}),
      .examples = {"streamreg-bench-model --sizes 100000 --metrics gw"},
      .details = "Figures, not a test: bench/README.md has the results.",
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  return streamreg::Main();
}
