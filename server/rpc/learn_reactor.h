#ifndef STREAMREG_SERVER_RPC_LEARN_REACTOR_H_
#define STREAMREG_SERVER_RPC_LEARN_REACTOR_H_

#include <memory>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "server/hosting/learn_batcher.h"
#include "server/rpc/access_control.h"
#include "server/rpc/model_stream.h"
#include "streamreg/v1/regression_service.pb.h"

namespace streamreg {

// One Learn call, the robot's loop: for each message, on the model's write
// queue (grouped with other streams' messages, see LearnBatcher), logs the
// sample, predicts it and answers with that prediction, the sample's
// sequence number and how stale the prediction was; the sample is learned
// right after, off the response path. The next message is read once the
// answer is written. A bad sample ends the call with its error
// (the samples before it stay learned); a sample beyond the model's or the
// server's limit on queued samples ends it at once with
// RESOURCE_EXHAUSTED and a retry hint. Deletes itself when done.
class LearnReactor final
    : public grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse> {
 public:
  LearnReactor(grpc::CallbackServerContext* context,
               const ModelRegistry* registry, const AccessControl* access);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  // The answer to the current message, on the model's write queue.
  void Answer(LearnBatcher::Result result);

  grpc::CallbackServerContext* context_;
  ModelStream stream_;
  v1::LearnRequest request_;
  v1::LearnResponse response_;
  // The current sample, admitted until it is answered.
  AdmissionTicket admitted_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_LEARN_REACTOR_H_
