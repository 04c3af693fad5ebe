// Fuzzes every RPC of both services through the server's own handlers, in
// process: each call's request messages are parsed from the input and sent
// over an in-process channel to a running Server (its own data directory,
// a model "m" kept with samples). After the calls the server must still
// answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/server.h"
#include "streamreg/v1/model_service.grpc.pb.h"
#include "streamreg/v1/regression_service.grpc.pb.h"
#include "tests/fuzz/fuzz_support.h"

namespace streamreg {
namespace {

// The running server and stubs on its in-process channel.
struct Fixture {
  std::unique_ptr<Server> server;
  std::unique_ptr<v1::ModelService::Stub> models;
  std::unique_ptr<v1::RegressionService::Stub> regression;
};

Fixture* running_fixture = nullptr;

// Shuts the server down at exit, before the libraries' own statics go
// (its threads still use them).
void StopFixture() {
  delete running_fixture;
  running_fixture = nullptr;
}

Fixture* StartFixture() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = ScratchDirectory();
  options.storage.sync = *SyncPolicy::Parse("interval:1000");
  options.limits.max_models = 8;
  options.limits.max_samples_per_model = 2000;
  options.max_message_bytes = 1 << 20;
  options.worker_threads = 1;
  options.drain_timeout = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(std::move(options));
  FUZZ_CHECK(server.ok());
  running_fixture = new Fixture;
  running_fixture->server = *std::move(server);
  std::atexit(StopFixture);
  const std::shared_ptr<grpc::Channel> channel =
      running_fixture->server->InProcessChannel();
  running_fixture->models = v1::ModelService::NewStub(channel);
  running_fixture->regression = v1::RegressionService::NewStub(channel);
  return running_fixture;
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(20));
}

// "m": 3 inputs, 2 targets, at most 500 samples kept (a window).
void EnsureModel(Fixture& fixture) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::CreateModelRequest request;
  request.set_name("m");
  v1::ModelSpec& spec = *request.mutable_spec();
  spec.set_input_dim(3);
  spec.add_target_names("wave");
  spec.add_target_names("square");
  spec.mutable_capacity()->set_policy(v1::CAPACITY_POLICY_WINDOW);
  spec.mutable_capacity()->set_limit(500);
  v1::Model created;
  if (!fixture.models->CreateModel(&context, request, &created).ok()) return;
  grpc::ClientContext ingest_context;
  SetDeadline(&ingest_context);
  v1::IngestResponse response;
  auto writer = fixture.regression->Ingest(&ingest_context, &response);
  v1::IngestRequest batch;
  batch.set_model("m");
  for (int i = 0; i < 20; ++i) {
    v1::Sample* sample = batch.add_samples();
    const double a = i / 20.0, b = 1.0 - a, c = a * b;
    for (double x : {a, b, c}) sample->add_x(x);
    sample->add_y(a + b);
    sample->add_y(c * c);
  }
  writer->Write(batch);
  writer->WritesDone();
  FUZZ_CHECK(writer->Finish().ok());
}

// A unary call with a request parsed from `bytes` (nothing if it does not
// parse).
template <typename Request, typename Response, typename Stub>
void Unary(Stub& stub,
           grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                        Response*),
           const std::string& bytes) {
  Request request;
  if (!request.ParseFromString(bytes)) return;
  grpc::ClientContext context;
  SetDeadline(&context);
  Response response;
  static_cast<void>((stub.*method)(&context, request, &response));
}

// A bidi stream that writes each request of `parts` that parses and reads
// its answer (the in-process transport buffers nothing: a write completes
// when the other side reads it), then reads to the end.
template <typename Request, typename Response, typename Open>
void Bidi(Open open, const std::vector<std::string>& parts) {
  grpc::ClientContext context;
  SetDeadline(&context);
  auto stream = open(&context);
  Response response;
  for (const std::string& part : parts) {
    Request request;
    if (!request.ParseFromString(part)) continue;
    if (!stream->Write(request) || !stream->Read(&response)) break;
  }
  stream->WritesDone();
  while (stream->Read(&response)) {
  }
  static_cast<void>(stream->Finish());
}

void Call(Fixture& f, std::uint8_t method,
          const std::vector<std::string>& parts) {
  v1::ModelService::Stub& models = *f.models;
  v1::RegressionService::Stub& regression = *f.regression;
  const std::string& first = parts.front();
  switch (method % 12) {
    case 0:
      return Unary(models, &v1::ModelService::Stub::CreateModel, first);
    case 1:
      return Unary(models, &v1::ModelService::Stub::GetModel, first);
    case 2:
      return Unary(models, &v1::ModelService::Stub::ListModels, first);
    case 3:
      return Unary(models, &v1::ModelService::Stub::DeleteModel, first);
    case 4:
      return Unary(models, &v1::ModelService::Stub::GetMetric, first);
    case 5: {
      v1::RefitRequest request;
      if (!request.ParseFromString(first)) return;
      grpc::ClientContext context;
      SetDeadline(&context);
      auto reader = models.Refit(&context, request);
      v1::RefitProgress progress;
      while (reader->Read(&progress)) {
      }
      static_cast<void>(reader->Finish());
      return;
    }
    case 6: {
      grpc::ClientContext context;
      SetDeadline(&context);
      v1::IngestResponse response;
      auto writer = regression.Ingest(&context, &response);
      for (const std::string& part : parts) {
        v1::IngestRequest request;
        if (request.ParseFromString(part) && !writer->Write(request)) break;
      }
      writer->WritesDone();
      static_cast<void>(writer->Finish());
      return;
    }
    case 7:
      return Bidi<v1::LearnRequest, v1::LearnResponse>(
          [&](grpc::ClientContext* c) { return regression.Learn(c); }, parts);
    case 8:
      return Unary(regression, &v1::RegressionService::Stub::Predict, first);
    case 9:
      return Bidi<v1::PredictRequest, v1::PredictResponse>(
          [&](grpc::ClientContext* c) { return regression.PredictStream(c); },
          parts);
    case 10:
      return Unary(regression, &v1::RegressionService::Stub::Ping, first);
    default:
      return Bidi<v1::PingRequest, v1::PingResponse>(
          [&](grpc::ClientContext* c) { return regression.PingStream(c); },
          parts);
  }
}

}  // namespace
}  // namespace streamreg

// Input: up to 4 calls, each a method byte (which of the 12 RPCs), a count
// byte (how many messages a stream sends, 1 to 3), then that many
// length-prefixed request messages (fuzz_support.h PartReader).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace streamreg;
  static Fixture* const started = StartFixture();
  EnsureModel(*started);
  PartReader reader(data, size);
  for (int call = 0; call < 4 && !reader.done(); ++call) {
    const std::uint8_t method = reader.Byte();
    const int messages = 1 + reader.Byte() % 3;
    std::vector<std::string> parts;
    for (int m = 0; m < messages; ++m) parts.push_back(reader.Part());
    Call(*started, method, parts);
  }
  // Still serving: a ping is answered.
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::PingResponse pong;
  FUZZ_CHECK(
      started->regression->Ping(&context, v1::PingRequest(), &pong).ok());
  return 0;
}
