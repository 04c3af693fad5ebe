// The gRPC service in process, through the C++ client library, as a whole
// (each call's own behaviour: learn_reactor_test, ingest_reactor_test,
// refit_reactor_test, model_service_test): pings, local sockets, every
// error status with the field it names and with nothing changed, overload
// and limits, a failing disk, a restart serving exactly what it
// acknowledged, concurrent streams during index rebuilds, cancellation,
// deadlines and a graceful drain.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "common/normalized_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/ahead_errors.h"
#include "server/hosting/answer_errors.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/request_limits.h"
#include "server/rpc/server.h"
#include "server/rpc/spec_conversion.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/service_fixture.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// The transport baselines of `streamreg bench`: answered at once, unary and
// one response per request on a stream, with no model needed.
TEST_F(ServiceTest, PingAndPingStreamAnswerEveryRequest) {
  grpc::ClientContext unary_context;
  v1::PingResponse response;
  EXPECT_TRUE(client_->regression()
                  .Ping(&unary_context, v1::PingRequest(), &response)
                  .ok());
  grpc::ClientContext stream_context;
  auto stream = client_->regression().PingStream(&stream_context);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(stream->Write(v1::PingRequest())) << i;
    ASSERT_TRUE(stream->Read(&response)) << i;
  }
  stream->WritesDone();
  EXPECT_FALSE(stream->Read(&response));  // nothing unasked for
  EXPECT_TRUE(stream->Finish().ok());
}

// A server given a local socket (`--listen unix:PATH`) reports that
// address, the one its clients dial, and answers there.
TEST_F(ServiceTest, AServerOnALocalSocketNamesItAndAnswersThere) {
  directories_.push_back(FreshDirectory());
  const std::string socket = "unix:" + directories_.back() + "/streamreg.sock";
  ServerOptions options;
  options.listen = socket;
  options.data_dir = directories_.back() + "/data";
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->address(), socket);
  Client client(TestClientOptions(**server));
  absl::StatusOr<std::string> health = client.Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");
  EXPECT_TRUE(client.CreateModel("local", RowsSpec()).ok());
}

// --local_socket: the same server on its TCP port and on a local socket
// (a controller on the same machine dials unix:PATH); a socket it cannot
// make stops the start, naming the flag.
TEST_F(ServiceTest, AServerServesALocalSocketBesideItsPort) {
  directories_.push_back(FreshDirectory());
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.local_socket = directories_.back() + "/streamreg.sock";
  options.data_dir = directories_.back() + "/data";
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->local_socket_address(),
            "unix:" + directories_.back() + "/streamreg.sock");
  Client tcp(TestClientOptions(**server));
  ClientOptions local_options = TestClientOptions(**server);
  local_options.address = (*server)->local_socket_address();
  Client local(local_options);
  ASSERT_TRUE(local.CreateModel("both", RowsSpec()).ok());
  absl::StatusOr<v1::Model> seen = tcp.GetModel("both");
  ASSERT_TRUE(seen.ok()) << seen.status();

  ServerOptions unmakeable;
  unmakeable.listen = "127.0.0.1:0";
  unmakeable.local_socket = directories_.back() + "/no/such/dir/s.sock";
  unmakeable.data_dir = directories_.back() + "/data2";
  absl::StatusOr<std::unique_ptr<Server>> refused =
      Server::Start(std::move(unmakeable));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("--local_socket"));
}

