#ifndef STREAMREG_SERVER_RPC_GRPC_STATUS_H_
#define STREAMREG_SERVER_RPC_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace streamreg {

// The gRPC status of an engine status (the codes are the same canonical
// codes).
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// How a server reactor ends when its stream ends (a read or write that
// did not complete): OK when the client closed its side, CANCELLED when the
// call was cancelled (deadline, client gone).
inline grpc::Status StreamEndStatus(grpc::CallbackServerContext* context,
                                    bool write_failed = false) {
  if (write_failed || context->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
  }
  return grpc::Status::OK;
}

// The same status with "prefix: " before its message (where in a stream
// the error happened).
inline absl::Status Prefixed(const absl::Status& status,
                             absl::string_view prefix) {
  return absl::Status(status.code(),
                      absl::StrCat(prefix, ": ", status.message()));
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_GRPC_STATUS_H_
