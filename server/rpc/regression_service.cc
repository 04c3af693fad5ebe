#include "server/rpc/regression_service.h"

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
  absl::Status status = access_->AuthorizeModel(*context, request->model(),
                                                "model", Permission::kRead);
  if (status.ok()) {
    absl::StatusOr<std::shared_ptr<HostedModel>> model =
        registry_->Find(request->model());
    absl::StatusOr<AdmissionTicket> admitted =
        model.ok() ? registry_->AdmitPrediction(**model) : model.status();
    status = admitted.ok() ? AnswerPredict(**model, *request, response)
                           : admitted.status();
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status, *context));
  return reactor;
}

grpc::ServerBidiReactor<v1::PredictRequest, v1::PredictResponse>*
RegressionService::PredictStream(grpc::CallbackServerContext* context) {
  return new PredictStreamReactor(context, registry_, access_);
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
