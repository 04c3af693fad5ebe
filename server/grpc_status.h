#ifndef STREAMREG_SERVER_GRPC_STATUS_H_
#define STREAMREG_SERVER_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/support/status.h"

namespace streamreg {

// The gRPC status of an engine status (the codes are the same canonical
// codes).
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// The same status with "prefix: " before its message (where in a stream
// the error happened).
inline absl::Status Prefixed(const absl::Status& status,
                             absl::string_view prefix) {
  return absl::Status(status.code(),
                      absl::StrCat(prefix, ": ", status.message()));
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_GRPC_STATUS_H_
