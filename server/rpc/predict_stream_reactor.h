#ifndef STREAMREG_SERVER_RPC_PREDICT_STREAM_REACTOR_H_
#define STREAMREG_SERVER_RPC_PREDICT_STREAM_REACTOR_H_

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/hosting/read_after.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/access_control.h"
#include "server/rpc/async_stream_call.h"
#include "server/rpc/model_stream.h"
#include "streamreg/v1/regression_service.pb.h"

namespace streamreg {

// Answers a PredictRequest: the predictions of every query, all or
// nothing, once what the request asks to read after (min_learned, or what
// this server acknowledged before) is learned, waiting for it until the
// call's `deadline` (HostedModel::Predict); runs on the caller's thread.
// What a PredictRequest waits for before its model predicts (min_learned,
// or what was acknowledged), until `deadline`.
ReadAfter ReadAfterFor(const v1::PredictRequest& request, absl::Time deadline);
absl::Status AnswerPredict(const HostedModel& model,
                           const v1::PredictRequest& request,
                           const ReadAfter& after,
                           v1::PredictResponse* response);

// One PredictStream call: answers each request in order, on the
// `predictions` pool, or on gRPC's thread a request of one query that
// need not wait (PostRead; admitted first: past the limits on predictions
// in flight the call ends at once with RESOURCE_EXHAUSTED), reading the next
// once the answer is written. A bad request ends the call with its error.
// Deletes itself when done.
class PredictStreamReactor final
    : public BidiReactor<v1::PredictRequest, v1::PredictResponse> {
 public:
  PredictStreamReactor(Call* call, const ModelRegistry* registry,
                       const AccessControl* access, WorkerPool* predictions);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  // On the predictions pool (or gRPC's thread): answers request_, then
  // writes or finishes.
  void Answer(const HostedModel& model, const ReadAfter& after);

  grpc::ServerContext* const context_;
  WorkerPool* predictions_;
  ModelStream stream_;
  v1::PredictRequest request_;
  v1::PredictResponse response_;
  // The current request, admitted until it is answered.
  AdmissionTicket admitted_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_PREDICT_STREAM_REACTOR_H_
