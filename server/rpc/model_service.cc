#include "server/rpc/model_service.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/hosting/parked_read.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/listen_for_calls.h"
#include "server/rpc/refit_reactor.h"
#include "server/rpc/spec_conversion.h"
#include "server/rpc/wire_conversion.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

constexpr std::size_t kMaxPageSize = 1000;

void Answer(UnaryReactor* reactor, grpc::ServerContext* context,
            const absl::Status& status) {
  reactor->Finish(ToGrpcStatus(status, *context));
}

// Answers an admitted read with `read()` — or CANCELLED, without reading,
// for a call cancelled while its read was parked (no wait for learning on
// a thread now) — and gives back its admission.
void FinishRead(UnaryReactor* reactor, grpc::ServerContext* context,
                AdmissionTicket& ticket,
                const std::function<absl::Status()>& read) {
  const absl::Status status =
      context->IsCancelled() ? absl::CancelledError("call cancelled") : read();
  ticket.Release();
  reactor->Finish(ToGrpcStatus(status, *context));
}

}  // namespace

absl::Status ModelService::Create(const v1::CreateModelRequest& request,
                                  v1::Model* response) {
  if (absl::Status status = ValidateModelName(request.name()); !status.ok()) {
    return status;
  }
  absl::StatusOr<ModelConfig> config = ConfigFromSpec(request.spec());
  if (!config.ok()) return config.status();
  config->take_over = take_over_;
  std::vector<std::string> input_names(request.spec().input_names().begin(),
                                       request.spec().input_names().end());
  if (cluster_mode_) {
    if (absl::Status status =
            CreateInCluster(request.name(), *std::move(config),
                            std::move(input_names), response);
        !status.ok()) {
      return status;
    }
  } else {
    absl::StatusOr<std::shared_ptr<HostedModel>> hosted = registry_->Create(
        request.name(), *std::move(config), std::move(input_names));
    if (!hosted.ok()) return hosted.status();
    ModelToWire(**hosted, {.deadline = absl::Now()}, response);
  }
  spdlog::info("event=model_created model={} inputs={} targets={} metric={}",
               request.name(), response->spec().input_dim(),
               response->spec().target_names_size(),
               v1::Metric_Name(response->spec().metric()));
  return absl::OkStatus();
}

absl::StatusOr<ClusterNode*> ModelService::Cluster() const {
  ClusterNode* cluster = cluster_.load(std::memory_order_acquire);
  if (cluster == nullptr) {
    return absl::UnavailableError("the server is joining its cluster; retry");
  }
  return cluster;
}

