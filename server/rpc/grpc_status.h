#ifndef STREAMREG_SERVER_RPC_GRPC_STATUS_H_
#define STREAMREG_SERVER_RPC_GRPC_STATUS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "server/hosting/admission_gate.h"

namespace streamreg {

// The gRPC status of an engine status (the codes are the same canonical
// codes).
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// The same as ToGrpcStatus, and for a refusal that carries a retry hint
// (an overloaded server's RESOURCE_EXHAUSTED) the standard trailer
// grpc-retry-pushback-ms, which gRPC's retrying clients honour.
inline grpc::Status ToGrpcStatus(const absl::Status& status,
                                 grpc::ServerContextBase& context) {
  if (const std::optional<absl::Duration> wait = RetryAfter(status)) {
    context.AddTrailingMetadata("grpc-retry-pushback-ms",
                                absl::StrCat(absl::ToInt64Milliseconds(*wait)));
  }
  return ToGrpcStatus(status);
}

// `status` with another message, keeping its code and payloads (a retry
// hint).
inline absl::Status WithMessage(const absl::Status& status,
                                absl::string_view message) {
  absl::Status out(status.code(), message);
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) {
        out.SetPayload(url, payload);
      });
  return out;
}

// How a server reactor ends when its stream ends (a read or write that
// did not complete): OK when the client closed its side, CANCELLED when the
// call was cancelled (deadline, client gone).
inline grpc::Status StreamEndStatus(const grpc::ServerContextBase* context,
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
  if (status.ok()) return status;
  return WithMessage(status, absl::StrCat(prefix, ": ", status.message()));
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_GRPC_STATUS_H_
