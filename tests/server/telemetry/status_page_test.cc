// The status page's data (GET /api/status) against what the models report
// over gRPC, its files, the detail filter and the page turned off. The
// page as a browser draws it:
// tests/server/telemetry/status_page_browser_test.py.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "core/model/model.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "server/rpc/server.h"
#include "server/rpc/spec_conversion.h"
#include "server/rpc/status_report.h"
#include "tests/support/metrics_port_test.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

using Json = nlohmann::json;

class StatusPageTest : public MetricsPortTest {
 protected:
  void StartServer(bool status_page) {
    ServerOptions options;
    options.status_page = status_page;
    MetricsPortTest::StartServer(std::move(options));
  }

  Json Status(const std::string& query = "") {
    httplib::Result response = Get("/api/status" + query);
    EXPECT_TRUE(response);
    if (!response) return {};
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->get_header_value("Content-Type"), "application/json");
    EXPECT_EQ(response->get_header_value("Cache-Control"), "no-store");
    return Json::parse(response->body);
  }

  // Ingests rows [0, n) of seed 7 in batches of `batch`.
  void Ingest(const std::string& model, std::size_t n, std::size_t batch) {
    ClientOptions options = TestClientOptions(*server_);
    options.batch_size = batch;
    Client client(options);
    std::unique_ptr<Ingester> ingester = client.StartIngest(model);
    const Rows rows(n, 7);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
    }
    ASSERT_TRUE(ingester->Finish().ok());
  }

  static const Json& Model(const Json& status, const std::string& name) {
    for (const Json& model : status["models"]) {
      if (model["name"] == name) return model;
    }
    ADD_FAILURE() << "no model " << name << " in " << status.dump();
    static const Json kNone;
    return kNone;
  }
};

// Equal, or both unknown (NaN is null in JSON).
void ExpectSameError(const Json& shown, double reported) {
  if (std::isnan(reported)) {
    EXPECT_TRUE(shown.is_null()) << shown;
  } else {
    EXPECT_EQ(shown.get<double>(), reported);
  }
}

