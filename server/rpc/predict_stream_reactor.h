#ifndef STREAMREG_SERVER_RPC_PREDICT_STREAM_REACTOR_H_
#define STREAMREG_SERVER_RPC_PREDICT_STREAM_REACTOR_H_

#include "grpcpp/grpcpp.h"
#include "server/rpc/access_control.h"
#include "server/rpc/model_stream.h"
#include "streamreg/v1/regression_service.pb.h"

namespace streamreg {

// Answers a PredictRequest: the predictions of every query, all or
// nothing. Runs on the caller's thread (reads never wait for writes).
absl::Status AnswerPredict(const HostedModel& model,
                           const v1::PredictRequest& request,
                           v1::PredictResponse* response);

// One PredictStream call: answers each request in order, on gRPC's thread,
// reading the next once the answer is written. A bad request ends the call
// with its error. Deletes itself when done.
class PredictStreamReactor final
    : public grpc::ServerBidiReactor<v1::PredictRequest, v1::PredictResponse> {
 public:
  PredictStreamReactor(grpc::CallbackServerContext* context,
                       const ModelRegistry* registry,
                       const AccessControl* access);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  grpc::CallbackServerContext* context_;
  ModelStream stream_;
  v1::PredictRequest request_;
  v1::PredictResponse response_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_PREDICT_STREAM_REACTOR_H_