TEST_F(ServiceTest, BadInputGetsTheRightStatusNamesTheFieldAndChangesNothing) {
  const Rows rows(100, 5);
  CreateAndIngest("m", rows, 50);
  auto expect_error = [&](const v1::IngestRequest& request,
                          absl::StatusCode code, const std::string& message) {
    v1::IngestResponse response;
    const absl::Status status = Ingest(request, &response);
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(status.message(), HasSubstr(message));
    EXPECT_EQ(NumSamples("m"), 50u);
  };
  auto batch = [&](std::size_t n) {
    v1::IngestRequest request;
    request.set_model("m");
    for (std::size_t i = 0; i < n; ++i) {
      v1::Sample& sample = *request.add_samples();
      sample.mutable_x()->Assign(rows.input(50 + i).begin(),
                                 rows.input(50 + i).end());
      sample.mutable_y()->Assign(rows.target(50 + i).begin(),
                                 rows.target(50 + i).end());
    }
    return request;
  };
  v1::IngestRequest wrong_dim = batch(5);
  wrong_dim.mutable_samples(3)->add_x(1.0);
  expect_error(wrong_dim, absl::StatusCode::kInvalidArgument,
               "message 0: samples[3].x: has 4 values");
  v1::IngestRequest nan = batch(5);
  nan.mutable_samples(2)->set_x(1, std::nan(""));
  expect_error(nan, absl::StatusCode::kInvalidArgument,
               "message 0: samples[2].x[1]: NaN");
  v1::IngestRequest inf = batch(5);
  inf.mutable_samples(4)->set_y(0, std::numeric_limits<double>::infinity());
  expect_error(inf, absl::StatusCode::kInvalidArgument, "samples[4].y[0]");
  v1::IngestRequest wrong_targets = batch(2);
  wrong_targets.mutable_samples(1)->clear_y();
  expect_error(wrong_targets, absl::StatusCode::kInvalidArgument,
               "samples[1].y");
  expect_error(batch(0), absl::StatusCode::kInvalidArgument,
               "message 0: samples: empty batch");
  v1::IngestRequest no_model = batch(1);
  no_model.clear_model();
  expect_error(no_model, absl::StatusCode::kInvalidArgument,
               "message 0: model: empty");
  v1::IngestRequest unknown = batch(1);
  unknown.set_model("nope");
  expect_error(unknown, absl::StatusCode::kNotFound, "model 'nope' not found");

  // A bad second message: the first is learned, the error says so.
  {
    grpc::ClientContext context;
    v1::IngestResponse response;
    auto writer = client_->regression().Ingest(&context, &response);
    writer->Write(batch(3));
    writer->Write(nan);
    writer->WritesDone();
    const absl::Status status = FromGrpcStatus(writer->Finish());
    EXPECT_THAT(status.message(),
                HasSubstr("message 1: samples[2].x[1]: NaN (1 earlier "
                          "messages were learned: 3 samples)"));
    EXPECT_EQ(NumSamples("m"), 53u);
  }

  // Model management errors.
  v1::ModelSpec spec = RowsSpec();
  EXPECT_EQ(client_->CreateModel("m", spec).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(client_->CreateModel("", spec).status().message(),
              HasSubstr("name: empty"));
  EXPECT_THAT(client_->CreateModel("a/b", spec).status().message(),
              HasSubstr("name: 'a/b' may contain only"));
  spec.set_input_dim(0);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.input_dim"));
  spec = RowsSpec();
  spec.mutable_tuning()->set_step_ratio(-1);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.step_ratio"));
  spec = RowsSpec();
  spec.mutable_tuning()->set_gradient_estimator(
      static_cast<v1::GradientEstimator>(7));
  EXPECT_EQ(client_->CreateModel("x", spec).status().message(),
            "spec.tuning.gradient_estimator: unknown value 7");
  spec.mutable_tuning()->set_gradient_estimator(
      v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES);
  absl::StatusOr<v1::Model> papers = client_->CreateModel("papers", spec);
  ASSERT_TRUE(papers.ok()) << papers.status();
  EXPECT_EQ(papers->spec().tuning().gradient_estimator(),
            v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES);
  spec = RowsSpec();
  spec.set_linear_base(true);
  spec.mutable_tuning()->set_base_forgetting(0);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.base_forgetting"));
  spec.mutable_tuning()->clear_base_forgetting();
  spec.mutable_tuning()->set_base_ridge(-1);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.base_ridge"));
  spec.mutable_tuning()->clear_base_ridge();
  spec.mutable_tuning()->set_base_relative_ridge(-0.5);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.tuning.base_relative_ridge"));
  spec = RowsSpec();
  spec.set_linear_base(true);
  spec.set_input_dim(300);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.linear_base: needs input_dim <= 256"));
  // Unset, the base is on only where the inputs allow it.
  spec.clear_linear_base();
  absl::StatusOr<v1::Model> wide = client_->CreateModel("wide", spec);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_FALSE(wide->spec().linear_base());
  ASSERT_TRUE(client_->DeleteModel("wide").ok());
  spec = RowsSpec();
  spec.add_k_grid(5);
  spec.add_k_grid(3);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.k_grid[1]"));
  spec = RowsSpec();
  spec.set_metric(static_cast<v1::Metric>(42));
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.metric: unknown value 42"));
  EXPECT_EQ(client_->GetModel("x").status().code(),
            absl::StatusCode::kNotFound);
  for (absl::Status status :
       {client_->GetModel("nope").status(), client_->DeleteModel("nope"),
        client_->GetMetric("nope").status(), client_->Refit("nope").status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  }

  // Predictions.
  ASSERT_TRUE(client_->CreateModel("empty", RowsSpec()).ok());
  EXPECT_EQ(client_->Predict("empty", rows.input(0), 3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client_->Predict("nope", rows.input(0), 3).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(client_->Predict("", rows.input(0), 3).status().message(),
              HasSubstr("model: empty"));
  v1::PredictRequest bad_query;
  bad_query.set_model("m");
  bad_query.add_queries()->add_x(1.0);
  grpc::ClientContext context;
  v1::PredictResponse response;
  const absl::Status status = FromGrpcStatus(
      client_->regression().Predict(&context, bad_query, &response));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("queries[0].x: has 1 values"));
}

// Every field whose size makes the server allocate is bounded, and the
// error names the field: counts per message (samples, queries, grids),
// dimensions, and the lengths of names.
// The trailer an overloaded server's refusal carries, or "" (the client
// context of a finished call).
std::string PushbackOf(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find("grpc-retry-pushback-ms");
  return found == trailers.end()
             ? ""
             : std::string(found->second.data(), found->second.size());
}

// A refusal for overload: RESOURCE_EXHAUSTED saying `text`, with the
// standard retry trailer.
void ExpectOverloaded(const absl::Status& refused,
                      const grpc::ClientContext& context,
                      absl::string_view text) {
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()), HasSubstr(std::string(text)));
  EXPECT_EQ(PushbackOf(context), "100");
}

// Writes `request` on a bidi stream that must end without answering it:
// the status it ends with.
template <class Response, class Stream, class Request>
absl::Status RefusedAtOnce(Stream& stream, const Request& request) {
  Response response;
  EXPECT_TRUE(stream.Write(request));
  EXPECT_FALSE(stream.Read(&response));
  return FromGrpcStatus(stream.Finish());
}

// Past the limits on queued samples and predictions in flight, each kind
// of call is refused at once with RESOURCE_EXHAUSTED naming the limit and
// the standard retry trailer, and changes nothing; what was admitted goes
// on and is learned.
TEST_F(ServiceTest, OverloadIsRefusedAtOnceWithTheLimitNamedAndARetryHint) {
  ServerOptions options;
  options.limits.max_queued_samples_per_model = 10;
  options.limits.max_queued_samples = 15;
  options.limits.max_predictions_in_flight_per_model = 1;
  options.limits.max_predictions_in_flight = 2;
  StartServer(options);
  const Rows rows(100, 5);
  for (const char* name : {"m", "n", "o"}) CreateAndIngest(name, rows, 20);
  std::shared_ptr<HostedModel> m = *server_->registry().Find("m");
  std::shared_ptr<HostedModel> n = *server_->registry().Find("n");

  // m's write queue is held: a batch of 8 is admitted and waits there.
  HeldWrites held(*m);
  std::thread admitted = AdmitHeldBatch(rows, *m);
  ASSERT_EQ(m->queued_samples().held(), 8u);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);

  {  // 8 more for m would pass its 10
    grpc::ClientContext context;
    const absl::Status refused = IngestIn(context, BatchOf(rows, "m", 28));
    ExpectOverloaded(
        refused, context,
        "message 0: overloaded: 8 samples queued for model 'm', 8 more "
        "would pass 10 (--max-queued-samples-per-model); retry in 100 "
        "ms");
  }
  {  // 8 for n pass n's limit, not the server's 15
    grpc::ClientContext context;
    const absl::Status refused = IngestIn(context, BatchOf(rows, "n", 20));
    ExpectOverloaded(refused, context,
                     "8 samples queued on the server, 8 more would pass "
                     "15 (--max-queued-samples)");
  }
  v1::LearnRequest learn;
  learn.set_model("m");
  *learn.mutable_sample() = BatchOf(rows, "m", 40).samples(0);
  {  // the server's limit refuses a Learn sample (n's share takes the rest)
    absl::StatusOr<AdmissionTicket> rest =
        server_->registry().AdmitSamples(*n, 7);
    ASSERT_TRUE(rest.ok());
    grpc::ClientContext context;
    auto stream = client_->regression().Learn(&context);
    const absl::Status refused =
        RefusedAtOnce<v1::LearnResponse>(*stream, learn);
    ExpectOverloaded(refused, context,
                     "message 0: overloaded: 15 samples queued on the server, "
                     "1 more would pass 15 (--max-queued-samples)");
  }
  {  // /metrics shows what the gates hold and what each refused
    const std::string metrics = server_->RenderMetrics();
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_queued_samples 8\n"));
    EXPECT_THAT(metrics,
                HasSubstr("\nstreamreg_model_queued_samples{model=\"m\"} 8\n"));
    EXPECT_THAT(metrics,
                HasSubstr("\nstreamreg_model_queued_samples{model=\"n\"} 0\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_overload_refusals_total{limit="
                                   "\"max_queued_samples\"} 2\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_model_overload_refusals_total{"
                                   "model=\"m\"} 1\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_model_overload_refusals_total{"
                                   "model=\"n\"} 0\n"));
  }
  // With m's own share full, a Learn sample on m is still admitted (a
  // stream holds one at a time), and is learned ahead of the batch queued
  // before it: sequence 21 (answered once durable, so the answer says).
  absl::StatusOr<AdmissionTicket> m_full =
      server_->registry().AdmitSamples(*m, 2);
  ASSERT_TRUE(m_full.ok());
  std::thread learner([&] {
    grpc::ClientContext context;
    auto stream = client_->regression().Learn(&context);
    v1::LearnResponse response;
    v1::LearnRequest cautious = learn;
    cautious.set_answer_when_durable(true);
    EXPECT_TRUE(stream->Write(cautious));
    EXPECT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.sequence(), 21u);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  });
  while (server_->registry().queued_samples().held() < 11 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(server_->registry().queued_samples().held(), 11u);
  m_full->Release();
  held.Release();
  admitted.join();
  learner.join();
  // The admitted batch and sample, nothing refused.
  EXPECT_EQ(NumSamples("m"), 29u);
  EXPECT_EQ(NumSamples("n"), 20u);
  EXPECT_EQ(m->queued_samples().held(), 0u);
  EXPECT_EQ(server_->registry().queued_samples().held(), 0u);

  // Predictions in flight, held as a Predict being answered holds them:
  // one on m, and m refuses the next; n answers (the server's 2 not
  // passed); with one on n as well, the server refuses one on o.
  auto predict = [this, &rows](const std::string& model,
                               grpc::ClientContext& context) {
    v1::PredictRequest request;
    request.set_model(model);
    request.add_queries()->mutable_x()->Assign(rows.input(0).begin(),
                                               rows.input(0).end());
    v1::PredictResponse response;
    return FromGrpcStatus(
        client_->regression().Predict(&context, request, &response));
  };
  absl::StatusOr<AdmissionTicket> on_m =
      server_->registry().AdmitPrediction(*m);
  ASSERT_TRUE(on_m.ok());
  {
    grpc::ClientContext context;
    const absl::Status refused = predict("m", context);
    ExpectOverloaded(
        refused, context,
        "overloaded: 1 reads in flight on model 'm', 1 more would "
        "pass 1 (--max-predictions-in-flight-per-model); retry in 100 "
        "ms");
  }
  auto get_model = [this](const std::string& model,
                          grpc::ClientContext& context) {
    v1::GetModelRequest request;
    request.set_name(model);
    v1::Model response;
    return FromGrpcStatus(
        client_->models().GetModel(&context, request, &response));
  };
  {  // a read of m's figures counts in m's share too
    grpc::ClientContext context;
    ExpectOverloaded(get_model("m", context), context,
                     "overloaded: 1 reads in flight on model 'm', 1 "
                     "more would pass 1 "
                     "(--max-predictions-in-flight-per-model)");
  }
  {
    grpc::ClientContext context;
    EXPECT_TRUE(predict("n", context).ok());
  }
  absl::StatusOr<AdmissionTicket> on_n =
      server_->registry().AdmitPrediction(*n);
  ASSERT_TRUE(on_n.ok());
  {
    grpc::ClientContext context;
    auto stream = client_->regression().PredictStream(&context);
    v1::PredictRequest request;
    request.set_model("o");
    request.add_queries()->mutable_x()->Assign(rows.input(0).begin(),
                                               rows.input(0).end());
    const absl::Status refused =
        RefusedAtOnce<v1::PredictResponse>(*stream, request);
    ExpectOverloaded(refused, context,
                     "message 0: overloaded: 2 reads in flight on the "
                     "server, 1 more would pass 2 "
                     "(--max-predictions-in-flight)");
  }
  {  // model reads that wait for learning count there too
    grpc::ClientContext context;
    ExpectOverloaded(get_model("o", context), context,
                     "overloaded: 2 reads in flight on the server, 1 more "
                     "would pass 2 (--max-predictions-in-flight)");
  }
  {
    const std::string metrics = server_->RenderMetrics();
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_reads_in_flight 2\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_model_predictions_in_flight{"
                                   "model=\"m\"} 1\n"));
    EXPECT_THAT(metrics, HasSubstr("\nstreamreg_overload_refusals_total{limit="
                                   "\"max_predictions_in_flight\"} 2\n"));
  }
  on_m->Release();
  on_n->Release();
  {
    grpc::ClientContext context;
    EXPECT_TRUE(predict("o", context).ok());
  }
  EXPECT_EQ(server_->registry().predictions_in_flight().held(), 0u);
}

