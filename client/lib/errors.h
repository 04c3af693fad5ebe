#ifndef STREAMREG_CLIENT_LIB_ERRORS_H_
#define STREAMREG_CLIENT_LIB_ERRORS_H_

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

// absl::Status of a gRPC status (same canonical code).
absl::Status FromGrpcStatus(const grpc::Status& status);
// The same, keeping the server's retry hint from the call's trailers
// (RetryAfter).
absl::Status FromGrpcStatus(const grpc::Status& status,
                            const grpc::ClientContext& context);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_ERRORS_H_
