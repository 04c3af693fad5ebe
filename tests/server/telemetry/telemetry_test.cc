// Prometheus metrics: a server's /metrics scraped over HTTP and parsed — every
// RPC counted by method and status, the model families equal to what GetModel
// and the journal report, and the endpoint's errors.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "common/normalized_error.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "server/rpc/server.h"
#include "server/telemetry/latency_histogram.h"
#include "server/telemetry/metrics_http_server.h"
#include "tests/support/metrics_port_test.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

// A scrape, parsed: every sample line by its series ("name{labels}" as
// written), checking the format on the way — each sample belongs to a family
// declared by # HELP and # TYPE before it, no family is declared twice, and
// every line has the sample syntax.
struct Scrape {
  std::map<std::string, double> series;
  std::map<std::string, std::string> family_types;

  static Scrape Parse(const std::string& text) {
    Scrape scrape;
    std::istringstream lines(text);
    std::string line, family;
    while (std::getline(lines, line)) {
      if (line.rfind("# HELP ", 0) == 0) continue;
      if (line.rfind("# TYPE ", 0) == 0) {
        std::istringstream fields(line.substr(7));
        std::string type, rest;
        fields >> family >> type;
        EXPECT_TRUE(IsName(family) && !(fields >> rest)) << line;
        EXPECT_TRUE(type == "counter" || type == "gauge" ||
                    type == "histogram" || type == "summary")
            << line;
        EXPECT_TRUE(scrape.family_types.emplace(family, type).second)
            << family << " declared twice";
        continue;
      }
      std::size_t end = 0;
      double value = 0;
      if (!ParseSample(line, &end, &value)) {
        ADD_FAILURE() << "not a sample line: " << line;
        continue;
      }
      EXPECT_EQ(line.rfind(family, 0), 0u)
          << line << " outside its family (" << family << ")";
      scrape.series[line.substr(0, end)] = value;
    }
    return scrape;
  }

  static bool IsNameCharacter(char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
           c == ':' || (!first && std::isdigit(static_cast<unsigned char>(c)));
  }
  static bool IsName(const std::string& name) {
    for (std::size_t i = 0; i < name.size(); ++i) {
      if (!IsNameCharacter(name[i], i == 0)) return false;
    }
    return !name.empty();
  }

  // name{label="value",...} value — the grammar of a sample line; `end` is
  // where the series ends, `value` the number (NaN, +Inf, -Inf or a float).
  static bool ParseSample(const std::string& line, std::size_t* end,
                          double* value) {
    std::size_t i = 0;
    while (i < line.size() && IsNameCharacter(line[i], i == 0)) ++i;
    if (i == 0) return false;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t label = i;
        while (i < line.size() && IsNameCharacter(line[i], i == label) &&
               line[i] != ':') {
          ++i;
        }
        if (i == label || line.compare(i, 2, "=\"") != 0) return false;
        for (i += 2; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] == '\\') {
            if (++i == line.size() ||
                (line[i] != '\\' && line[i] != '"' && line[i] != 'n')) {
              return false;
            }
          }
        }
        if (i++ == line.size()) return false;  // past the closing quote
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i++ == line.size()) return false;  // past the '}'
    }
    if (i == line.size() || line[i] != ' ') return false;
    *end = i;
    const std::string number = line.substr(i + 1);
    if (number == "NaN") {
      *value = std::nan("");
    } else if (number == "+Inf" || number == "-Inf") {
      *value =
          (number[0] == '-' ? -1 : 1) * std::numeric_limits<double>::infinity();
    } else {
      char* parsed_end = nullptr;
      *value = std::strtod(number.c_str(), &parsed_end);
      if (number.empty() || number[0] == ' ' || *parsed_end != '\0' ||
          std::isnan(*value) || std::isinf(*value)) {
        return false;
      }
    }
    return true;
  }

  // The value of a series; fails (and returns NaN) if it is missing.
  double operator[](const std::string& series_key) const {
    auto it = series.find(series_key);
    EXPECT_NE(it, series.end()) << series_key << " missing";
    return it == series.end() ? std::nan("") : it->second;
  }
};

