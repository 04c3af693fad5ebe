#include "client/lib/client.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/lib/ingester.h"
#include "client/lib/internal/bearer_token.h"
#include "client/lib/internal/hedged_read.h"
#include "client/lib/internal/retry_call.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace streamreg {
namespace {

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const ClientTls& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.root_certs_pem;
  ssl.pem_cert_chain = tls.cert_chain_pem;
  ssl.pem_private_key = tls.private_key_pem;
  return grpc::SslCredentials(ssl);
}

std::shared_ptr<grpc::Channel> MakeChannel(const ClientOptions& options,
                                           const std::string& address) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(
      static_cast<int>(options.max_message_bytes));
  arguments.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  if (options.own_connection) {
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  }
  if (options.bearer_token.empty()) {
    return grpc::CreateCustomChannel(address, ChannelCredentials(options.tls),
                                     arguments);
  }
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(
      std::make_unique<BearerTokenInterceptorFactory>(options.bearer_token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, ChannelCredentials(options.tls), arguments,
      std::move(interceptors));
}

// The servers of ClientOptions::address, comma-separated.
std::vector<std::string> ServerList(const std::string& addresses) {
  std::vector<std::string> servers =
      absl::StrSplit(addresses, ',', absl::SkipEmpty());
  if (servers.empty()) servers.push_back(addresses);
  return servers;
}

std::uint64_t RandomSampleIdStart() {
  absl::BitGen random;
  // Leave room to count up; never 0 (0 means "no id").
  return absl::Uniform<std::uint64_t>(random, 1, std::uint64_t{1} << 62);
}

}  // namespace

Client::Client(ClientOptions options)
    : options_(std::move(options)),
      router_(std::make_unique<ServerRouter>(
          ServerList(options_.address),
          [options = options_](const std::string& address) {
            return MakeChannel(options, address);
          })),
      next_sample_id_(RandomSampleIdStart()) {}

Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options)
    : options_(std::move(options)),
      router_(
          std::make_unique<ServerRouter>(options_.address, std::move(channel))),
      next_sample_id_(RandomSampleIdStart()) {}

Client::~Client() = default;

template <class Call>
absl::Status Client::RetriedFor(const std::string& model, const Call& call) {
  return RetryCall(options_.retry, [&](int attempt) {
    const std::shared_ptr<ServerStubs> stubs = router_->For(model);
    absl::Status status = call(*stubs, attempt);
    if (!status.ok()) router_->Failed(model, *stubs, status);
    return status;
  });
}

template <class Response, class Start>
absl::StatusOr<Response> Client::Read(const std::string& model,
                                      const Start& start) {
  HedgedRead<Response> read(router_.get(), model, options_.timeout,
                            options_.replica_attempt_timeout);
  Response response;
  const absl::Status status = RetryCall(options_.retry, [&](int /*attempt*/) {
    return read.Run(start, &response);
  });
  if (!status.ok()) return status;
  return response;
}

v1::ModelService::Stub& Client::models() { return *router_->For("")->models; }

v1::RegressionService::Stub& Client::regression() {
  return *router_->For("")->regression;
}

std::unique_ptr<grpc::ClientContext> Client::NewContext() const {
  return NewContext(options_.timeout);
}

std::unique_ptr<grpc::ClientContext> Client::NewContext(
    absl::Duration timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return context;
}

absl::StatusOr<v1::Model> Client::CreateModel(const std::string& name,
                                              const v1::ModelSpec& spec) {
  v1::CreateModelRequest request;
  request.set_name(name);
  *request.mutable_spec() = spec;
  v1::Model model;
  bool retried = false;
  absl::Status status = RetriedFor(name, [&](ServerStubs& server, int attempt) {
    retried = attempt > 1;
    return FromGrpcStatus(
        server.models->CreateModel(NewContext().get(), request, &model));
  });
  // A retry after a lost answer finds the model the first attempt made.
  if (retried && status.code() == absl::StatusCode::kAlreadyExists) {
    return GetModel(name);
  }
  if (!status.ok()) return status;
  return model;
}

absl::StatusOr<v1::Model> Client::GetModel(const std::string& name) {
  v1::GetModelRequest request;
  request.set_name(name);
  return Read<v1::Model>(
      name, [&](ServerStubs& server, grpc::ClientContext* context,
                grpc::CompletionQueue* queue) {
        return server.models->AsyncGetModel(context, request, queue);
      });
}