TEST_F(ServiceTest, QueuedSamplesAreAlsoLimitedToWhatTheModelLearnsInADelay) {
  ServerOptions options;
  options.limits.max_queue_delay = absl::Nanoseconds(1);  // one sample's
  StartServer(options);
  const Rows rows(100, 5);
  CreateAndIngest("m", rows, 20);
  std::shared_ptr<HostedModel> m = *server_->registry().Find("m");
  m->CatchUp();  // learned, so its rate is known
  EXPECT_EQ(m->queued_samples().paced_limit(), 1u);

  // m's write queue is held: a batch of 8 is admitted alone and waits.
  HeldWrites held(*m);
  std::thread admitted = AdmitHeldBatch(rows, *m);
  ASSERT_EQ(m->queued_samples().held(), 8u);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  {  // far below the count limit (8,192), past what m learns in 1 ns
    grpc::ClientContext context;
    const absl::Status refused = IngestIn(context, BatchOf(rows, "m", 28));
    ExpectOverloaded(refused, context,
                     "message 0: overloaded: 8 samples queued for model 'm', "
                     "8 more would pass 1 (what it learns in 1ns, "
                     "--max-queue-delay); retry in 100 ms");
  }
  // The client library's Ingester, refused the same way, waits for the
  // server's retry hint (100 ms) and sends again: by then the queue is free.
  std::thread retried([&] {
    std::unique_ptr<Ingester> ingester = client_->StartIngest("m");
    for (std::size_t i = 28; i < 36; ++i) {
      ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
    }
    absl::StatusOr<IngestSummary> summary = ingester->Finish();
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->accepted, 8u);
    EXPECT_EQ(summary->retries, 1u);
  });
  while (m->queued_samples().refused() < 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(m->queued_samples().refused(), 2u);
  held.Release();
  admitted.join();
  retried.join();
  EXPECT_EQ(NumSamples("m"), 36u);
}