TEST_F(StatusPageTest, ShowsEachModelAsGrpcReportsIt) {
  ASSERT_NO_FATAL_FAILURE(StartServer(true));
  ASSERT_TRUE(client_->CreateModel("arm", RowsSpec(v1::METRIC_EGOP)).ok());
  ASSERT_TRUE(client_->CreateModel("leg", RowsSpec()).ok());
  // No sample yet: no last sample.
  EXPECT_TRUE(Model(Status(), "arm")["last_sample_seconds"].is_null());
  const absl::Time before_ingest = absl::Now();
  ASSERT_NO_FATAL_FAILURE(Ingest("arm", 1000, 250));
  ASSERT_NO_FATAL_FAILURE(Ingest("leg", 40, 40));
  const absl::StatusOr<v1::Model> arm = client_->GetModel("arm");
  ASSERT_TRUE(arm.ok()) << arm.status();
  const absl::StatusOr<v1::MetricReport> metric = client_->GetMetric("arm");
  ASSERT_TRUE(metric.ok()) << metric.status();

  const Json status = Status();
  EXPECT_EQ(status["server"]["version"], STREAMREG_VERSION);
  EXPECT_TRUE(status["server"]["failed_models"].empty());
  ASSERT_EQ(status["models"].size(), 2u);
  const Json& shown = Model(status, "arm");
  EXPECT_EQ(shown["targets"], Json({"wave", "square"}));
  // Created without input names: named as the CLI names them.
  EXPECT_EQ(shown["inputs"], Json({"x0", "x1", "x2"}));
  EXPECT_EQ(shown["metric"], "egop");
  EXPECT_EQ(shown["samples_seen"], 1000);
  EXPECT_EQ(shown["samples_stored"], arm->stats().num_stored());
  EXPECT_EQ(shown["capacity"]["policy"], "unbounded");
  EXPECT_EQ(shown["capacity"]["limit"], 10'000'000);  // the server's limit
  EXPECT_EQ(shown["learn_lag"]["samples"], 0);        // GetModel caught up
  // Learning's stops at take-overs: none now, the longest within the sum.
  const Json& waits = shown["learn_lag"]["waits"];
  EXPECT_EQ(waits["current_seconds"], 0.0);
  EXPECT_LE(waits["longest_seconds"].get<double>(),
            waits["seconds"].get<double>());
  EXPECT_EQ(waits["count"] == 0, waits["seconds"] == 0.0) << waits;
  EXPECT_EQ(shown["snapshot"]["samples_since"], 1000);
  // The newest sample arrived during the ingest: at most as long ago as
  // its start.
  const double last_sample = shown["last_sample_seconds"].get<double>();
  EXPECT_GE(last_sample, 0.0);
  EXPECT_LE(last_sample, absl::ToDoubleSeconds(absl::Now() - before_ingest));
  for (int t = 0; t < 2; ++t) {
    ExpectSameError(shown["prequential_nmse"][t],
                    arm->stats().prequential_nmse(t));
    ExpectSameError(shown["honest_nmse"][t], arm->stats().honest_nmse(t));
  }

  // The curve: increasing sample counts an even step apart (every 16
  // samples although the samples came 250 at a time), then the model now,
  // with the errors it reports.
  const Json& curve = shown["curve"];
  EXPECT_EQ(curve["step"], 16);
  const std::vector<std::uint64_t> samples = curve["samples"];
  ASSERT_EQ(samples.size(), 1000u / 16 + 2);
  EXPECT_EQ(samples.front(), 1u);
  for (std::size_t i = 1; i + 1 < samples.size(); ++i) {
    EXPECT_EQ(samples[i], 16 * i) << i;
  }
  EXPECT_EQ(samples.back(), 1000u);
  for (int t = 0; t < 2; ++t) {
    ASSERT_EQ(curve["prequential_nmse"][t].size(), samples.size());
    ExpectSameError(curve["prequential_nmse"][t].back(),
                    arm->stats().prequential_nmse(t));
    ExpectSameError(curve["honest_nmse"][t].back(),
                    arm->stats().honest_nmse(t));
  }

  // The learned metric as GetMetric gives it, with its top directions.
  ASSERT_EQ(shown["learned_metrics"].size(), 1u);
  const Json& learned = shown["learned_metrics"][0];
  const v1::LearnedMetric& reported = metric->metrics(0);
  EXPECT_EQ(learned["scope"], "all targets");
  EXPECT_EQ(learned["kind"], "egop");
  ASSERT_EQ(learned["weights"].size(), Rows::kDim);
  ASSERT_EQ(learned["eigenvalues"].size(), Rows::kDim);
  ASSERT_EQ(learned["directions"].size(), Rows::kDim);
  for (std::size_t i = 0; i < Rows::kDim; ++i) {
    EXPECT_EQ(learned["weights"][i].get<double>(), reported.weights(i));
    EXPECT_EQ(learned["eigenvalues"][i].get<double>(), reported.eigenvalues(i));
    for (std::size_t r = 0; r < Rows::kDim; ++r) {
      EXPECT_EQ(learned["directions"][r][i].get<double>(),
                reported.eigenvectors(i * Rows::kDim + r));
    }
  }

  // The latency histograms of the methods called.
  bool ingest_seen = false;
  for (const Json& method : status["latency"]["methods"]) {
    if (method["method"] == "Ingest") {
      ingest_seen = true;
      EXPECT_EQ(method["count"], 2);
      EXPECT_EQ(method["cumulative"].size(),
                status["latency"]["bounds_seconds"].size());
    }
  }
  EXPECT_TRUE(ingest_seen) << status["latency"].dump();
}

