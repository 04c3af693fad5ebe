#ifndef STREAMREG_SERVER_CMD_SERVER_FLAGS_H_
#define STREAMREG_SERVER_CMD_SERVER_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/rpc/server_options.h"

ABSL_DECLARE_FLAG(std::string, log_level);
ABSL_DECLARE_FLAG(std::string, log_format);
ABSL_DECLARE_FLAG(std::string, auth_tokens);

namespace streamreg {

// streamreg-server's flags (defined in server_flags.cc) as the options the
// Server starts with: the values checked (CheckServerOptions), the files
// they name (TLS, --auth_tokens) read. Errors name the flag.
absl::StatusOr<ServerOptions> ServerOptionsFromFlags();

// OK if every value of `options` that a flag sets is in its range, or
// INVALID_ARGUMENT naming the flag: "--max_message_bytes: must be 1024 to
// 2147483647, got 0".
absl::Status CheckServerOptions(const ServerOptions& options);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CMD_SERVER_FLAGS_H_