TEST(ScrapeParserTest, TakesTheSampleGrammarAndNothingElse) {
  std::size_t end = 0;
  double value = 0;
  for (const char* good :
       {"a 1", "a_b:c{x=\"1\"} -2.5e-3", "a{x=\"q\\\"\\\\\\n\",y=\"\"} NaN",
        "a{x=\"1\",} +Inf"}) {
    EXPECT_TRUE(Scrape::ParseSample(good, &end, &value)) << good;
  }
  for (const char* bad :
       {"", "1a 1", "a", "a  1", "a 1x", "a{x=1} 1", "a{x=\"1} 1",
        "a{x=\"\\q\"} 1", "a{1x=\"1\"} 1", "a{x=\"1\" 1", "a inf"}) {
    EXPECT_FALSE(Scrape::ParseSample(bad, &end, &value)) << bad;
  }
  ASSERT_TRUE(Scrape::ParseSample("a{x=\"1\"} 7", &end, &value));
  EXPECT_EQ(end, 8u);
  EXPECT_EQ(value, 7);
}

std::string Rpc(const std::string& family, const std::string& service,
                const std::string& method, const std::string& type,
                const std::string& code = "") {
  std::string key =
      absl::StrCat(family, "{grpc_service=\"streamreg.v1.", service,
                   "\",grpc_method=\"", method, "\",grpc_type=\"", type, "\"");
  if (!code.empty()) absl::StrAppend(&key, ",grpc_code=\"", code, "\"");
  return key + "}";
}

class MetricsEndpointTest : public MetricsPortTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartServer()); }

  Scrape ScrapeMetrics() {
    httplib::Result response = Get("/metrics");
    EXPECT_TRUE(response) << httplib::to_string(response.error());
    if (!response) return {};
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->get_header_value("Content-Type"),
              "text/plain; version=0.0.4; charset=utf-8");
    return Scrape::Parse(response->body);
  }

  void Ingest(const std::string& model, std::size_t n) {
    std::unique_ptr<Ingester> ingester = client_->StartIngest(model);
    const Rows rows(n, 7);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
    }
    ASSERT_TRUE(ingester->Finish().ok());
  }

  // `n` rows streamed through a Learn call, as a robot does; the answers'
  // error as this client counts them.
  NormalizedError Learn(const std::string& model, std::size_t n,
                        std::uint64_t seed) {
    NormalizedError received(Rows::kTargets);
    std::unique_ptr<LearnSession> session = client_->StartLearn(model);
    const Rows rows(n, seed);
    for (std::size_t i = 0; i < n; ++i) {
      absl::StatusOr<v1::LearnResponse> answer =
          session->Learn(rows.input(i), rows.target(i));
      EXPECT_TRUE(answer.ok()) << answer.status();
      if (!answer.ok()) break;
      received.Add(PredictedValues(answer->prediction()), rows.target(i));
    }
    EXPECT_TRUE(session->Close().ok());
    return received;
  }
};

