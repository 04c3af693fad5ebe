#include "server/rpc/regression_service.h"

#include "server/hosting/parked_read.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/ingest_reactor.h"
#include "server/rpc/learn_reactor.h"
#include "server/rpc/ping_stream_reactor.h"
#include "server/rpc/predict_stream_reactor.h"

namespace streamreg {

grpc::ServerReadReactor<v1::IngestRequest>* RegressionService::Ingest(
    grpc::CallbackServerContext* context, v1::IngestResponse* response) {
  return new IngestReactor(context, registry_, access_, response);
}

grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>*
RegressionService::Learn(grpc::CallbackServerContext* context) {
  return new LearnReactor(context, registry_, access_);
}

grpc::ServerUnaryReactor* RegressionService::Predict(
    grpc::CallbackServerContext* context, const v1::PredictRequest* request,
    v1::PredictResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status status = access_->AuthorizeModel(*context, request->model(),
                                                "model", Permission::kRead);
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      status.ok() ? registry_->Find(request->model()) : status;
  absl::StatusOr<AdmissionTicket> admitted =
      model.ok() ? registry_->AdmitPrediction(**model) : model.status();
  if (!admitted.ok()) {
    reactor->Finish(ToGrpcStatus(admitted.status(), *context));
    return reactor;
  }
  auto ticket = std::make_shared<AdmissionTicket>(*std::move(admitted));
  const std::shared_ptr<const HostedModel> found = *std::move(model);
  const ReadAfter after =
      found->PinAcknowledged(ReadAfterFor(*request, CallDeadline(*context)));
  PostRead(*predictions_,
           {.reads = {{found, after}},
            .abandoned = [context] { return context->IsCancelled(); },
            .parked = [this, ticket] { registry_->ParkRead(*ticket); },
            .answer =
                [reactor, context, request, response, ticket, found, after] {
                  // A call cancelled while its read was parked does not
                  // wait for learning on a thread now.
                  const absl::Status answered =
                      context->IsCancelled()
                          ? absl::CancelledError("call cancelled")
                          : AnswerPredict(*found, *request, after, response);
                  ticket->Release();
                  reactor->Finish(ToGrpcStatus(answered, *context));
                },
            .answer_here_if_at_once = request->queries_size() == 1});
  return reactor;
}

grpc::ServerBidiReactor<v1::PredictRequest, v1::PredictResponse>*
RegressionService::PredictStream(grpc::CallbackServerContext* context) {
  return new PredictStreamReactor(context, registry_, access_, predictions_);
}

grpc::ServerUnaryReactor* RegressionService::Ping(
    grpc::CallbackServerContext* context, const v1::PingRequest* /*request*/,
    v1::PingResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(access_->Authenticate(*context).status()));
  return reactor;
}

grpc::ServerBidiReactor<v1::PingRequest, v1::PingResponse>*
RegressionService::PingStream(grpc::CallbackServerContext* context) {
  return new PingStreamReactor(context,
                               access_->Authenticate(*context).status());
}

}  // namespace streamreg
