#ifndef STREAMREG_SERVER_RPC_LISTENING_CREDENTIALS_H_
#define STREAMREG_SERVER_RPC_LISTENING_CREDENTIALS_H_

#include <memory>

#include "grpcpp/security/server_credentials.h"
#include "server/rpc/server_options.h"

namespace streamreg {

// The credentials of the listening port: plaintext, TLS, or mutual TLS
// (clients must present a certificate the client CA signed) — see
// ServerTls.
std::shared_ptr<grpc::ServerCredentials> ListeningCredentials(
    const ServerTls& tls);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_LISTENING_CREDENTIALS_H_