TEST_F(MetricsEndpointTest, CountsEveryRpcByMethodAndStatus) {
  ASSERT_TRUE(client_->CreateModel("arm", RowsSpec()).ok());
  Ingest("arm", 100);
  const Rows rows(4, 9);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client_->Predict("arm", rows.inputs(0, 2), Rows::kDim).ok());
  }
  EXPECT_EQ(
      client_->Predict("nope", rows.inputs(0, 1), Rows::kDim).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->Predict("arm", rows.inputs(0, 2), 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string per_message_count =
      "streamreg_stream_message_handling_seconds_count{grpc_service="
      "\"streamreg.v1.RegressionService\",grpc_method=\"PredictStream\","
      "grpc_type=\"bidi_stream\"}";
  {
    PredictSession session(client_.get(), "arm");
    for (std::size_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(session.Predict(rows.input(i)).ok());
    }
    // Each message answered is counted while the stream is still open.
    EXPECT_EQ(ScrapeMetrics()[per_message_count], 4);
    ASSERT_TRUE(session.Close().ok());
  }
  ASSERT_TRUE(client_->Health().ok());

  const Scrape scrape = ScrapeMetrics();
  const auto unary = [&](const std::string& family, const char* service,
                         const char* method, const std::string& code = "") {
    return scrape[Rpc(family, service, method, "unary", code)];
  };
  EXPECT_EQ(unary("grpc_server_started_total", "RegressionService", "Predict"),
            5);
  EXPECT_EQ(
      unary("grpc_server_handled_total", "RegressionService", "Predict", "OK"),
      3);
  EXPECT_EQ(unary("grpc_server_handled_total", "RegressionService", "Predict",
                  "NOT_FOUND"),
            1);
  EXPECT_EQ(unary("grpc_server_handled_total", "RegressionService", "Predict",
                  "INVALID_ARGUMENT"),
            1);
  // Codes never seen are left out (but OK is always there).
  EXPECT_EQ(
      scrape.series.count(Rpc("grpc_server_handled_total", "RegressionService",
                              "Predict", "unary", "INTERNAL")),
      0u);
  EXPECT_EQ(
      unary("grpc_server_handled_total", "ModelService", "DeleteModel", "OK"),
      0);
  EXPECT_EQ(
      unary("grpc_server_msg_received_total", "RegressionService", "Predict"),
      5);
  EXPECT_EQ(unary("grpc_server_msg_sent_total", "RegressionService", "Predict"),
            3);
  EXPECT_EQ(unary("grpc_server_handling_seconds_count", "RegressionService",
                  "Predict"),
            5);
  EXPECT_EQ(
      unary("grpc_server_handled_total", "ModelService", "CreateModel", "OK"),
      1);
  const std::string stream = "bidi_stream";
  EXPECT_EQ(scrape[Rpc("grpc_server_started_total", "RegressionService",
                       "PredictStream", stream)],
            1);
  EXPECT_EQ(scrape[Rpc("grpc_server_msg_received_total", "RegressionService",
                       "PredictStream", stream)],
            4);
  EXPECT_EQ(scrape[Rpc("grpc_server_msg_sent_total", "RegressionService",
                       "PredictStream", stream)],
            4);
  EXPECT_EQ(scrape[Rpc("grpc_server_handled_total", "RegressionService",
                       "PredictStream", stream, "OK")],
            1);
  EXPECT_EQ(scrape[Rpc("grpc_server_handled_total", "RegressionService",
                       "Ingest", "client_stream", "OK")],
            1);
  EXPECT_EQ(scrape["grpc_server_handled_total{grpc_service=\"grpc.health.v1."
                   "Health\",grpc_method=\"Check\",grpc_type=\"unary\","
                   "grpc_code=\"OK\"}"],
            1);

  // The Predict histogram: cumulative, ending in +Inf = _count.
  const std::string prefix =
      "grpc_server_handling_seconds_bucket{grpc_service=\"streamreg.v1."
      "RegressionService\",grpc_method=\"Predict\",grpc_type=\"unary\",le=\"";
  double previous = 0;
  for (double bound : LatencyHistogram::kBounds) {
    const auto it = std::find_if(
        scrape.series.begin(), scrape.series.end(), [&](const auto& entry) {
          return entry.first.rfind(prefix, 0) == 0 &&
                 entry.first != prefix + "+Inf\"}" &&
                 std::stod(entry.first.substr(prefix.size())) == bound;
        });
    ASSERT_NE(it, scrape.series.end()) << "no bucket le=" << bound;
    EXPECT_GE(it->second, previous) << "le=" << bound;
    previous = it->second;
  }
  EXPECT_EQ(scrape[prefix + "+Inf\"}"], 5);
  EXPECT_GE(scrape[prefix + "+Inf\"}"], previous);
  EXPECT_EQ(scrape.family_types.at("grpc_server_handling_seconds"),
            "histogram");
  EXPECT_EQ(scrape[per_message_count], 4);
  EXPECT_EQ(scrape.family_types.at("streamreg_stream_message_handling_seconds"),
            "histogram");
  // Only the bidirectional streams have per-message figures.
  EXPECT_EQ(scrape.series.count(
                "streamreg_stream_message_handling_seconds_count{grpc_service="
                "\"streamreg.v1.RegressionService\",grpc_method=\"Predict\","
                "grpc_type=\"unary\"}"),
            0u);
}

TEST_F(MetricsEndpointTest, ModelFamiliesEqualWhatTheModelReports) {
  ASSERT_TRUE(client_->CreateModel("arm", RowsSpec()).ok());
  ASSERT_TRUE(client_->CreateModel("leg", RowsSpec()).ok());
  Ingest("arm", 100);
  const NormalizedError received = Learn("arm", 300, 8);
  Ingest("leg", 50);
  absl::StatusOr<v1::Model> arm = client_->GetModel("arm");
  ASSERT_TRUE(arm.ok()) << arm.status();
  // (The scrape reads the models as they stand: leg's 50 learned first.)
  ASSERT_TRUE(client_->GetModel("leg").ok());
  const std::uint64_t wal_bytes =
      (*server_->registry().Find("arm"))->journal()->bytes_appended();

  Scrape scrape = ScrapeMetrics();
  EXPECT_EQ(scrape["streamreg_models"], 2);
  EXPECT_EQ(scrape["streamreg_model_samples_seen_total{model=\"arm\"}"], 400);
  EXPECT_EQ(scrape["streamreg_model_samples_seen_total{model=\"leg\"}"], 50);
  EXPECT_EQ(scrape["streamreg_model_samples_stored{model=\"arm\"}"],
            arm->stats().num_stored());
  // GetModel caught up: nothing waits, and learning has not failed.
  for (const char* family :
       {"streamreg_model_learn_lag_samples",
        "streamreg_model_learn_lag_seconds", "streamreg_model_failed"}) {
    const std::string series = absl::StrCat(family, "{model=\"arm\"}");
    ASSERT_EQ(scrape.series.count(series), 1u) << series;
    EXPECT_EQ(scrape[series], 0) << series;
  }
  EXPECT_EQ(scrape["streamreg_model_index_rebuilds_total{model=\"arm\"}"],
            arm->stats().index_rebuilds());
  EXPECT_EQ(scrape["streamreg_model_metric_refreshes_total{model=\"arm\"}"],
            arm->stats().metric_refreshes());
  const char* targets[] = {"wave", "square"};
  for (int t = 0; t < 2; ++t) {
    // Exactly: the text spells each double so it parses back to itself.
    EXPECT_EQ(scrape[absl::StrCat(
                  "streamreg_model_prequential_nmse{model=\"arm\",target=\"",
                  targets[t], "\"}")],
              arm->stats().prequential_nmse(t));
    EXPECT_EQ(scrape[absl::StrCat(
                  "streamreg_model_prequential_mse{model=\"arm\",target=\"",
                  targets[t], "\"}")],
              arm->stats().prequential_mse(t));
    // 400 samples, 200 of them past the honest lag: known, and not the
    // prequential figure.
    const double honest = scrape[absl::StrCat(
        "streamreg_model_honest_nmse{model=\"arm\",target=\"", targets[t],
        "\"}")];
    EXPECT_EQ(honest, arm->stats().honest_nmse(t));
    EXPECT_NE(honest, arm->stats().prequential_nmse(t));
    EXPECT_EQ(scrape[absl::StrCat(
                  "streamreg_model_honest_mse{model=\"arm\",target=\"",
                  targets[t], "\"}")],
              arm->stats().honest_mse(t));
    // The intervals: the honest predictions' coverage near the level, and
    // the half width at it.
    const double coverage = scrape[absl::StrCat(
        "streamreg_model_interval_coverage{model=\"arm\",target=\"", targets[t],
        "\"}")];
    EXPECT_EQ(coverage, arm->stats().interval_coverage(t));
    EXPECT_NEAR(coverage, 0.9, 0.1);
    const double half_width = scrape[absl::StrCat(
        "streamreg_model_interval_half_width{model=\"arm\",target=\"",
        targets[t], "\"}")];
    EXPECT_EQ(half_width, arm->stats().interval_half_width(t));
    EXPECT_GT(half_width, 0.0);
    // And the Learn answers', calibrated on the answers sent: their
    // coverage as sent, and their error as this client counted it.
    const double answers = scrape[absl::StrCat(
        "streamreg_model_answer_interval_coverage{model=\"arm\",target=\"",
        targets[t], "\"}")];
    EXPECT_EQ(answers, arm->stats().answer_interval_coverage(t));
    EXPECT_NEAR(answers, 0.9, 0.1);
    const double answer_nmse = scrape[absl::StrCat(
        "streamreg_model_answer_nmse{model=\"arm\",target=\"", targets[t],
        "\"}")];
    EXPECT_EQ(answer_nmse, arm->stats().answer_nmse(t));
    EXPECT_DOUBLE_EQ(answer_nmse, received.Nmse(t));
    EXPECT_DOUBLE_EQ(
        scrape[absl::StrCat("streamreg_model_answer_mse{model=\"arm\","
                            "target=\"",
                            targets[t], "\"}")],
        received.MeanSquaredError(t));
    EXPECT_EQ(scrape[absl::StrCat("streamreg_model_answer_recent_nmse{model="
                                  "\"arm\",target=\"",
                                  targets[t], "\"}")],
              arm->stats().answer_recent_nmse(t));
    EXPECT_EQ(scrape[absl::StrCat("streamreg_model_answer_interval_half_width{"
                                  "model=\"arm\",target=\"",
                                  targets[t], "\"}")],
              arm->stats().answer_interval_half_width(t));
  }
  EXPECT_EQ(scrape["streamreg_model_answers_sent_total{model=\"arm\"}"], 300);
  EXPECT_EQ(arm->stats().answers_sent(), 300u);
  EXPECT_EQ(scrape["streamreg_model_answers_sent_total{model=\"leg\"}"], 0);
  EXPECT_EQ(scrape["streamreg_model_wal_bytes_total{model=\"arm\"}"],
            wal_bytes);
  EXPECT_GT(wal_bytes, 400u * 5 * sizeof(double));  // 5 numbers a sample
  EXPECT_EQ(scrape["streamreg_model_samples_since_snapshot{model=\"arm\"}"],
            400);
  const double age =
      scrape["streamreg_model_snapshot_age_seconds{model=\"arm\"}"];
  EXPECT_GE(age, 0.0);
  EXPECT_LT(age, 120.0);
  // --sync=always: each Ingest message and each create record fsynced.
  EXPECT_GE(scrape["streamreg_wal_fsync_duration_seconds_count"], 2);
  EXPECT_GT(scrape["streamreg_wal_fsync_duration_seconds_sum"], 0.0);
  EXPECT_GT(scrape["process_resident_memory_bytes"], 1 << 20);
  EXPECT_GT(scrape["process_open_fds"], 0);
  EXPECT_EQ(scrape.family_types.at("streamreg_model_index_rebuild_duration_"
                                   "seconds"),
            "summary");

  // A deleted model's series go with it.
  ASSERT_TRUE(client_->DeleteModel("leg").ok());
  scrape = ScrapeMetrics();
  EXPECT_EQ(scrape["streamreg_models"], 1);
  EXPECT_EQ(
      scrape.series.count("streamreg_model_samples_seen_total{model=\"leg\"}"),
      0u);
}

TEST_F(MetricsEndpointTest, AnUnknownMethodAddsNoSeries) {
  grpc::GenericStub stub(grpc::CreateChannel(
      server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  grpc::Slice empty("");
  const grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  std::mutex mutex;
  std::condition_variable done_signal;
  bool done = false;
  stub.UnaryCall(&context, "/streamreg.v1.Nope/Guess", {}, &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard lock(mutex);
                   status = std::move(s);
                   done = true;
                   done_signal.notify_one();
                 });
  {
    std::unique_lock lock(mutex);
    done_signal.wait(lock, [&] { return done; });
  }
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  const Scrape scrape = ScrapeMetrics();
  for (const auto& [series, value] : scrape.series) {
    EXPECT_EQ(series.find("Nope"), std::string::npos) << series;
    EXPECT_EQ(series.find("Guess"), std::string::npos) << series;
  }
}

TEST_F(MetricsEndpointTest, OtherPathsAre404AndBadAddressesAreRefused) {
  httplib::Result missing = Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  httplib::Result root = Get("/");
  ASSERT_TRUE(root);
  EXPECT_NE(root->body.find("/metrics"), std::string::npos);

  const auto start = [](const std::string& listen) {
    return MetricsHttpServer::Start(listen, [] { return std::string(); })
        .status();
  };
  const absl::Status taken = start(server_->metrics_address());
  EXPECT_EQ(taken.code(), absl::StatusCode::kUnavailable) << taken;
  EXPECT_NE(
      taken.message().find("--metrics_listen " + server_->metrics_address()),
      absl::string_view::npos)
      << taken;
  for (const char* bad :
       {"9464", ":9464", "localhost:99999", "host:port", "127.0.0.1:"}) {
    const absl::Status status = start(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("expected HOST:PORT"),
              absl::string_view::npos)
        << status;
  }
  // And a server whose metrics port is taken does not start.
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = server_->metrics_address();
  options.data_dir = scratch_ + "/second";
  EXPECT_EQ(Server::Start(std::move(options)).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace streamreg