absl::Status ModelService::CreateInCluster(const std::string& name,
                                           ModelConfig config,
                                           std::vector<std::string> input_names,
                                           v1::Model* response) {
  absl::StatusOr<ClusterNode*> cluster = Cluster();
  if (!cluster.ok()) return cluster.status();
  // Made here to validate it (as a single server would) and to answer
  // with it; hosted wherever its placement says.
  absl::StatusOr<std::shared_ptr<HostedModel>> made = registry_->Make(
      name, std::move(config), std::move(input_names), absl::Now());
  if (!made.ok()) return made.status();
  if (absl::Status created = (*cluster)->Create((*made)->identity());
      !created.ok()) {
    return created;
  }
  absl::StatusOr<std::shared_ptr<HostedModel>> hosted = registry_->Find(name);
  ModelToWire(hosted.ok() ? **hosted : **made, {.deadline = absl::Now()},
              response);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelService::FindAuthorized(
    const grpc::ServerContext& context, const std::string& name,
    Permission permission) const {
  if (absl::Status status =
          access_->AuthorizeModel(context, name, "name", permission);
      !status.ok()) {
    return status;
  }
  return registry_->Find(name);
}

void ModelService::CreateModel(grpc::ServerContext* context,
                               const v1::CreateModelRequest* request,
                               v1::Model* response, UnaryReactor* reactor) {
  // Off the completion queue's thread: the create record is fsynced (in
  // cluster mode, written to the cluster's log) before the answer.
  reads_->Post([this, context, request, response, reactor] {
    absl::Status status = access_->AuthorizeModel(*context, request->name(),
                                                  "name", Permission::kAdmin);
    if (status.ok()) status = Create(*request, response);
    Answer(reactor, context, status);
  });
}

void ModelService::GetModel(grpc::ServerContext* context,
                            const v1::GetModelRequest* request,
                            v1::Model* response, UnaryReactor* reactor) {
  AnswerFigures(context, reactor, request->name(),
                [response](const HostedModel& model, const ReadAfter& figures) {
                  ModelToWire(model, figures, response);
                });
}

void ModelService::AnswerFigures(
    grpc::ServerContext* context, UnaryReactor* reactor,
    const std::string& name,
    std::function<void(const HostedModel&, const ReadAfter&)> write) {
  absl::StatusOr<std::shared_ptr<HostedModel>> hosted =
      FindAuthorized(*context, name, Permission::kRead);
  if (!hosted.ok()) return Answer(reactor, context, hosted.status());
  const std::shared_ptr<HostedModel> model = *std::move(hosted);
  const ReadAfter figures = model->PinAcknowledged(
      {.deadline = FiguresAnswerBy(CallDeadline(*context))});
  auto read = [model, figures, write = std::move(write)] {
    write(*model, figures);
    return absl::OkStatus();
  };
  absl::StatusOr<AdmissionTicket> admitted = registry_->AdmitRead(model.get());
  if (!admitted.ok()) return Answer(reactor, context, admitted.status());
  auto ticket = std::make_shared<AdmissionTicket>(*std::move(admitted));
  PostRead(*reads_, {.reads = {{model, figures}},
                     .abandoned = [context] { return context->IsCancelled(); },
                     .parked = [this, ticket] { registry_->ParkRead(*ticket); },
                     .answer =
                         [reactor, context, ticket, read = std::move(read)] {
                           FinishRead(reactor, context, *ticket, read);
                         }});
}

absl::Status ModelService::List(const CallerRights& rights,
                                const v1::ListModelsRequest& request,
                                absl::Time answer_by,
                                v1::ListModelsResponse* response,
                                std::vector<ModelRead>* here) const {
  const std::size_t page_size =
      request.page_size() == 0
          ? kMaxPageSize
          : std::min<std::size_t>(request.page_size(), kMaxPageSize);
  // The token is the last name of the previous page.
  const std::string& after = request.page_token();
  if (!after.empty()) {
    if (absl::Status status = ValidateModelName(after, "page_token");
        !status.ok()) {
      return status;
    }
  }
  if (cluster_mode_) {
    return ListCluster(rights, after, page_size, answer_by, response, here);
  }
  // Only the models the caller may read; a page may take several registry
  // pages when most are not.
  std::vector<std::shared_ptr<HostedModel>> readable;
  std::string from = after;
  for (bool more = true; more && readable.size() <= page_size;) {
    const std::vector<std::shared_ptr<HostedModel>> batch =
        registry_->List(from, page_size + 1);
    more = batch.size() == page_size + 1;
    for (const std::shared_ptr<HostedModel>& model : batch) {
      if (rights.Allows(model->name(), Permission::kRead)) {
        readable.push_back(model);
      }
    }
    if (!batch.empty()) from = batch.back()->name();
  }
  for (std::size_t i = 0; i < std::min(readable.size(), page_size); ++i) {
    here->push_back(
        {readable[i], readable[i]->PinAcknowledged({.deadline = answer_by})});
  }
  if (readable.size() > page_size) {
    response->set_next_page_token(readable[page_size - 1]->name());
  }
  return absl::OkStatus();
}

absl::Status ModelService::ListCluster(const CallerRights& rights,
                                       const std::string& after,
                                       std::size_t page_size,
                                       absl::Time answer_by,
                                       v1::ListModelsResponse* response,
                                       std::vector<ModelRead>* here) const {
  absl::StatusOr<ClusterNode*> cluster = Cluster();
  if (!cluster.ok()) return cluster.status();
  absl::StatusOr<std::map<std::string, std::vector<std::string>>> placed =
      (*cluster)->Placements();
  if (!placed.ok()) return placed.status();
  std::size_t listed = 0;
  const std::string* last = nullptr;
  for (auto it = placed->upper_bound(after); it != placed->end(); ++it) {
    const auto& [name, servers] = *it;
    if (!rights.Allows(name, Permission::kRead)) continue;
    if (listed == page_size) {  // one more: the page is not the last
      response->set_next_page_token(*last);
      break;
    }
    ++listed;
    last = &name;
    // Asking nobody else (Find would ask the cluster about each model
    // not hosted here).
    const std::shared_ptr<HostedModel> hosted = registry_->FindHere(name);
    if (hosted != nullptr) {
      here->push_back(
          {hosted, hosted->PinAcknowledged({.deadline = answer_by})});
    } else {
      v1::ModelElsewhere* elsewhere = response->add_elsewhere();
      elsewhere->set_name(name);
      for (const std::string& server : servers) elsewhere->add_servers(server);
    }
  }
  return absl::OkStatus();
}

void ModelService::ListModels(grpc::ServerContext* context,
                              const v1::ListModelsRequest* request,
                              v1::ListModelsResponse* response,
                              UnaryReactor* reactor) {
  absl::StatusOr<CallerRights> rights = access_->Authenticate(*context);
  if (!rights.ok()) return Answer(reactor, context, rights.status());
  absl::StatusOr<AdmissionTicket> admitted = registry_->AdmitRead(nullptr);
  if (!admitted.ok()) return Answer(reactor, context, admitted.status());
  auto ticket = std::make_shared<AdmissionTicket>(*std::move(admitted));
  // Listed on a reads thread (in cluster mode the placements may be read
  // from the cluster), then parked while a model of the page is still to
  // learn what it acknowledged. Parked, it keeps its place among the
  // server's reads in flight: it has no model's share to count in.
  reads_->Post([this, context, request, response, reactor, ticket,
                rights = *std::move(rights),
                answer_by = FiguresAnswerBy(CallDeadline(*context))] {
    std::vector<ModelRead> here;
    if (absl::Status listed =
            List(rights, *request, answer_by, response, &here);
        !listed.ok()) {
      FinishRead(reactor, context, *ticket, [&] { return listed; });
      return;
    }
    std::vector<ModelRead> page = here;
    PostRead(*reads_,
             {.reads = std::move(here),
              .abandoned = [context] { return context->IsCancelled(); },
              .answer =
                  [reactor, context, ticket, response, page = std::move(page)] {
                    FinishRead(reactor, context, *ticket, [&] {
                      for (const ModelRead& read : page) {
                        ModelToWire(*read.model, read.after,
                                    response->add_models());
                      }
                      return absl::OkStatus();
                    });
                  }});
  });
}

void ModelService::DeleteModel(grpc::ServerContext* context,
                               const v1::DeleteModelRequest* request,
                               v1::DeleteModelResponse* /*response*/,
                               UnaryReactor* reactor) {
  // Off the completion queue's thread: the delete is logged (in cluster
  // mode, through the cluster's log) before the answer.
  reads_->Post([this, context, request, reactor] {
    absl::Status status = access_->AuthorizeModel(*context, request->name(),
                                                  "name", Permission::kAdmin);
    if (status.ok() && cluster_mode_) {
      absl::StatusOr<ClusterNode*> cluster = Cluster();
      status =
          cluster.ok() ? (*cluster)->Delete(request->name()) : cluster.status();
    } else if (status.ok()) {
      status = registry_->Delete(request->name());
    }
    if (status.ok()) {
      spdlog::info("event=model_deleted model={}", request->name());
    }
    Answer(reactor, context, status);
  });
}

void ModelService::GetMetric(grpc::ServerContext* context,
                             const v1::GetMetricRequest* request,
                             v1::MetricReport* response,
                             UnaryReactor* reactor) {
  AnswerFigures(context, reactor, request->name(),
                [response](const HostedModel& model, const ReadAfter& figures) {
                  MetricToWire(model, figures, response);
                });
}

RefitReactor* ModelService::Refit(RefitReactor::Call* call,
                                  const v1::RefitRequest* request) {
  absl::StatusOr<std::shared_ptr<HostedModel>> hosted =
      FindAuthorized(*call->context(), request->name(), Permission::kAdmin);
  return new RefitReactor(call, std::move(hosted),
                          CallDeadline(*call->context()));
}

void ModelService::Listen(CompletionQueueThread* thread) {
  using Async = v1::ModelService::AsyncService;
  Async* async = &async_;
  auto unary = [this](auto handler) {
    return [this, handler](grpc::ServerContext* context, const auto* request,
                           auto* response, UnaryReactor* reactor) {
      (this->*handler)(context, request, response, reactor);
    };
  };
  ListenForCalls(thread, async, &Async::RequestCreateModel,
                 unary(&ModelService::CreateModel));
  ListenForCalls(thread, async, &Async::RequestGetModel,
                 unary(&ModelService::GetModel));
  ListenForCalls(thread, async, &Async::RequestListModels,
                 unary(&ModelService::ListModels));
  ListenForCalls(thread, async, &Async::RequestDeleteModel,
                 unary(&ModelService::DeleteModel));
  ListenForCalls(thread, async, &Async::RequestGetMetric,
                 unary(&ModelService::GetMetric));
  ListenForCalls(
      thread, async, &Async::RequestRefit,
      [this](RefitReactor::Call* call, const v1::RefitRequest* request) {
        return Refit(call, request);
      });
}

}  // namespace streamreg
