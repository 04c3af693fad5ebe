// Ingest calls in process, through the C++ client library
// (server/rpc/ingest_reactor.h): ingested models predicting exactly as the
// engine fed the same rows (the neighbours used included), a batch sent
// again skipped by its ids, and an ingest longer than the call deadline.
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/service_fixture.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// Asked for them, the samples each target's prediction used are the
// engine's, each with the id the ingester gave its row (the reference
// learned without ids), and the values are those without them.
void ExpectTheEnginesNeighbors(Client& client, const std::string& name,
                               const Model& reference, const Rows& queries) {
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client.Predict(name, queries.x, Rows::kDim,
                     {.interval_level = std::nullopt, .with_neighbors = true});
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  const std::vector<Prediction> expected =
      EnginePredictions(reference, queries, PredictOptions::WithNeighbors());
  ASSERT_EQ(expected.size(), queries.size());
  std::map<std::uint64_t, std::vector<double>> x_of_id;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const v1::Prediction& got = (*predictions)[q];
    ASSERT_EQ(got.used_size(), Rows::kTargets) << name;
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      ASSERT_EQ(got.y(t), expected[q].value[t]) << name << " query " << q;
      const auto& used = got.used(t).neighbors();
      const std::vector<UsedNeighbor>& want = expected[q].used[t];
      ASSERT_EQ(used.size(), want.size()) << name << " query " << q;
      ASSERT_EQ(static_cast<std::uint32_t>(used.size()),
                got.neighbors_per_target(t));
      for (int j = 0; j < used.size(); ++j) {
        EXPECT_EQ(used[j].distance(), want[j].distance);
        EXPECT_EQ(used[j].y(), want[j].y);
        const std::vector<double> x(used[j].x().begin(), used[j].x().end());
        EXPECT_EQ(x, want[j].x);
        EXPECT_NE(used[j].sample_id(), 0u);
        // One id, one sample.
        const auto [seen, added] = x_of_id.emplace(used[j].sample_id(), x);
        EXPECT_EQ(seen->second, x);
      }
    }
  }
}

