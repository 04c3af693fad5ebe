// streamreg info's summary of a model, from a Model message made here: the
// header lines, dates and ages, one row per target with what it chose, and
// "-" where a figure is not known yet.
#include "client/cli/model_summary.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

v1::Model TwoTargetModel() {
  v1::Model model;
  model.set_name("arm");
  v1::ModelSpec& spec = *model.mutable_spec();
  spec.set_input_dim(8);
  for (const char* name : {"q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8"}) {
    spec.add_input_names(name);
  }
  spec.add_target_names("tau1");
  spec.add_target_names("tau2");
  spec.set_metric(v1::METRIC_AUTO);
  spec.set_regressor(v1::REGRESSOR_AUTO);
  spec.set_kernel(v1::KERNEL_GAUSSIAN);
  spec.set_linear_base(true);
  spec.set_per_target_base(true);
  spec.set_interval_level(0.9);
  spec.mutable_capacity()->set_policy(v1::CAPACITY_POLICY_WINDOW);
  spec.mutable_capacity()->set_limit(5000);
  v1::ModelStats& stats = *model.mutable_stats();
  stats.set_num_samples(12000);
  stats.set_num_stored(5000);
  stats.set_memory_bytes(3 << 20);
  stats.set_honest_lag(200);
  stats.add_prequential_nmse(0.0123456);
  stats.add_prequential_nmse(std::nan(""));
  stats.add_honest_nmse(0.05);
  stats.add_honest_nmse(std::nan(""));
  stats.set_answers_sent(11000);
  stats.add_answer_nmse(0.25);
  stats.add_answer_nmse(std::nan(""));
  stats.add_k(8);
  stats.add_k(0);
  stats.add_bandwidth(0);
  stats.add_bandwidth(0.25);
  stats.add_regressor(v1::REGRESSOR_KNN);
  stats.add_regressor(v1::REGRESSOR_KERNEL);
  stats.add_metric(v1::METRIC_EGOP);
  stats.add_metric(v1::METRIC_MLKR);
  stats.add_uses_base(true);
  stats.add_uses_base(false);
  stats.add_interval_half_width(1.5);
  stats.add_interval_half_width(std::numeric_limits<double>::infinity());
  stats.add_interval_coverage(0.912);
  stats.add_interval_coverage(std::nan(""));
  return model;
}

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15

void SetTime(absl::Time time, google::protobuf::Timestamp* out) {
  out->set_seconds(absl::ToUnixSeconds(time));
}

TEST(ModelSummaryTest, SaysWhatTheModelLearnsFromHowMuchAndSince) {
  v1::Model model = TwoTargetModel();
  SetTime(kNow - absl::Hours(50) - absl::Minutes(3),
          model.mutable_create_time());
  SetTime(kNow - absl::Seconds(95), model.mutable_snapshot_time());
  const std::string summary = ModelSummary(model, kNow);
  EXPECT_THAT(summary,
              HasSubstr("arm: 8 inputs (q1, q2, q3, ..., q8) -> 2 targets "
                        "(tau1, tau2)\n"));
  EXPECT_THAT(summary,
              HasSubstr("  learns    metric auto, regressor auto (gaussian "
                        "kernel), linear base where it helps a target, "
                        "intervals at 90%\n"));
  EXPECT_THAT(summary,
              HasSubstr("  samples   12000 learned, 5000 stored (the latest "
                        "5000 kept); 3.0 MiB in memory\n"));
  EXPECT_THAT(summary,
              HasSubstr("  created   2027-01-13 05:57:00 UTC (2d 2h ago)\n"));
  EXPECT_THAT(summary,
              HasSubstr("  snapshot  2027-01-15 07:58:25 UTC (1m 35s ago)\n"));
  EXPECT_THAT(summary,
              HasSubstr("without the 200 samples seen just before it"));
  // A random-feature base under the metric chosen per target says whose
  // coordinates it follows.
  model.mutable_spec()->mutable_random_feature_base()->set_frequencies(64);
  model.mutable_stats()->set_base_metric(v1::METRIC_EGOP);
  EXPECT_THAT(ModelSummary(model, kNow),
              HasSubstr("  learns    metric auto, regressor auto (gaussian "
                        "kernel), random-feature base (in egop's "
                        "coordinates) where it helps a target, intervals at "
                        "90%\n"));
}

TEST(ModelSummaryTest, ARowPerTargetWithItsChoicesAndDashesForTheUnknown) {
  const std::string summary = ModelSummary(TwoTargetModel(), kNow);
  EXPECT_THAT(summary,
              HasSubstr("  target  prequential  honest  answers  regressor  "
                        "metric  chose   base  interval  coverage\n"));
  EXPECT_THAT(summary, HasSubstr("  tau1    0.0123       0.0500  0.2500   knn  "
                                 "      egop    k=8     yes   1.5       "
                                 "91.2%\n"));
  EXPECT_THAT(summary, HasSubstr("  tau2    -            -       -        "
                                 "kernel     mlkr    h=0.25  no    -         "
                                 "-\n"));
  EXPECT_THAT(summary, HasSubstr("answers' nMSE: the 11000 Learn answers this "
                                 "server sent"));
  // The honest predictions calibrate the intervals: no word of a lag.
  EXPECT_THAT(summary, Not(HasSubstr("calibrated on predictions")));
}

