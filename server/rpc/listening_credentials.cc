#include "server/rpc/listening_credentials.h"

namespace streamreg {

std::shared_ptr<grpc::ServerCredentials> ListeningCredentials(
    const ServerTls& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      tls.client_ca_pem.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.client_ca_pem;
  options.pem_key_cert_pairs.push_back(
      {tls.private_key_pem, tls.cert_chain_pem});
  return grpc::SslServerCredentials(options);
}

}  // namespace streamreg
