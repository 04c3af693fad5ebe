#ifndef STREAMREG_SERVER_RPC_PING_STREAM_REACTOR_H_
#define STREAMREG_SERVER_RPC_PING_STREAM_REACTOR_H_

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/async_stream_call.h"
#include "streamreg/v1/regression_service.pb.h"

namespace streamreg {

// One PingStream call: answers each request at once, in order, with the
// same read → write rhythm as PredictStream (the streaming baseline of
// `streamreg bench`). Deletes itself when done.
class PingStreamReactor final
    : public BidiReactor<v1::PingRequest, v1::PingResponse> {
 public:
  // Ends at once with `authentication` if it is not OK.
  PingStreamReactor(Call* call, const absl::Status& authentication);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  grpc::ServerContext* const context_;
  v1::PingRequest request_;
  v1::PingResponse response_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_PING_STREAM_REACTOR_H_
