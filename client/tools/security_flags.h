#ifndef STREAMREG_CLIENT_TOOLS_SECURITY_FLAGS_H_
#define STREAMREG_CLIENT_TOOLS_SECURITY_FLAGS_H_

#include "absl/status/status.h"
#include "client/lib/client.h"

namespace streamreg {

// The security flags every client program (the CLI, the robot simulator)
// shares, defined in security_flags.cc: --tls_ca, --tls_cert, --tls_key
// (TLS is on when any is given; cert and key go together) and
// --token_file (the bearer token, on the file's first line; without the
// flag, the STREAMREG_TOKEN environment variable). Sets options->tls and
// options->bearer_token from them; errors name the flag and the file.
absl::Status ApplySecurityFlags(ClientOptions* options);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_TOOLS_SECURITY_FLAGS_H_