TEST(ModelSummaryTest, AnIntervalLagIsSaid) {
  v1::Model model = TwoTargetModel();
  model.mutable_stats()->set_interval_lag(5000);
  EXPECT_THAT(ModelSummary(model, kNow),
              HasSubstr("(a query's interval, calibrated on predictions made "
                        "as a query's without\n  the 5000 samples seen "
                        "before each"));
}

TEST(ModelSummaryTest, CombinedCandidatesAreListedWithTheirWeightsAndRecency) {
  v1::Model model = TwoTargetModel();
  v1::ModelStats& stats = *model.mutable_stats();
  for (const char* name : {"knn+base", "base"}) stats.add_candidates(name);
  for (double weight : {0.75, 0.25, 0.5, 0.5}) {
    stats.add_candidate_weights(weight);
    stats.add_answer_candidate_weights(1.0 - weight);
  }
  model.mutable_spec()->mutable_tuning()->set_combination_recency(2);
  const std::string summary = ModelSummary(model, kNow);
  EXPECT_THAT(summary, HasSubstr("prequential ones (the stream's s-th "
                                 "sample's errors weighing s^2):"));
  EXPECT_THAT(summary, HasSubstr("knn+base  base"));
  EXPECT_THAT(summary, HasSubstr("tau1    queries  0.750     0.250"));
  EXPECT_THAT(summary, HasSubstr("tau1    answers  0.250     0.750"));
  // Every sample the same (a model made before the setting): not said.
  model.mutable_spec()->mutable_tuning()->set_combination_recency(0);
  EXPECT_THAT(ModelSummary(model, kNow),
              AllOf(HasSubstr("prequential ones:"), Not(HasSubstr("s^"))));
}

TEST(ModelSummaryTest, PredictionsAheadAreSummedUpOnceScored) {
  v1::Model model = TwoTargetModel();
  EXPECT_THAT(ModelSummary(model, kNow), Not(HasSubstr("predictions ahead")));
  v1::ModelStats& stats = *model.mutable_stats();
  stats.set_ahead_scored(900);
  stats.add_ahead_nmse(0.0136);
  stats.add_ahead_nmse(std::nan(""));
  stats.add_ahead_interval_coverage(0.897);
  stats.add_ahead_interval_coverage(std::nan(""));
  EXPECT_THAT(ModelSummary(model, kNow),
              HasSubstr("  predictions ahead, 900 scored against their ticks' "
                        "samples: nMSE (coverage) tau1 0.0136 (89.7%), tau2 - "
                        "(-)\n"));
}

TEST(ModelSummaryTest, AModelWithoutALogHasNoSnapshotAndAYoungOneNoChoices) {
  v1::Model model;
  model.set_name("fresh");
  model.mutable_spec()->set_input_dim(2);
  model.mutable_spec()->add_target_names("y");
  model.mutable_spec()->set_interval_level(0.8);
  SetTime(kNow - absl::Seconds(4), model.mutable_create_time());
  const std::string summary = ModelSummary(model, kNow);
  EXPECT_THAT(summary, HasSubstr("fresh: 2 inputs -> 1 targets (y)\n"));
  EXPECT_THAT(summary, HasSubstr("(4s ago)"));
  EXPECT_THAT(summary, HasSubstr("  snapshot  none (no write-ahead log)\n"));
  EXPECT_THAT(summary, HasSubstr(", no base, intervals at 80%"));
  EXPECT_THAT(summary, HasSubstr("  y       -            -       -        -  "
                                 "        -       -      -     -         "
                                 "-\n"));
  EXPECT_THAT(summary, HasSubstr("honest nMSE: the same until the model"));
  EXPECT_THAT(summary, Not(HasSubstr("nan")));
}

// `streamreg metric`'s line on MLKR's maps: the rank the spectrum shows,
// not the rows the map was given, when directions carry nothing.
TEST(ModelSummaryTest, MlkrMapsAreSaidAtTheRankTheirSpectrumShows) {
  v1::MetricReport report;
  EXPECT_EQ(MlkrMapsSummary(report), "no map before the first fit");
  v1::LearnedMetric* map = report.add_metrics();
  EXPECT_EQ(MlkrMapsSummary(report), "no map before the first fit");
  map->set_rank(4);
  for (double value : {3.0, 1.0, 0.5, 0.25}) map->add_eigenvalues(value);
  EXPECT_EQ(MlkrMapsSummary(report), "maps of rank 4");
  map->set_eigenvalues(2, 1e-12);  // below 1e-9 of the largest
  map->set_eigenvalues(3, 0.0);
  EXPECT_EQ(MlkrMapsSummary(report), "maps of rank 2 (4 rows)");
  map->set_eigenvalues(2, 1e-8);  // above it: a direction used
  EXPECT_EQ(MlkrMapsSummary(report), "maps of rank 3 (4 rows)");
}

}  // namespace
}  // namespace streamreg