// The intervals: the coverage over time adds up to the coverage GetModel
// reports, and the recent band is the last 200 samples with the
// predictions a model learning them one by one made for them just before.
TEST_F(StatusPageTest, ShowsTheIntervalsBandAndCoverageOverTime) {
  ASSERT_NO_FATAL_FAILURE(StartServer(true));
  constexpr std::size_t kSamples = 700;
  ASSERT_TRUE(client_->CreateModel("arm", RowsSpec()).ok());
  ASSERT_NO_FATAL_FAILURE(Ingest("arm", kSamples, 150));
  const absl::StatusOr<v1::Model> arm = client_->GetModel("arm");
  ASSERT_TRUE(arm.ok()) << arm.status();
  std::unique_ptr<streamreg::Model> reference =
      *streamreg::Model::Create(*ConfigFromSpec(RowsSpec()));
  const Rows rows(kSamples, 7);
  std::vector<Prediction> before;
  for (std::size_t i = 0; i < kSamples; ++i) {
    const Sample sample{rows.input(i), rows.target(i), 0};
    std::vector<Prediction> one;
    ASSERT_TRUE(reference->Learn({&sample, 1}, &one).ok());
    before.push_back(std::move(one.at(0)));
  }

  const Json status = Status();
  const Json& shown = Model(status, "arm");
  EXPECT_EQ(shown["interval"]["level"], 0.9);
  EXPECT_EQ(shown["answers"]["sent"], 0);
  const Json& curve = shown["curve"];
  const std::vector<std::uint64_t> samples = curve["samples"];
  for (std::size_t t = 0; t < Rows::kTargets; ++t) {
    const double coverage = arm->stats().interval_coverage(t);
    EXPECT_EQ(shown["interval"]["coverage"][t].get<double>(), coverage);
    EXPECT_EQ(shown["interval"]["half_width"][t].get<double>(),
              arm->stats().interval_half_width(t));
    // Ingested: no Learn answer sent, so none covered yet, and the next
    // gets the model's interval for the stream's next sample.
    EXPECT_TRUE(std::isnan(arm->stats().answer_interval_coverage(t)));
    EXPECT_TRUE(shown["interval"]["answer_coverage"][t].is_null());
    EXPECT_TRUE(shown["answers"]["nmse"][t].is_null());
    EXPECT_EQ(shown["interval"]["answer_half_width"][t].get<double>(),
              arm->stats().answer_interval_half_width(t));
    // Every sample is scored: each point's coverage is over the samples
    // since the point before, and they add up to the whole.
    const Json& over_time = curve["interval_coverage"][t];
    ASSERT_EQ(over_time.size(), samples.size());
    double covered = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double fraction = over_time[i].get<double>();
      EXPECT_GE(fraction, 0.0);
      EXPECT_LE(fraction, 1.0);
      covered += fraction * static_cast<double>(samples[i] -
                                                (i == 0 ? 0 : samples[i - 1]));
    }
    EXPECT_NEAR(covered, coverage * kSamples, 1e-6) << t;
  }

  const Json& recent = shown["recent"];
  const std::vector<std::uint64_t> recent_samples = recent["samples"];
  ASSERT_EQ(recent_samples.size(), 200u);
  for (std::size_t i = 0; i < recent_samples.size(); ++i) {
    const std::size_t sample = kSamples - 200 + i;  // from 0
    ASSERT_EQ(recent_samples[i], sample + 1);
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      EXPECT_EQ(recent["truth"][t][i].get<double>(), rows.target(sample)[t]);
      EXPECT_EQ(recent["value"][t][i].get<double>(), before[sample].value[t]);
      EXPECT_EQ(recent["lower"][t][i].get<double>(), before[sample].lower[t]);
      EXPECT_EQ(recent["upper"][t][i].get<double>(), before[sample].upper[t]);
    }
  }
}