absl::StatusOr<std::vector<v1::Model>> Client::ListModels() {
  std::vector<v1::Model> models;
  std::vector<std::string> elsewhere;
  v1::ListModelsRequest request;
  do {
    absl::StatusOr<v1::ListModelsResponse> page = Read<v1::ListModelsResponse>(
        "", [&](ServerStubs& server, grpc::ClientContext* context,
                grpc::CompletionQueue* queue) {
          return server.models->AsyncListModels(context, request, queue);
        });
    if (!page.ok()) return page.status();
    for (v1::Model& model : *page->mutable_models()) {
      models.push_back(std::move(model));
    }
    for (v1::ModelElsewhere& model : *page->mutable_elsewhere()) {
      router_->Serves(model.name(),
                      {model.servers().begin(), model.servers().end()});
      elsewhere.push_back(model.name());
    }
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  for (const std::string& name : elsewhere) {
    absl::StatusOr<v1::Model> model = GetModel(name);
    if (absl::IsNotFound(model.status())) continue;  // deleted since
    if (!model.ok()) return model.status();
    models.push_back(*std::move(model));
  }
  std::sort(models.begin(), models.end(),
            [](const v1::Model& a, const v1::Model& b) {
              return a.name() < b.name();
            });
  return models;
}

absl::Status Client::DeleteModel(const std::string& name) {
  v1::DeleteModelRequest request;
  request.set_name(name);
  bool retried = false;
  absl::Status status = RetriedFor(name, [&](ServerStubs& server, int attempt) {
    retried = attempt > 1;
    v1::DeleteModelResponse response;
    return FromGrpcStatus(
        server.models->DeleteModel(NewContext().get(), request, &response));
  });
  // A retry after a lost answer finds the model already deleted.
  if (retried && status.code() == absl::StatusCode::kNotFound) {
    return absl::OkStatus();
  }
  return status;
}

absl::StatusOr<v1::MetricReport> Client::GetMetric(const std::string& name) {
  v1::GetMetricRequest request;
  request.set_name(name);
  return Read<v1::MetricReport>(
      name, [&](ServerStubs& server, grpc::ClientContext* context,
                grpc::CompletionQueue* queue) {
        return server.models->AsyncGetMetric(context, request, queue);
      });
}

absl::StatusOr<v1::ModelStats> Client::Refit(
    const std::string& name,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  v1::RefitRequest request;
  request.set_name(name);
  grpc::ClientContext context;  // no deadline: a refit takes what it takes
  const std::shared_ptr<ServerStubs> server = router_->For(name);
  std::unique_ptr<grpc::ClientReader<v1::RefitProgress>> reader =
      server->models->Refit(&context, request);
  v1::RefitProgress message;
  v1::ModelStats stats;
  while (reader->Read(&message)) {
    if (progress) progress(message.done(), message.total());
    if (message.has_stats()) stats = message.stats();
  }
  if (absl::Status status = FromGrpcStatus(reader->Finish()); !status.ok()) {
    router_->Failed(name, *server, status);
    return status;
  }
  return stats;
}

void PredictCallOptions::SetOn(v1::PredictRequest* request) const {
  if (interval_level.has_value()) request->set_interval_level(*interval_level);
  request->set_with_neighbors(with_neighbors);
  if (min_learned.has_value()) request->set_min_learned(*min_learned);
}

absl::StatusOr<std::vector<v1::Prediction>> Client::Predict(
    const std::string& model, std::span<const double> x, std::size_t dim,
    const PredictCallOptions& options) {
  if (dim == 0 || x.size() % dim != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("x: ", x.size(), " values are not rows of ", dim));
  }
  std::vector<v1::Prediction> predictions;
  const std::size_t n = x.size() / dim;
  for (std::size_t begin = 0; begin < n; begin += options_.batch_size) {
    v1::PredictRequest request;
    request.set_model(model);
    options.SetOn(&request);
    const std::size_t end = std::min(n, begin + options_.batch_size);
    for (std::size_t q = begin; q < end; ++q) {
      request.add_queries()->mutable_x()->Assign(x.begin() + q * dim,
                                                 x.begin() + (q + 1) * dim);
    }
    absl::StatusOr<v1::PredictResponse> response = Read<v1::PredictResponse>(
        model, [&](ServerStubs& server, grpc::ClientContext* context,
                   grpc::CompletionQueue* queue) {
          return server.regression->AsyncPredict(context, request, queue);
        });
    if (!response.ok()) return response.status();
    for (v1::Prediction& prediction : *response->mutable_predictions()) {
      predictions.push_back(std::move(prediction));
    }
  }
  return predictions;
}

std::unique_ptr<Ingester> Client::StartIngest(const std::string& model) {
  return std::make_unique<Ingester>(this, model);
}

std::unique_ptr<LearnSession> Client::StartLearn(const std::string& model) {
  return std::make_unique<LearnSession>(this, model);
}

std::unique_ptr<LearnSession> Client::StartLearn(
    const std::string& model, const LearnSessionOptions& options) {
  return std::make_unique<LearnSession>(this, model, options);
}

std::unique_ptr<PredictSession> Client::StartPredict(const std::string& model) {
  return std::make_unique<PredictSession>(this, model);
}

absl::StatusOr<std::string> Client::Health() {
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  if (absl::Status status = RetriedFor(
          "",
          [&](ServerStubs& server, int) {
            auto stub = grpc::health::v1::Health::NewStub(server.channel);
            return FromGrpcStatus(
                stub->Check(NewContext().get(), request, &response));
          });
      !status.ok()) {
    return status;
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response.status());
}

absl::Status Client::WaitForServer(absl::Duration within) {
  const std::vector<std::string>& servers = router_->servers();
  const absl::Duration share = within / static_cast<double>(servers.size());
  for (std::size_t tried = 0; tried < servers.size(); ++tried) {
    const std::shared_ptr<ServerStubs> server = router_->For("");
    const absl::Time deadline = absl::Now() + share;
    if (server->channel->WaitForConnected(absl::ToChronoTime(deadline))) {
      return absl::OkStatus();
    }
    router_->Failed("", *server, absl::UnavailableError("not reachable"));
  }
  return absl::UnavailableError(absl::StrCat(
      "no streamreg server answers at ", absl::StrJoin(servers, ","),
      " within ", absl::FormatDuration(within)));
}

}  // namespace streamreg