TEST_F(ServiceTest, EveryFieldThatAllocatesIsBoundedAndNamedWhenOver) {
  const Rows rows(100, 5);
  CreateAndIngest("m", rows, 50);
  auto message_of = [](const absl::Status& status) {
    return std::string(status.message());
  };
  v1::IngestRequest too_many;
  too_many.set_model("m");
  for (std::size_t i = 0; i <= kMaxSamplesPerMessage; ++i) {
    v1::Sample& sample = *too_many.add_samples();
    sample.mutable_x()->Assign(rows.input(i % 50).begin(),
                               rows.input(i % 50).end());
    sample.mutable_y()->Assign(rows.target(i % 50).begin(),
                               rows.target(i % 50).end());
  }
  v1::IngestResponse ingested;
  const absl::Status ingest = Ingest(too_many, &ingested);
  EXPECT_EQ(ingest.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(message_of(ingest),
            "message 0: samples: 65537 in one message; at most 65536");
  EXPECT_EQ(NumSamples("m"), 50u);

  v1::PredictRequest queries;
  queries.set_model("m");
  for (std::size_t q = 0; q <= kMaxQueriesPerRequest; ++q) {
    queries.add_queries()->mutable_x()->Assign(rows.input(q % 50).begin(),
                                               rows.input(q % 50).end());
  }
  grpc::ClientContext context;
  v1::PredictResponse predicted;
  const absl::Status predict = FromGrpcStatus(
      client_->regression().Predict(&context, queries, &predicted));
  EXPECT_EQ(predict.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(message_of(predict),
            "queries: 65537 in one message; at most 65536");

  const std::string long_name(129, 'a');
  v1::ModelSpec spec = RowsSpec();
  spec.set_target_names(1, long_name);
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.target_names[1]: 129 bytes; at most 128");
  spec = RowsSpec();
  for (const char* name : {"shoulder", "elbow", ""}) spec.add_input_names(name);
  spec.set_input_names(2, long_name);
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.input_names[2]: 129 bytes; at most 128");
  spec = RowsSpec();
  spec.set_input_dim(4097);
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.input_dim: must be in [1, 4096], got 4097");
  spec = RowsSpec();
  for (int t = 2; t <= 256; ++t) spec.add_target_names(absl::StrCat("t", t));
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.target_names: need 1 to 256 targets, got 257");
  spec = RowsSpec();
  for (int k = 1; k <= 65; ++k) spec.add_k_grid(static_cast<std::uint32_t>(k));
  EXPECT_EQ(message_of(client_->CreateModel("x", spec).status()),
            "spec.k_grid: 65 values; at most 64");
  EXPECT_EQ(message_of(client_->CreateModel(long_name, RowsSpec()).status()),
            "name: 129 characters (at most 128)");
  v1::ListModelsRequest list;
  list.set_page_token(long_name);
  grpc::ClientContext list_context;
  v1::ListModelsResponse listed;
  EXPECT_EQ(message_of(FromGrpcStatus(
                client_->models().ListModels(&list_context, list, &listed))),
            "page_token: 129 characters (at most 128)");
  // Nothing was created.
  absl::StatusOr<std::vector<v1::Model>> models = client_->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(models->size(), 1u);
}

TEST_F(ServiceTest, LimitsAreResourceExhausted) {
  ServerOptions options;
  options.limits.max_models = 2;
  options.limits.max_samples_per_model = 120;
  options.max_message_bytes = 64 << 10;
  StartServer(options);
  const Rows rows(5000, 6);
  CreateAndIngest("a", rows, 100);
  ASSERT_TRUE(client_->CreateModel("b", RowsSpec()).ok());
  EXPECT_EQ(client_->CreateModel("c", RowsSpec()).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(client_->DeleteModel("b").ok());
  v1::ModelSpec windowed = RowsSpec();
  windowed.mutable_capacity()->set_policy(v1::CAPACITY_POLICY_WINDOW);
  windowed.mutable_capacity()->set_limit(121);
  EXPECT_THAT(client_->CreateModel("w", windowed).status().message(),
              HasSubstr("spec.capacity.limit: 121"));

  std::unique_ptr<Ingester> ingester = client_->StartIngest("a");
  for (std::size_t i = 100; i < 130; ++i) {
    (void)ingester->Add(rows.input(i), rows.target(i));
  }
  absl::StatusOr<IngestSummary> over = ingester->Finish();
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("--max-samples-per-model"));
  EXPECT_EQ(NumSamples("a"), 100u);

  // A message over --max-message-bytes (5000 queries of 3 doubles).
  v1::PredictRequest big;
  big.set_model("a");
  for (std::size_t q = 0; q < rows.size(); ++q) {
    big.add_queries()->mutable_x()->Assign(rows.input(q).begin(),
                                           rows.input(q).end());
  }
  grpc::ClientContext context;
  v1::PredictResponse response;
  const grpc::Status status =
      client_->regression().Predict(&context, big, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
}

TEST_F(ServiceTest, AFullOrReadOnlyDiskIsReportedAndLosesNothing) {
  FaultInjectingFileSystem file_system;
  ServerOptions options;
  options.storage.file_system = &file_system;
  StartServer(options);
  const Rows rows(400, 6);
  CreateAndIngest("a", rows, 200);

  file_system.append_error = ENOSPC;
  v1::IngestRequest request;
  request.set_model("a");
  for (std::size_t i = 200; i < 250; ++i) {
    v1::Sample* sample = request.add_samples();
    sample->mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
    sample->mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    sample->set_sample_id(9000 + i);
  }
  v1::IngestResponse response;
  const absl::Status full = Ingest(request, &response);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("No space left on device"));
  EXPECT_EQ(NumSamples("a"), 200u);
  file_system.append_error = 0;
  ASSERT_TRUE(Ingest(request, &response).ok());
  EXPECT_EQ(NumSamples("a"), 250u);

  file_system.create_error = EROFS;
  const absl::Status read_only = client_->CreateModel("b", RowsSpec()).status();
  EXPECT_EQ(read_only.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read_only.message(), HasSubstr("Read-only file system"));
  file_system.create_error = 0;
  server_.reset();  // before the file system it uses
}

TEST_F(ServiceTest, ARestartedServerServesExactlyWhatItAcknowledged) {
  ServerOptions options;
  options.take_over = TakeOverRule::kFixedCount;  // as Reference
  const std::string data_dir = FreshDirectory();
  directories_.push_back(data_dir);
  const Rows rows(900, 6);
  // With a linear base: its state is in the snapshots too.
  v1::ModelSpec spec = RowsSpec(v1::METRIC_EGOP);
  spec.set_linear_base(true);
  spec.mutable_tuning()->set_base_forgetting(0.99);
  auto start = [&] {
    client_.reset();
    server_.reset();  // a clean shutdown: snapshots what changed
    ASSERT_NO_FATAL_FAILURE(StartTestServer(options, data_dir, &server_));
    ClientOptions client_options;
    client_options.address = server_->address();
    client_ = std::make_unique<Client>(client_options);
  };
  start();
  CreateAndIngest("m", rows, 600, spec);
  start();
  absl::StatusOr<v1::Model> restarted = client_->GetModel("m");
  ASSERT_TRUE(restarted.ok());
  EXPECT_TRUE(restarted->spec().linear_base());
  EXPECT_EQ(restarted->spec().tuning().base_forgetting(), 0.99);
  std::unique_ptr<Ingester> ingester = client_->StartIngest("m");
  for (std::size_t i = 600; i < 900; ++i) {
    ASSERT_TRUE(ingester->Add(rows.input(i), rows.target(i)).ok());
  }
  ASSERT_TRUE(ingester->Finish().ok());
  start();
  std::unique_ptr<Model> reference = Reference(spec, rows, 900);
  absl::StatusOr<std::vector<v1::Prediction>> got =
      client_->Predict("m", rows.inputs(0, 50), Rows::kDim);
  ASSERT_TRUE(got.ok()) << got.status();
  for (std::size_t q = 0; q < 50; ++q) {
    const Prediction expected = *reference->Predict(rows.input(q));
    for (std::size_t t = 0; t < expected.value.size(); ++t) {
      EXPECT_EQ((*got)[q].y(t), expected.value[t]) << "query " << q;
    }
  }
  EXPECT_EQ(NumSamples("m"), 900u);
}

// 8 streams at once on two models — 4 ingesting, 2 predicting, 2 learning —
// while the models pass the size where indexes are rebuilt in the
// background. Every call succeeds, every sample is learned once.
TEST_F(ServiceTest, ConcurrentStreamsDuringBackgroundRebuilds) {
  const Rows rows(12000, 8);
  // A tight drift tolerance: the metrics move little past 2,100 samples,
  // and the indexes must be rebuilt while the streams run.
  v1::ModelSpec spec = RowsSpec();
  spec.mutable_tuning()->set_drift_tolerance(0.002);
  CreateAndIngest("a", rows, 2100, spec);
  CreateAndIngest("b", rows, 2100, spec);
  const std::uint64_t rebuilds_before =
      client_->GetModel("a")->stats().index_rebuilds() +
      client_->GetModel("b")->stats().index_rebuilds();
  std::atomic<int> failures = 0;
  std::atomic<bool> writers_done = false;
  std::atomic<std::uint64_t> predictions = 0;
  std::atomic<std::uint64_t> duplicates_answered = 0;
  std::vector<std::thread> threads;
  for (int s = 0; s < 4; ++s) {  // 4 ingest streams, 2 per model
    threads.emplace_back([&, s] {
      Client client(client_->options());
      std::unique_ptr<Ingester> ingester =
          client.StartIngest(s % 2 == 0 ? "a" : "b");
      const std::size_t begin = 2100 + (s / 2) * 4000;
      for (std::size_t i = begin; i < begin + 4000; ++i) {
        if (!ingester->Add(rows.input(i), rows.target(i)).ok()) ++failures;
      }
      absl::StatusOr<IngestSummary> summary = ingester->Finish();
      if (!summary.ok()) {
        ++failures;
      } else {
        // A batch resent after a deadline or an overload refusal (a slow
        // build on a busy machine) is answered as duplicates.
        duplicates_answered += summary->duplicates;
      }
    });
  }
  for (int s = 0; s < 2; ++s) {  // 2 Learn streams
    threads.emplace_back([&, s] {
      Client client(client_->options());
      std::unique_ptr<LearnSession> session =
          client.StartLearn(s == 0 ? "a" : "b");
      for (std::size_t i = 10100; i < 10400; ++i) {
        if (!session->Learn(rows.input(i), rows.target(i)).ok()) ++failures;
      }
      if (!session->Close().ok()) ++failures;
    });
  }
  for (int s = 0; s < 2; ++s) {  // 2 PredictStreams, until the writers end
    threads.emplace_back([&, s] {
      Client client(client_->options());
      std::unique_ptr<PredictSession> session =
          client.StartPredict(s == 0 ? "a" : "b");
      for (std::size_t q = 0; !writers_done.load(); ++q) {
        absl::StatusOr<v1::Prediction> p =
            session->Predict(rows.input(q % rows.size()));
        if (!p.ok() || p->y_size() != 2 || !std::isfinite(p->y(0))) {
          ++failures;
        }
        ++predictions;
      }
      if (!session->Close().ok()) ++failures;
    });
  }
  for (std::size_t t = 0; t < 6; ++t) threads[t].join();
  writers_done = true;
  for (std::size_t t = 6; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(predictions.load(), 0u);
  const v1::ModelStats a = client_->GetModel("a")->stats();
  const v1::ModelStats b = client_->GetModel("b")->stats();
  EXPECT_EQ(a.num_samples(), 2100u + 8000u + 300u);
  EXPECT_EQ(b.num_samples(), 2100u + 8000u + 300u);
  // Learned once each: the only duplicates are the resent ones, each
  // answered as such.
  EXPECT_EQ(a.duplicate_samples() + b.duplicate_samples(),
            duplicates_answered.load());
  EXPECT_GT(a.index_rebuilds() + b.index_rebuilds(), rebuilds_before);
}

TEST_F(ServiceTest, DeadlinesAndCancellation) {
  const Rows rows(300, 9);
  CreateAndIngest("m", rows, 200);
  {  // An expired deadline.
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() -
                         std::chrono::seconds(1));
    v1::GetModelRequest request;
    request.set_name("m");
    v1::Model model;
    EXPECT_EQ(
        client_->models().GetModel(&context, request, &model).error_code(),
        grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  {  // An Ingest stream left open past its deadline: what was read before
     // is learned, the call ends with DEADLINE_EXCEEDED.
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(300));
    v1::IngestResponse response;
    auto writer = client_->regression().Ingest(&context, &response);
    v1::IngestRequest request;
    request.set_model("m");
    for (std::size_t i = 200; i < 210; ++i) {
      v1::Sample& sample = *request.add_samples();
      sample.mutable_x()->Assign(rows.input(i).begin(), rows.input(i).end());
      sample.mutable_y()->Assign(rows.target(i).begin(), rows.target(i).end());
    }
    ASSERT_TRUE(writer->Write(request));
    absl::SleepFor(absl::Milliseconds(500));
    EXPECT_EQ(writer->Finish().error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_EQ(NumSamples("m"), 210u);
  }
  {  // A Learn stream cancelled by the client mid-way: what was answered
     // durable stays (answered first, a sample may be dropped instead: the
     // watermark had not covered it, and the client resends it).
    grpc::ClientContext context;
    auto stream = client_->regression().Learn(&context);
    v1::LearnRequest request;
    request.set_model("m");
    request.set_answer_when_durable(true);
    request.mutable_sample()->mutable_x()->Assign(rows.input(210).begin(),
                                                  rows.input(210).end());
    request.mutable_sample()->mutable_y()->Assign(rows.target(210).begin(),
                                                  rows.target(210).end());
    v1::LearnResponse response;
    ASSERT_TRUE(stream->Write(request));
    ASSERT_TRUE(stream->Read(&response));
    context.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server goes on serving.
  EXPECT_EQ(NumSamples("m"), 211u);
  EXPECT_TRUE(client_->Predict("m", rows.input(0), 3).ok());
}

TEST_F(ServiceTest, ShutdownDrainsAnOpenStreamAndReportsNotServing) {
  ServerOptions options;
  options.drain_delay = absl::Milliseconds(400);
  StartServer(options);
  const Rows rows(100, 10);
  CreateAndIngest("m", rows, 50);
  ASSERT_EQ(*client_->Health(), "SERVING");
  std::unique_ptr<LearnSession> session = client_->StartLearn("m");
  ASSERT_TRUE(session->Learn(rows.input(50), rows.target(50)).ok());

  std::thread shutdown([&] { server_->Shutdown(); });
  absl::SleepFor(absl::Milliseconds(150));
  // Draining: health says so, and the open stream is still served.
  EXPECT_EQ(*client_->Health(), "NOT_SERVING");
  EXPECT_TRUE(session->Learn(rows.input(51), rows.target(51)).ok());
  shutdown.join();  // the open stream is cancelled after drain_timeout
  std::shared_ptr<HostedModel> hosted = server_->registry().Find("m").value();
  hosted->CatchUp();
  EXPECT_EQ(hosted->model().samples_seen(), 52u);
  ClientOptions impatient = client_->options();
  impatient.retry.max_attempts = 1;
  impatient.timeout = absl::Seconds(1);
  Client after(impatient);
  EXPECT_FALSE(after.GetModel("m").ok());
}

// A read of figures waits for learning early enough in its call that the
// answer arrives before the deadline; with none, until learned.
TEST(FiguresAnswerByTest, AnswersBeforeTheDeadline) {
  const absl::Time now = absl::FromUnixSeconds(1'000'000);
  EXPECT_EQ(FiguresAnswerBy(absl::InfiniteFuture(), now),
            absl::InfiniteFuture());
  EXPECT_EQ(FiguresAnswerBy(now + absl::Minutes(1), now),
            now + absl::Seconds(48));
  EXPECT_EQ(FiguresAnswerBy(now + absl::Seconds(1), now),
            now + absl::Milliseconds(800));
  EXPECT_EQ(FiguresAnswerBy(now - absl::Seconds(1), now), now);
}

}  // namespace
}  // namespace streamreg