TEST_F(StatusPageTest, DetailsOnlyTheModelsAskedFor) {
  ASSERT_NO_FATAL_FAILURE(StartServer(true));
  ASSERT_TRUE(client_->CreateModel("arm", RowsSpec()).ok());
  ASSERT_TRUE(client_->CreateModel("leg", RowsSpec()).ok());
  const Json status = Status("?detail=leg,nope");
  EXPECT_FALSE(Model(status, "arm").contains("curve"));
  EXPECT_FALSE(Model(status, "arm").contains("learned_metrics"));
  EXPECT_TRUE(Model(status, "leg").contains("curve"));
  EXPECT_TRUE(Model(status, "leg").contains("learned_metrics"));
  // A model that learned nothing has no point and no error yet.
  EXPECT_TRUE(Model(status, "leg")["curve"]["samples"].empty());
  EXPECT_TRUE(Model(status, "leg")["prequential_nmse"][0].is_null());
  const Json none = Status("?detail=");
  EXPECT_FALSE(Model(none, "leg").contains("curve"));
}

// The JSON inside the page's first-report element.
Json FirstReport(const std::string& page) {
  const std::string open =
      R"(<script id="first-report" type="application/json">)";
  const std::size_t start = page.find(open);
  if (start == std::string::npos) return {};
  const std::size_t end = page.find("</script>", start);
  if (end == std::string::npos) return {};
  return Json::parse(
      page.substr(start + open.size(), end - start - open.size()), nullptr,
      /*allow_exceptions=*/false);
}

TEST_F(StatusPageTest, ServesThePageFromTheBinary) {
  ASSERT_NO_FATAL_FAILURE(StartServer(true));
  ASSERT_TRUE(client_->CreateModel("arm", RowsSpec()).ok());
  const httplib::Result page = Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->get_header_value("Cache-Control"), "no-store");
  EXPECT_NE(page->body.find("<script src=\"/status.js\">"), std::string::npos);
  // The page comes with its first data: the report /api/status gives, the
  // one model detailed.
  const Json first = FirstReport(page->body);
  ASSERT_TRUE(first.is_object()) << page->body;
  ASSERT_EQ(first["models"].size(), 1u);
  EXPECT_EQ(first["models"][0]["name"], "arm");
  EXPECT_TRUE(first["models"][0].contains("curve"));
  EXPECT_EQ(first["models"][0]["targets"], Status()["models"][0]["targets"]);
  const httplib::Result script = Get("/status.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_EQ(script->get_header_value("Content-Type"),
            "text/javascript; charset=utf-8");
  EXPECT_NE(script->body.find("/api/status"), std::string::npos);
  // The script details as many models unasked as the first report does.
  EXPECT_NE(
      script->body.find(absl::StrCat(
          "const AUTO_SHOWN_MODELS = ", kStatusPageModelsDetailedUnasked, ";")),
      std::string::npos);
  const httplib::Result style = Get("/status.css");
  ASSERT_TRUE(style);
  EXPECT_EQ(style->get_header_value("Content-Type"), "text/css; charset=utf-8");
  // /metrics is still there.
  const httplib::Result metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

TEST_F(StatusPageTest, PastSixModelsTheFirstReportDetailsNone) {
  ASSERT_NO_FATAL_FAILURE(StartServer(true));
  for (std::size_t i = 0; i <= kStatusPageModelsDetailedUnasked; ++i) {
    ASSERT_TRUE(client_->CreateModel(absl::StrCat("m", i), RowsSpec()).ok());
  }
  const httplib::Result page = Get("/");
  ASSERT_TRUE(page);
  const Json first = FirstReport(page->body);
  ASSERT_EQ(first["models"].size(), kStatusPageModelsDetailedUnasked + 1);
  for (const Json& model : first["models"]) {
    EXPECT_FALSE(model.contains("curve")) << model["name"];
  }
}

TEST_F(StatusPageTest, TurnedOffServesNoPageAndNoData) {
  ASSERT_NO_FATAL_FAILURE(StartServer(false));
  const httplib::Result root = Get("/");
  ASSERT_TRUE(root);
  EXPECT_NE(root->body.find("--status_page=false"), std::string::npos);
  for (const char* path : {"/api/status", "/status.js", "/status.css"}) {
    const httplib::Result response = Get(path);
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 404) << path;
  }
}

}  // namespace
}  // namespace streamreg
