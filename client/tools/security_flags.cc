#include "client/tools/security_flags.h"

#include <cstdlib>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file_contents.h"

ABSL_FLAG(std::string, tls_ca, "",
          "connect with TLS, trusting the CA certificates in this PEM file");
ABSL_FLAG(std::string, tls_cert, "",
          "connect with TLS presenting this PEM certificate (mutual TLS; "
          "with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, token_file, "",
          "file whose first line is the bearer token to present (default: "
          "the STREAMREG_TOKEN environment variable, if set)");

namespace streamreg {
namespace {

absl::StatusOr<ClientTls> TlsFromFlags() {
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

absl::StatusOr<std::string> BearerTokenFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_token_file);
  if (path.empty()) {
    const char* from_environment = std::getenv("STREAMREG_TOKEN");
    return std::string(from_environment == nullptr ? "" : from_environment);
  }
  absl::StatusOr<std::string> contents = ReadFileContents(path, "--token_file");
  if (!contents.ok()) return contents.status();
  const std::string token(absl::StripAsciiWhitespace(
      absl::string_view(*contents).substr(0, contents->find('\n'))));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token_file ", path, ": the first line is empty"));
  }
  return token;
}

}  // namespace

absl::Status ApplySecurityFlags(ClientOptions* options) {
  absl::StatusOr<ClientTls> tls = TlsFromFlags();
  if (!tls.ok()) return tls.status();
  absl::StatusOr<std::string> token = BearerTokenFromFlags();
  if (!token.ok()) return token.status();
  options->tls = *std::move(tls);
  options->bearer_token = *std::move(token);
  return absl::OkStatus();
}

}  // namespace streamreg