TEST_F(ServiceTest, IngestedModelsPredictExactlyAsTheEngine) {
  const Rows rows(1500, 1);
  const Rows queries(50, 2);
  for (auto [metric, regressor] :
       {std::pair{v1::METRIC_EUCLIDEAN, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_GRADIENT_WEIGHTS, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_EGOP, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_EGOP, v1::REGRESSOR_AUTO},
        std::pair{v1::METRIC_MLKR, v1::REGRESSOR_UNSPECIFIED},
        std::pair{v1::METRIC_GLML, v1::REGRESSOR_KERNEL},
        std::pair{v1::METRIC_AUTO, v1::REGRESSOR_AUTO}}) {
    const std::string name = absl::StrCat(v1::Metric_Name(metric), "-",
                                          v1::Regressor_Name(regressor));
    v1::ModelSpec spec = RowsSpec(metric);
    spec.set_regressor(regressor);
    CreateAndIngest(name, rows, rows.size(), spec);
    const std::shared_ptr<HostedModel> hosted =
        server_->registry().Find(name).value();
    const std::unique_ptr<Model> reference = Reference(spec, rows, rows.size());
    hosted->CatchUp();
    // Both install the background work in flight (an MLKR fit is, at 1,500
    // samples).
    const_cast<Model&>(hosted->model()).FinishRebuilds();
    reference->FinishRebuilds();
    absl::StatusOr<std::vector<v1::Prediction>> predictions =
        client_->Predict(name, queries.x, Rows::kDim);
    ASSERT_TRUE(predictions.ok()) << predictions.status();
    ASSERT_EQ(predictions->size(), queries.size());
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const Prediction expected = *reference->Predict(queries.input(q));
      const v1::Prediction& got = (*predictions)[q];
      for (std::size_t t = 0; t < Rows::kTargets; ++t) {
        ASSERT_EQ(got.y(t), expected.value[t]) << name << " query " << q;
        ASSERT_EQ(got.spread(t), expected.spread[t]);
        ASSERT_EQ(got.neighbors_per_target(t), expected.neighbors[t]);
      }
      EXPECT_EQ(got.neighbors(),
                std::min(expected.neighbors[0], expected.neighbors[1]));
      EXPECT_EQ(got.used_size(), 0);
    }
    // One query a message, as a controller asks (answered on gRPC's thread
    // when nothing is to wait for), as the model stands (min_learned 0) or
    // after every sample: the same answers. More samples than the model
    // holds: OUT_OF_RANGE, so the option reaches the server.
    std::unique_ptr<PredictSession> session = client_->StartPredict(name);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const Prediction expected = *reference->Predict(queries.input(q));
      for (const std::optional<std::uint64_t> min_learned :
           {std::optional<std::uint64_t>(), std::optional<std::uint64_t>(0),
            std::optional<std::uint64_t>(rows.size())}) {
        absl::StatusOr<v1::Prediction> got =
            session->Predict(queries.input(q), {.min_learned = min_learned});
        ASSERT_TRUE(got.ok()) << got.status();
        for (std::size_t t = 0; t < Rows::kTargets; ++t) {
          ASSERT_EQ(got->y(t), expected.value[t]) << name << " query " << q;
          ASSERT_EQ(got->spread(t), expected.spread[t]);
        }
      }
    }
    EXPECT_EQ(
        session->Predict(queries.input(0), {.min_learned = rows.size() + 1})
            .status()
            .code(),
        absl::StatusCode::kOutOfRange);
    ExpectTheEnginesNeighbors(*client_, name, *reference, queries);
    // The metric report is the engine's.
    absl::StatusOr<v1::MetricReport> report = client_->GetMetric(name);
    ASSERT_TRUE(report.ok());
    const MetricReport expected = reference->metric();
    EXPECT_EQ(report->kind(), metric);
    ASSERT_EQ(report->metrics_size(), expected.metrics.size());
    for (int m = 0; m < report->metrics_size(); ++m) {
      const v1::LearnedMetric& got = report->metrics(m);
      EXPECT_EQ(got.kind(), MetricToWire(expected.metrics[m].kind));
      EXPECT_NE(got.kind(), v1::METRIC_AUTO);
      for (std::size_t i = 0; i < Rows::kDim; ++i) {
        EXPECT_EQ(got.weights(i), expected.metrics[m].weights[i]);
      }
      const bool matrix =
          got.kind() == v1::METRIC_EGOP || got.kind() == v1::METRIC_MLKR;
      EXPECT_EQ(got.eigenvalues_size(), matrix ? Rows::kDim : 0);
      // MLKR's map (full rank), fitted by now.
      EXPECT_EQ(got.rank(), got.kind() == v1::METRIC_MLKR ? Rows::kDim : 0);
      EXPECT_EQ(got.map_size(), got.rank() * Rows::kDim);
      for (int k = 0; k < got.map_size(); ++k) {
        EXPECT_EQ(got.map(k), expected.metrics[m].map[k]);
      }
      // GLML: each target's gradient under the Gaussian.
      EXPECT_EQ(got.gradient_size(), got.kind() == v1::METRIC_GLML
                                         ? Rows::kTargets * Rows::kDim
                                         : 0);
      for (int k = 0; k < got.gradient_size(); ++k) {
        EXPECT_EQ(got.gradient(k), expected.metrics[m].gradient[k]);
      }
    }
    // Unset, the linear base is on, except under GLML.
    EXPECT_EQ(client_->GetModel(name)->spec().linear_base(),
              metric != v1::METRIC_GLML);
    // METRIC_AUTO: one metric of each candidate.
    EXPECT_EQ(report->metrics_size(), metric == v1::METRIC_AUTO ? 4 : 1);
    const v1::ModelStats stats = client_->GetModel(name)->stats();
    EXPECT_EQ(stats.num_samples(), rows.size());
    EXPECT_EQ(stats.prequential_nmse(0),
              reference->stats().prequential_nmse[0]);
    // Each target's regressor (REGRESSOR_AUTO's choice).
    ASSERT_EQ(stats.regressor_size(), 2);
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(stats.regressor(t),
                RegressorToWire(reference->stats().regressor[t]));
      EXPECT_NE(stats.regressor(t), v1::REGRESSOR_AUTO);
    }
    // And its metric (METRIC_AUTO's choice).
    ASSERT_EQ(stats.metric_size(), 2);
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(stats.metric(t), MetricToWire(reference->stats().metric[t]));
      EXPECT_NE(stats.metric(t), v1::METRIC_AUTO);
    }
  }
}

TEST_F(ServiceTest, AResentIngestBatchIsSkippedByItsIds) {
  const Rows rows(200, 4);
  ASSERT_TRUE(client_->CreateModel("m", RowsSpec()).ok());
  v1::IngestRequest request;
  request.set_model("m");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    v1::Sample& sample = *request.add_samples();
    sample.mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
    sample.mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    sample.set_sample_id(100 + i);
  }
  v1::IngestResponse first;
  ASSERT_TRUE(Ingest(request, &first).ok());
  EXPECT_EQ(first.accepted(), 200u);
  v1::IngestResponse second;
  ASSERT_TRUE(Ingest(request, &second).ok());
  EXPECT_EQ(second.accepted(), 0u);
  EXPECT_EQ(second.duplicates(), 200u);
  EXPECT_EQ(second.num_samples(), 200u);
  EXPECT_EQ(NumSamples("m"), 200u);
}

// A slow producer (a robot logging to the server through Ingest) keeps a
// stream open far longer than the call deadline: the ingester closes each
// stream well before its deadline, so nothing fails.
TEST_F(ServiceTest, AnIngestLongerThanTheDeadlineGoesThrough) {
  const Rows rows(12, 4);
  ASSERT_TRUE(client_->CreateModel("m", RowsSpec()).ok());
  ClientOptions options = client_->options();
  options.timeout = absl::Milliseconds(800);
  options.batch_size = 1;  // every sample is a message
  Client slow_client(options);
  std::unique_ptr<Ingester> ingester = slow_client.StartIngest("m");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok()) << i;
    absl::SleepFor(absl::Milliseconds(150));  // 1.8 s in all
  }
  absl::StatusOr<IngestSummary> summary = ingester->Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 12u);
  EXPECT_EQ(NumSamples("m"), 12u);
}

}  // namespace
}  // namespace streamreg
