#ifndef STREAMREG_CLIENT_LIB_CLIENT_TLS_H_
#define STREAMREG_CLIENT_LIB_CLIENT_TLS_H_

#include <string>

namespace streamreg {

// How a client reaches a server over TLS, as PEM text. root_certs_pem: the
// CA that signed the server's certificate (empty: the system's roots);
// cert_chain_pem and private_key_pem: the client's own certificate, for a
// server that requires mutual TLS. Disabled: plaintext.
struct ClientTls {
  bool enabled = false;
  std::string root_certs_pem;
  std::string cert_chain_pem;
  std::string private_key_pem;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_CLIENT_TLS_H_
