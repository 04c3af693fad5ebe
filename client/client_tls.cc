#include "client/client_tls.h"

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "common/file_contents.h"

// The TLS flags of every client program (the CLI, the robot simulator).
ABSL_FLAG(std::string, tls_ca, "",
          "connect with TLS, trusting the CA certificates in this PEM file");
ABSL_FLAG(std::string, tls_cert, "",
          "connect with TLS presenting this PEM certificate (mutual TLS; "
          "with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");

namespace streamreg {

absl::StatusOr<ClientTls> ClientTlsFromFlags() {
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key: give both or neither");
  }
  ClientTls tls;
  tls.enabled = !ca.empty() || !cert.empty();
  if (absl::Status status =
          ReadFlagFiles({{ca, "--tls_ca", &tls.root_certs_pem},
                         {cert, "--tls_cert", &tls.cert_chain_pem},
                         {key, "--tls_key", &tls.private_key_pem}});
      !status.ok()) {
    return status;
  }
  return tls;
}

}  // namespace streamreg
