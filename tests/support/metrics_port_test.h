#ifndef STREAMREG_TESTS_SUPPORT_METRICS_PORT_TEST_H_
#define STREAMREG_TESTS_SUPPORT_METRICS_PORT_TEST_H_

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "client/lib/client.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "server/rpc/server.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/test_server.h"

namespace streamreg {

// The fixture of tests that read a server's HTTP port (/metrics, the
// status page): an in-process server with that port on a free loopback
// port, a client of it, and GET over HTTP.
class MetricsPortTest : public ::testing::Test {
 protected:
  // `options`' metrics_listen is set to a free loopback port.
  void StartServer(ServerOptions options = {}) {
    scratch_ = FreshDirectory();
    options.metrics_listen = "127.0.0.1:0";
    options.drain_timeout = absl::Seconds(1);
    ASSERT_NO_FATAL_FAILURE(
        StartTestServer(std::move(options), scratch_ + "/data", &server_));
    client_ = std::make_unique<Client>(TestClientOptions(*server_));
  }

  void TearDown() override {
    client_.reset();
    server_.reset();
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }

  httplib::Result Get(const std::string& path) {
    const std::string address = server_->metrics_address();
    httplib::Client http("127.0.0.1",
                         std::stoi(address.substr(address.rfind(':') + 1)));
    return http.Get(path);
  }

  std::string scratch_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_METRICS_PORT_TEST_H_
