#include "server/rpc/ping_stream_reactor.h"

#include "server/rpc/grpc_status.h"

namespace streamreg {

PingStreamReactor::PingStreamReactor(Call* call,
                                     const absl::Status& authentication)
    : StreamReactor(call), context_(call->context()) {
  if (!authentication.ok()) {
    Finish(ToGrpcStatus(authentication));
    return;
  }
  StartRead(&request_);
}

void PingStreamReactor::OnReadDone(bool ok) {
  if (!ok) {
    Finish(StreamEndStatus(context_));
    return;
  }
  StartWrite(&response_);
}

void PingStreamReactor::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(StreamEndStatus(context_, /*write_failed=*/true));
    return;
  }
  StartRead(&request_);
}

}  // namespace streamreg
