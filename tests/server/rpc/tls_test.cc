// TLS and mutual TLS between the server and the client library, with a test
// CA, server and client certificates made here by Debian's openssl: a TLS
// server answers only clients that trust its CA; a mutual-TLS server answers
// only clients whose certificate its client CA signed.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "common/file_contents.h"
#include "gtest/gtest.h"
#include "server/rpc/server.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

// Runs a shell command in `directory`; fails the test if it fails.
void Run(const std::string& directory, const std::string& command) {
  const std::string line =
      absl::StrCat("cd '", directory, "' && (", command, ") >/dev/null 2>&1");
  ASSERT_EQ(std::system(line.c_str()), 0) << line;
}

// A CA (NAME.pem, NAME.key) and certificates it signs.
class TestCertificates {
 public:
  explicit TestCertificates(std::string directory)
      : directory_(std::move(directory)) {}

  void MakeCa(const std::string& name) {
    Run(directory_,
        absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
                     "-subj /CN=",
                     name, " -keyout ", name, ".key -out ", name, ".pem"));
  }

  // NAME.pem / NAME.key signed by `ca`, for a server on 127.0.0.1 or
  // localhost, or for a client.
  void MakeSigned(const std::string& name, const std::string& ca, bool server) {
    Run(directory_, absl::StrCat("printf '",
                                 server ? "subjectAltName=DNS:localhost,IP:127."
                                          "0.0.1\\nextendedKeyUsage=serverAuth"
                                        : "extendedKeyUsage=clientAuth",
                                 "\\n' > ", name,
                                 ".ext && openssl req -newkey rsa:2048 "
                                 "-nodes -subj /CN=",
                                 name, " -keyout ", name, ".key -out ", name,
                                 ".csr && openssl x509 -req -days 2 -in ", name,
                                 ".csr -CA ", ca, ".pem -CAkey ", ca,
                                 ".key -CAcreateserial -extfile ", name,
                                 ".ext -out ", name, ".pem"));
  }

  std::string Pem(const std::string& file) const {
    absl::StatusOr<std::string> contents =
        ReadFileContents(absl::StrCat(directory_, "/", file), "test");
    EXPECT_TRUE(contents.ok()) << contents.status();
    return contents.ok() ? *contents : "";
  }

 private:
  std::string directory_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = FreshDirectory();
    certificates_ = std::make_unique<TestCertificates>(scratch_);
    certificates_->MakeCa("ca");
    certificates_->MakeCa("other-ca");
    certificates_->MakeSigned("server", "ca", /*server=*/true);
    certificates_->MakeSigned("robot", "ca", /*server=*/false);
    certificates_->MakeSigned("intruder", "other-ca", /*server=*/false);
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(scratch_);
  }

  void StartServer(bool mutual) {
    ServerOptions options;
    options.drain_timeout = absl::Seconds(1);
    options.tls.cert_chain_pem = certificates_->Pem("server.pem");
    options.tls.private_key_pem = certificates_->Pem("server.key");
    if (mutual) options.tls.client_ca_pem = certificates_->Pem("ca.pem");
    StartTestServer(std::move(options), scratch_ + "/data", &server_);
  }

  // A client trusting `ca` (none: plaintext), presenting `identity`'s
  // certificate if given.
  std::unique_ptr<Client> ClientWith(const std::string& ca,
                                     const std::string& identity = "") {
    ClientOptions options;
    options.address = server_->address();
    options.timeout = absl::Seconds(5);
    options.retry.max_attempts = 1;
    if (!ca.empty()) {
      options.tls.enabled = true;
      options.tls.root_certs_pem = certificates_->Pem(ca + ".pem");
    }
    if (!identity.empty()) {
      options.tls.cert_chain_pem = certificates_->Pem(identity + ".pem");
      options.tls.private_key_pem = certificates_->Pem(identity + ".key");
    }
    return std::make_unique<Client>(options);
  }

  std::string scratch_;
  std::unique_ptr<TestCertificates> certificates_;
  std::unique_ptr<Server> server_;
};

TEST_F(TlsTest, ATlsServerAnswersOnlyClientsThatTrustItsCa) {
  StartServer(/*mutual=*/false);
  absl::StatusOr<std::string> health = ClientWith("ca")->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");
  EXPECT_TRUE(ClientWith("ca")->ListModels().ok());
  // Plaintext to a TLS port, and TLS with a CA that did not sign the
  // server's certificate: no connection.
  EXPECT_EQ(ClientWith("")->Health().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ClientWith("other-ca")->Health().status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, AMutualTlsServerAnswersOnlyClientsItsCaCertified) {
  StartServer(/*mutual=*/true);
  absl::StatusOr<std::string> health = ClientWith("ca", "robot")->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");
  EXPECT_EQ(ClientWith("ca")->Health().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ClientWith("ca", "intruder")->Health().status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, ACertificateThatIsNotPemIsRefusedAtStart) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = scratch_ + "/data";
  options.tls.cert_chain_pem = "not a certificate";
  options.tls.private_key_pem = "not a key";
  const absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(std::move(options));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("TLS"), std::string::npos)
      << server.status();
}

}  // namespace
}  // namespace streamreg
