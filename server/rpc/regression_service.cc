#include "server/rpc/regression_service.h"

#include "server/hosting/parked_read.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/ingest_reactor.h"
#include "server/rpc/learn_reactor.h"
#include "server/rpc/listen_for_calls.h"
#include "server/rpc/ping_stream_reactor.h"
#include "server/rpc/predict_stream_reactor.h"

namespace streamreg {

void RegressionService::Predict(grpc::ServerContext* context,
                                const v1::PredictRequest* request,
                                v1::PredictResponse* response,
                                UnaryReactor* reactor) {
  absl::Status status = access_->AuthorizeModel(*context, request->model(),
                                                "model", Permission::kRead);
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      status.ok() ? registry_->Find(request->model()) : status;
  absl::StatusOr<AdmissionTicket> admitted =
      model.ok() ? registry_->AdmitPrediction(**model) : model.status();
  if (!admitted.ok()) {
    reactor->Finish(ToGrpcStatus(admitted.status(), *context));
    return;
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
}

void RegressionService::Ping(grpc::ServerContext* context,
                             UnaryReactor* reactor) {
  reactor->Finish(ToGrpcStatus(access_->Authenticate(*context).status()));
}

void RegressionService::Listen(CompletionQueueThread* thread) {
  using Async = v1::RegressionService::AsyncService;
  Async* async = &async_;
  ListenForCalls(
      thread, async, &Async::RequestIngest,
      [this](IngestReactor::Call* call, v1::IngestResponse* response) {
        return new IngestReactor(call, registry_, access_, response);
      });
  ListenForCalls(thread, async, &Async::RequestLearn,
                 [this](LearnReactor::Call* call) {
                   return new LearnReactor(call, registry_, access_);
                 });
  ListenForCalls(
      thread, async, &Async::RequestPredict,
      [this](grpc::ServerContext* context, const v1::PredictRequest* request,
             v1::PredictResponse* response, UnaryReactor* reactor) {
        Predict(context, request, response, reactor);
      });
  ListenForCalls(thread, async, &Async::RequestPredictStream,
                 [this](PredictStreamReactor::Call* call) {
                   return new PredictStreamReactor(call, registry_, access_,
                                                   predictions_);
                 });
  ListenForCalls(
      thread, async, &Async::RequestPing,
      [this](grpc::ServerContext* context, const v1::PingRequest* /*request*/,
             v1::PingResponse* /*response*/,
             UnaryReactor* reactor) { Ping(context, reactor); });
  ListenForCalls(thread, async, &Async::RequestPingStream,
                 [this](PingStreamReactor::Call* call) {
                   return new PingStreamReactor(
                       call, access_->Authenticate(*call->context()).status());
                 });
}

}  // namespace streamreg
